#pragma once

// CRC32C (Castagnoli), the checksum of every record frame and offsets-journal entry of the
// embedded log. Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run
// time, so the binary needs no -msse4.2) and a table otherwise. Thread-safe, no state.

#include <cstddef>
#include <cstdint>

namespace starling::adapters::embedded {

// CRC32C of `size` bytes (initial value and final xor per RFC 3720).
std::uint32_t crc32c(const void* data, std::size_t size);

}  // namespace starling::adapters::embedded
