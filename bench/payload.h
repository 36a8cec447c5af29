#pragma once

// The header every benchmark payload starts with, so a receiver can attribute each message to
// its publisher and step, check its sequence number and compute end-to-end latency.
//
//   offset  size  field
//   0       4     magic "SBN1"
//   4       4     run id       (random per run: stale messages of an earlier run are ignored)
//   8       4     step         (the search step the message belongs to)
//   12      4     publisher    (global publisher index)
//   16      8     sequence     (0, 1, 2, ... per publisher and step)
//   24      8     send time    (nanoseconds of CLOCK_MONOTONIC: same clock for every process
//                               on one host, which is where publishers and subscribers run)
//   32      ...   filler up to the payload size
//
// All integers little-endian. The payload size must be at least header_size.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace starling::bench {

inline constexpr std::size_t header_size = 32;
inline constexpr std::uint32_t payload_magic = 0x314e4253;  // "SBN1" read little-endian

struct payload_header {
    std::uint32_t run_id = 0;
    std::uint32_t step = 0;
    std::uint32_t publisher = 0;
    std::uint64_t sequence = 0;
    std::uint64_t send_ns = 0;

    bool operator==(const payload_header&) const = default;
};

// Writes the header into the first header_size bytes of `out` (which must be that large).
void write_header(std::span<std::uint8_t> out, const payload_header& header) noexcept;
void write_header(char* out, const payload_header& header) noexcept;

// nullopt when the payload is too short or the magic does not match (not a benchmark message).
std::optional<payload_header> read_header(std::span<const std::uint8_t> payload) noexcept;
std::optional<payload_header> read_header(const char* data, std::size_t size) noexcept;

// Monotonic clock in nanoseconds, the time base of send_ns.
std::uint64_t monotonic_ns() noexcept;

}  // namespace starling::bench
