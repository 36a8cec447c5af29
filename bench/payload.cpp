#include "bench/payload.h"

#include <time.h>

#include <cstring>

namespace starling::bench {

namespace {

template <class T>
void put_le(char* out, T value) noexcept {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out[i] = static_cast<char>(static_cast<std::uint8_t>(value >> (8 * i)));
    }
}

template <class T>
T get_le(const char* in) noexcept {
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        value |= static_cast<T>(static_cast<T>(static_cast<std::uint8_t>(in[i])) << (8 * i));
    }
    return value;
}

}  // namespace

void write_header(char* out, const payload_header& header) noexcept {
    put_le<std::uint32_t>(out, payload_magic);
    put_le<std::uint32_t>(out + 4, header.run_id);
    put_le<std::uint32_t>(out + 8, header.step);
    put_le<std::uint32_t>(out + 12, header.publisher);
    put_le<std::uint64_t>(out + 16, header.sequence);
    put_le<std::uint64_t>(out + 24, header.send_ns);
}

void write_header(std::span<std::uint8_t> out, const payload_header& header) noexcept {
    write_header(reinterpret_cast<char*>(out.data()), header);
}

std::optional<payload_header> read_header(const char* data, std::size_t size) noexcept {
    if (size < header_size || get_le<std::uint32_t>(data) != payload_magic) {
        return std::nullopt;
    }
    payload_header h;
    h.run_id = get_le<std::uint32_t>(data + 4);
    h.step = get_le<std::uint32_t>(data + 8);
    h.publisher = get_le<std::uint32_t>(data + 12);
    h.sequence = get_le<std::uint64_t>(data + 16);
    h.send_ns = get_le<std::uint64_t>(data + 24);
    return h;
}

std::optional<payload_header> read_header(std::span<const std::uint8_t> payload) noexcept {
    return read_header(reinterpret_cast<const char*>(payload.data()), payload.size());
}

std::uint64_t monotonic_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace starling::bench
