#pragma once

// log_throttle: at most N lines a second of one kind, so a flood (of refused CONNECTs, say)
// cannot become a flood of log lines that fills the disk or drowns everything else. A line
// that is let through after some were held back says how many: nothing disappears silently.
//
// Thread-safe (one mutex; taken once per candidate line, which is already on a slow path).
// Time comes from the caller, so tests drive it without sleeping.

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

namespace starling::base {

class log_throttle {
  public:
    using time_point = std::chrono::steady_clock::time_point;

    explicit log_throttle(std::size_t lines_per_second) : limit_(lines_per_second) {}

    // True when this line may be written. `held_back` is then the number of lines refused
    // since the last one let through (0 most of the time); otherwise it is left alone.
    bool admit(time_point now, std::size_t& held_back);

  private:
    std::mutex mutex_;
    const std::size_t limit_;
    time_point window_start_{};
    std::size_t in_window_ = 0;
    std::size_t held_back_ = 0;
};

// `text` as it may go into a log line: at most `max_bytes` bytes of it, then "…(N bytes)" —
// a 64 KiB client id from a hostile client must not make 64 KiB log lines.
std::string clipped_for_log(std::string_view text, std::size_t max_bytes = 128);

}  // namespace starling::base
