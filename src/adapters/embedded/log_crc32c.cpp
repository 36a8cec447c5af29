#include "adapters/embedded/log_crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace starling::adapters::embedded {

namespace {

constexpr std::uint32_t polynomial = 0x82f63b78U;  // reflected Castagnoli

constexpr std::array<std::uint32_t, 256> make_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 1U) != 0 ? (crc >> 1) ^ polynomial : crc >> 1;
        }
        table[i] = crc;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> table = make_table();

std::uint32_t crc32c_table(std::uint32_t crc, const unsigned char* data, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i) {
        crc = table[(crc ^ data[i]) & 0xffU] ^ (crc >> 8);
    }
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::uint32_t crc,
                                                             const unsigned char* data,
                                                             std::size_t size) {
    std::uint64_t wide = crc;
    while (size >= 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, data, 8);
        wide = _mm_crc32_u64(wide, word);
        data += 8;
        size -= 8;
    }
    auto narrow = static_cast<std::uint32_t>(wide);
    while (size > 0) {
        narrow = _mm_crc32_u8(narrow, *data);
        ++data;
        --size;
    }
    return narrow;
}

bool cpu_has_sse42() {
    static const bool has = __builtin_cpu_supports("sse4.2") != 0;
    return has;
}
#endif

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
#if defined(__x86_64__)
    if (cpu_has_sse42()) {
        return ~crc32c_sse42(~0U, bytes, size);
    }
#endif
    return ~crc32c_table(~0U, bytes, size);
}

}  // namespace starling::adapters::embedded
