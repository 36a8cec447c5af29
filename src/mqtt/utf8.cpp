#include "mqtt/utf8.h"

#include <cstdint>
#include <cstring>

namespace starling::mqtt {

namespace {

constexpr std::uint64_t high_bits = 0x8080808080808080ULL;
constexpr std::uint64_t low_bits = 0x0101010101010101ULL;

// True when none of the 8 bytes has its high bit set and none is zero: the common case of
// plain ASCII topic names, checked a word at a time.
inline bool ascii_without_nul(const unsigned char* p) noexcept {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    bool has_zero = ((word - low_bits) & ~word & high_bits) != 0;
    return (word & high_bits) == 0 && !has_zero;
}

inline bool ascii(const unsigned char* p) noexcept {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);
    return (word & high_bits) == 0;
}

template <bool AllowNul>
bool validate(std::string_view text) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const unsigned char* end = p + text.size();
    while (p < end) {
        if (end - p >= 8 && (AllowNul ? ascii(p) : ascii_without_nul(p))) {
            p += 8;
            continue;
        }
        unsigned char c = *p;
        if (c < 0x80) {
            if (!AllowNul && c == 0) {
                return false;  // U+0000 (MQTT-1.5.4-2)
            }
            ++p;
            continue;
        }
        std::size_t left = static_cast<std::size_t>(end - p);
        if (c >= 0xC2 && c <= 0xDF) {  // 0xC0, 0xC1 would be overlong
            if (left < 2 || (p[1] & 0xC0) != 0x80) {
                return false;
            }
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (left < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) {
                return false;
            }
            if (c == 0xE0 && p[1] < 0xA0) {
                return false;  // overlong
            }
            if (c == 0xED && p[1] >= 0xA0) {
                return false;  // U+D800..U+DFFF surrogates (MQTT-1.5.4-1)
            }
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (left < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 ||
                (p[3] & 0xC0) != 0x80) {
                return false;
            }
            if (c == 0xF0 && p[1] < 0x90) {
                return false;  // overlong
            }
            if (c == 0xF4 && p[1] >= 0x90) {
                return false;  // above U+10FFFF
            }
            p += 4;
        } else {
            return false;  // continuation byte first, 0xC0/0xC1, or 0xF5..0xFF
        }
    }
    return true;
}

}  // namespace

bool is_valid_utf8(std::string_view text) noexcept { return validate<false>(text); }

bool is_well_formed_utf8(std::string_view text) noexcept { return validate<true>(text); }

}  // namespace starling::mqtt
