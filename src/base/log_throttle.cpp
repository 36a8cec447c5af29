#include "base/log_throttle.h"

#include <fmt/format.h>

namespace starling::base {

bool log_throttle::admit(time_point now, std::size_t& held_back) {
    std::lock_guard lock(mutex_);
    if (now - window_start_ >= std::chrono::seconds(1)) {
        window_start_ = now;
        in_window_ = 0;
    }
    if (in_window_ >= limit_) {
        ++held_back_;
        return false;
    }
    ++in_window_;
    held_back = held_back_;
    held_back_ = 0;
    return true;
}

std::string clipped_for_log(std::string_view text, std::size_t max_bytes) {
    if (text.size() <= max_bytes) {
        return std::string(text);
    }
    // Cut on a UTF-8 character boundary: never in the middle of a multi-byte sequence.
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0U) == 0x80U) {
        --cut;
    }
    return fmt::format("{}…({} bytes)", text.substr(0, cut), text.size());
}

}  // namespace starling::base
