#pragma once

// On-disk encoding of the embedded log: frames and records (the README's "File format" section
// is the reference; keep the two in step). Every integer has an explicit width and is
// little-endian.
//
//   frame  := u32 body_length | u32 crc32c(body) | body
//   record body (version 1) :=
//       u8 version (=1) | u8 attributes (=0) | i64 offset | i64 timestamp_ms
//       | u32 key_length | u32 value_length | u32 header_count
//       | key | value | header_count * (u32 name_length | u32 value_length | name | value)
//
// A frame is valid when its length is within bounds and its CRC matches; anything else at the
// tail of a segment is a torn write and is truncated at recovery. The offsets journal uses the
// same frame with its own body (log_offset_store.h).
//
// Pure functions, no state: safe from any thread.

#include "starling/message_log.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace starling::adapters::embedded::log_format {

inline constexpr std::size_t frame_header_bytes = 8;
inline constexpr std::size_t record_fixed_bytes = 30;
inline constexpr std::uint8_t record_version = 1;
// Hard bound on a frame body, independent of configuration, so a garbage length read from a
// torn tail is rejected before anything is allocated for it.
inline constexpr std::uint32_t max_frame_body = 1U << 30;

inline void put_u16(char* p, std::uint16_t v) {
    p[0] = static_cast<char>(v & 0xffU);
    p[1] = static_cast<char>(v >> 8);
}
inline void put_u32(char* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<char>((v >> (8 * i)) & 0xffU);
    }
}
inline void put_u64(char* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = static_cast<char>((v >> (8 * i)) & 0xffU);
    }
}
inline std::uint16_t get_u16(const char* p) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(p[0]) |
                                      (static_cast<unsigned char>(p[1]) << 8));
}
inline std::uint32_t get_u32(const char* p) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return v;
}
inline std::uint64_t get_u64(const char* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return v;
}

// Reserves a frame header at the end of `out` and returns its position; the caller appends the
// body and then calls finish_frame() with that position.
std::size_t begin_frame(std::string& out);
void finish_frame(std::string& out, std::size_t frame_start);

// Bytes one record takes on disk, frame header included.
std::size_t record_frame_size(std::string_view key, std::string_view value,
                              const std::vector<log_header>& headers);

// Appends one framed record to `out`.
void append_record(std::string& out, std::int64_t offset, std::int64_t timestamp_ms,
                   std::string_view key, std::string_view value,
                   const std::vector<log_header>& headers);

// A record decoded in place: the views point into the buffer that was parsed.
struct record_view {
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = 0;
    std::string_view key;
    std::string_view value;
    std::uint32_t header_count = 0;
    std::string_view headers;  // header_count encoded (name, value) pairs
};

enum class parse_status : std::uint8_t {
    ok,          // a whole valid frame: `frame_size` bytes
    incomplete,  // more bytes needed; `frame_size` is the whole frame's size when known, else 0
    corrupt,     // bad length, CRC mismatch or malformed body
};

// Checks the frame at the start of data[0, size) (length bound, CRC) and returns its body.
parse_status parse_frame(const char* data, std::size_t size, std::string_view& body,
                         std::size_t& frame_size);

// parse_frame() plus decoding of a record body.
parse_status parse_record(const char* data, std::size_t size, record_view& record,
                          std::size_t& frame_size);

// Copies a view into a port record (topic and partition are the caller's).
void materialize(const record_view& view, log_record& out);

}  // namespace starling::adapters::embedded::log_format
