#include "ratelimit/token_bucket.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace starling::ratelimit {

namespace {
constexpr std::int64_t ns_per_second = 1'000'000'000;
}

token_bucket::token_bucket(std::vector<bandwidth> limits, clock::steady_point now)
    : last_refill_(now) {
    windows_.reserve(limits.size());
    for (const auto& b : limits) {
        windows_.push_back(window{.limit = b, .tokens = b.capacity, .remainder = 0});
    }
}

void token_bucket::refill(clock::steady_point now) {
    const std::int64_t elapsed =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - last_refill_).count();
    if (elapsed <= 0) {
        return;  // a steady clock never goes back; equal readings add nothing
    }
    last_refill_ = now;
    for (auto& w : windows_) {
        if (w.tokens >= w.limit.capacity) {
            w.remainder = 0;
            continue;
        }
        const std::int64_t period_ns = w.limit.period_seconds * ns_per_second;
        // capacity * elapsed overflows 64 bits after long idle periods; 128-bit arithmetic keeps
        // the greedy refill exact instead of clamping.
        __extension__ using wide = __int128;
        const wide divided = static_cast<wide>(w.limit.capacity) * elapsed + w.remainder;
        const wide refill = divided / period_ns;
        const wide missing = w.limit.capacity - w.tokens;
        if (refill >= missing) {
            w.tokens = w.limit.capacity;
            w.remainder = 0;
        } else {
            w.tokens += static_cast<std::int64_t>(refill);
            w.remainder = static_cast<std::int64_t>(divided % period_ns);
        }
    }
}

std::int64_t token_bucket::try_acquire(std::int64_t tokens, clock::steady_point now) {
    if (tokens <= 0) {
        return 0;
    }
    refill(now);
    std::int64_t granted = tokens;
    for (const auto& w : windows_) {
        granted = std::min(granted, w.tokens);
    }
    for (auto& w : windows_) {
        w.tokens -= granted;
    }
    return granted;
}

std::int64_t token_bucket::available(clock::steady_point now) {
    refill(now);
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (const auto& w : windows_) {
        least = std::min(least, w.tokens);
    }
    return least;
}

}  // namespace starling::ratelimit
