#pragma once

// Internal to the codec: the MQTT data representations (MQTT 5.0 section 1.5) — big-endian
// integers, Variable Byte Integers, length-prefixed strings and binary data — read from a
// bounded byte range and appended to a std::string. Not part of the public API.
//
// reader never throws and never reads past its end: every read returns false on failure and
// records the reason code and a static detail string, which the decoder turns into a
// decode_error. Reads are inline so the hot path has no per-byte calls.

#include "base/assert.h"
#include "mqtt/protocol_version.h"
#include "mqtt/reason_code.h"
#include "mqtt/utf8.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace starling::mqtt {
enum class decoder_role : std::uint8_t;
}

namespace starling::mqtt::detail {

inline constexpr std::uint32_t max_varint = 268'435'455;
inline constexpr std::size_t max_string = 65'535;

constexpr std::size_t varint_size(std::uint32_t value) noexcept {
    if (value < 128) {
        return 1;
    }
    if (value < 16'384) {
        return 2;
    }
    if (value < 2'097'152) {
        return 3;
    }
    return 4;
}

// Everything a packet body decoder needs to know besides the bytes.
struct decode_context {
    protocol_version version = protocol_version::v5;
    decoder_role role{};
    std::uint8_t flags = 0;  // low nibble of the fixed header
    bool validate_payload_format = false;
};

class reader {
  public:
    reader(const std::uint8_t* data, std::size_t size) noexcept : pos_(data), end_(data + size) {}

    std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - pos_); }
    bool empty() const noexcept { return pos_ == end_; }

    bool u8(std::uint8_t& value) noexcept {
        if (pos_ == end_) {
            return truncated();
        }
        value = *pos_++;
        return true;
    }

    bool u16(std::uint16_t& value) noexcept {
        if (remaining() < 2) {
            return truncated();
        }
        value = static_cast<std::uint16_t>((pos_[0] << 8) | pos_[1]);
        pos_ += 2;
        return true;
    }

    bool u32(std::uint32_t& value) noexcept {
        if (remaining() < 4) {
            return truncated();
        }
        value = (std::uint32_t{pos_[0]} << 24) | (std::uint32_t{pos_[1]} << 16) |
                (std::uint32_t{pos_[2]} << 8) | std::uint32_t{pos_[3]};
        pos_ += 4;
        return true;
    }

    // Variable Byte Integer: at most four bytes, minimal encoding (MQTT-1.5.5-1).
    bool varint(std::uint32_t& value) noexcept {
        std::uint32_t result = 0;
        for (int i = 0; i < 4; ++i) {
            if (pos_ == end_) {
                return truncated();
            }
            std::uint8_t byte = *pos_++;
            result |= std::uint32_t{byte & 0x7Fu} << (7 * i);
            if ((byte & 0x80) == 0) {
                if (byte == 0 && i > 0) {
                    return fail(reason_code::malformed_packet,
                                "variable byte integer not minimally encoded");
                }
                value = result;
                return true;
            }
        }
        return fail(reason_code::malformed_packet, "variable byte integer longer than 4 bytes");
    }

    // Two-byte length then that many bytes; no validation.
    bool raw_string(std::string_view& value) noexcept {
        std::uint16_t size = 0;
        if (!u16(size)) {
            return false;
        }
        if (remaining() < size) {
            return truncated();
        }
        value = {reinterpret_cast<const char*>(pos_), size};
        pos_ += size;
        return true;
    }

    // UTF-8 Encoded String (MQTT 5.0 section 1.5.4): validated.
    bool utf8_view(std::string_view& value) noexcept {
        if (!raw_string(value)) {
            return false;
        }
        if (!is_valid_utf8(value)) {
            return fail(reason_code::malformed_packet, "invalid UTF-8 string");
        }
        return true;
    }

    bool utf8(std::string& value) {
        std::string_view view;
        if (!utf8_view(view)) {
            return false;
        }
        value.assign(view);
        return true;
    }

    // Binary Data (MQTT 5.0 section 1.5.6).
    bool binary(std::string& value) {
        std::string_view view;
        if (!raw_string(view)) {
            return false;
        }
        value.assign(view);
        return true;
    }

    // Everything left (a payload).
    void rest(std::string& value) {
        value.assign(reinterpret_cast<const char*>(pos_), remaining());
        pos_ = end_;
    }

    // Records the first failure; always returns false so callers can `return r.fail(...)`.
    bool fail(reason_code code, const char* detail) noexcept {
        if (detail_ == nullptr) {
            code_ = code;
            detail_ = detail;
        }
        return false;
    }

    reason_code error_code() const noexcept { return code_; }
    const char* error_detail() const noexcept { return detail_ != nullptr ? detail_ : ""; }

  private:
    bool truncated() noexcept {
        return fail(reason_code::malformed_packet, "packet shorter than its contents");
    }

    const std::uint8_t* pos_;
    const std::uint8_t* end_;
    reason_code code_ = reason_code::success;
    const char* detail_ = nullptr;
};

// --- writing ---------------------------------------------------------------------------------

inline void put_u8(std::string& out, std::uint8_t value) {
    out.push_back(static_cast<char>(value));
}

inline void put_u16(std::string& out, std::uint16_t value) {
    const char bytes[2] = {static_cast<char>(value >> 8), static_cast<char>(value & 0xFF)};
    out.append(bytes, 2);
}

inline void put_u32(std::string& out, std::uint32_t value) {
    const char bytes[4] = {static_cast<char>(value >> 24), static_cast<char>((value >> 16) & 0xFF),
                           static_cast<char>((value >> 8) & 0xFF), static_cast<char>(value & 0xFF)};
    out.append(bytes, 4);
}

inline void put_varint(std::string& out, std::uint32_t value) {
    STARLING_ASSERT(value <= max_varint);
    char bytes[4];
    std::size_t n = 0;
    do {
        auto byte = static_cast<std::uint8_t>(value & 0x7F);
        value >>= 7;
        if (value != 0) {
            byte |= 0x80;
        }
        bytes[n++] = static_cast<char>(byte);
    } while (value != 0 && n < 4);
    out.append(bytes, n);
}

// Strings longer than the protocol allows are a caller bug: reported and truncated so the
// packet stays well-formed.
inline std::string_view clamp_string(std::string_view value) {
    STARLING_BUG(value.size() <= max_string, "MQTT string longer than 65535 bytes truncated");
    return value.size() <= max_string ? value : value.substr(0, max_string);
}

inline std::size_t string_size(std::string_view value) noexcept {
    return 2 + (value.size() <= max_string ? value.size() : max_string);
}

inline void put_string(std::string& out, std::string_view value) {
    value = clamp_string(value);
    put_u16(out, static_cast<std::uint16_t>(value.size()));
    out.append(value);
}

// Fixed header: type and flags, then the remaining length.
inline void put_fixed_header(std::string& out, std::uint8_t type, std::uint8_t flags,
                             std::size_t remaining_length) {
    STARLING_BUG(remaining_length <= max_varint, "MQTT packet larger than the protocol allows");
    put_u8(out, static_cast<std::uint8_t>((type << 4) | (flags & 0x0F)));
    put_varint(out, static_cast<std::uint32_t>(remaining_length));
}

constexpr std::size_t packet_size(std::size_t remaining_length) noexcept {
    return 1 + varint_size(static_cast<std::uint32_t>(remaining_length)) + remaining_length;
}

}  // namespace starling::mqtt::detail
