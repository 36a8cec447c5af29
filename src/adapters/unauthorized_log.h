#pragma once

// What both metadata-store adapters (SQLite, PostgreSQL) apply to the unauthorized-client log
// (port: include/starling/metadata_store.h, record_unauthorized). Every refused CONNECT writes a
// row keyed by its client id — up to 64 KiB long, and chosen by whoever connects — so without
// bounds a CONNECT flood grows the table and fills the store's queue ahead of the credential
// lookups that authentication waits for. Here:
//
//   - `clamp()` cuts client id and username to unauthorized_max_id_bytes, the reason to
//     unauthorized_max_reason_bytes, the IP to 64 bytes, each at a UTF-8 character boundary;
//   - `unauthorized_log_limiter` decides, on the caller's thread before anything is queued,
//     whether a row is written: at most `rows_per_address` per `address_period` per IP address,
//     and `rows_per_second` overall (bursts up to ten seconds' worth). The rest are dropped and
//     counted (dropped());
//   - `max_rows` is enforced by the adapter after each insert (the oldest rows are deleted).
//
// Both limits are GCRA token buckets (one "theoretical arrival time" per key, so an address
// costs one map entry); the per-address table keeps at most `max_tracked_addresses` entries.
// When it is full, entries whose bucket refilled are swept (at most once a second) and, until
// there is room, a new address is held to the overall rate only.
//
// Lifecycle: owned by the adapter. Concurrency: admit() and dropped() from any thread (one
// mutex; two hash operations per call).

#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace starling::adapters {

struct unauthorized_log_options {
    std::size_t max_rows = 10000;         // rows kept; the oldest are deleted beyond
    std::uint32_t rows_per_address = 10;  // per IP address and period (its burst)
    std::chrono::seconds address_period{60};
    std::uint32_t rows_per_second = 100;  // over every address; bursts of ten seconds' worth
    std::size_t max_tracked_addresses = 10000;
};

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence (PostgreSQL refuses
// invalid UTF-8 in text columns).
inline std::string truncate_utf8(std::string text, std::size_t max) {
    if (text.size() <= max) {
        return text;
    }
    std::size_t end = max;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) {
        --end;  // text[end] continues a sequence: cut before the sequence's first byte
    }
    text.resize(end);
    return text;
}

inline unauthorized_client clamp(unauthorized_client entry) {
    entry.client_id = truncate_utf8(std::move(entry.client_id), unauthorized_max_id_bytes);
    entry.username = truncate_utf8(std::move(entry.username), unauthorized_max_id_bytes);
    entry.reason = truncate_utf8(std::move(entry.reason), unauthorized_max_reason_bytes);
    entry.ip_address = truncate_utf8(std::move(entry.ip_address), 64);
    return entry;
}

// The LIKE pattern, for `LIKE ? ESCAPE '\'`, that matches any text containing `text`; the
// '%', '_' and backslash characters of `text` are matched literally.
inline std::string like_contains_pattern(std::string_view text) {
    std::string pattern = "%";
    for (const char c : text) {
        if (c == '%' || c == '_' || c == '\\') {
            pattern.push_back('\\');
        }
        pattern.push_back(c);
    }
    pattern.push_back('%');
    return pattern;
}

class unauthorized_log_limiter {
  public:
    unauthorized_log_limiter(const unauthorized_log_options& options, const clock& clk)
        : clock_(clk),
          address_interval_(interval_of(options.address_period, options.rows_per_address)),
          address_tolerance_(tolerance_of(options.address_period, options.rows_per_address)),
          total_interval_(interval_of(std::chrono::seconds(1), options.rows_per_second)),
          total_tolerance_(tolerance_of(std::chrono::seconds(10), options.rows_per_second * 10)),
          max_tracked_(std::max<std::size_t>(1, options.max_tracked_addresses)),
          unlimited_address_(options.rows_per_address == 0),
          unlimited_total_(options.rows_per_second == 0) {}

    // True: write the row. False: dropped (and counted).
    bool admit(std::string_view address) {
        const auto now = clock_.steady_now();
        std::lock_guard lock(mutex_);
        auto it = addresses_.end();
        auto tat = now;
        if (!unlimited_address_) {
            it = addresses_.find(std::string(address));
            if (it != addresses_.end()) {
                tat = std::max(it->second, now);
                if (tat - now > address_tolerance_) {
                    dropped_.fetch_add(1, std::memory_order_relaxed);
                    return false;
                }
            }
        }
        if (!unlimited_total_) {
            const auto total = std::max(total_tat_, now);
            if (total - now > total_tolerance_) {
                dropped_.fetch_add(1, std::memory_order_relaxed);
                return false;
            }
            total_tat_ = total + total_interval_;
        }
        if (unlimited_address_) {
            return true;
        }
        if (it != addresses_.end()) {
            it->second = tat + address_interval_;
        } else if (has_room(now)) {
            addresses_.emplace(std::string(address), tat + address_interval_);
        }
        // else: the table is full of addresses still limited; this one is held to the overall
        // rate only until room is made (a sweep per second at most).
        return true;
    }

    std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  private:
    using duration = clock::steady_point::duration;

    static duration interval_of(std::chrono::seconds period, std::uint32_t count) {
        if (count == 0) {
            return duration::zero();
        }
        return duration(period) / static_cast<duration::rep>(count);
    }
    // A full bucket lets `count` rows through at once: count - 1 intervals of slack.
    static duration tolerance_of(std::chrono::seconds period, std::uint32_t count) {
        if (count == 0) {
            return duration::zero();
        }
        return interval_of(period, count) * static_cast<duration::rep>(count - 1);
    }

    // Full: forget the addresses whose bucket is full again (the same as absent), at most once
    // a second so a flood of new addresses does not rescan the table for each one.
    bool has_room(clock::steady_point now) {
        if (addresses_.size() < max_tracked_) {
            return true;
        }
        if (now >= next_sweep_) {
            next_sweep_ = now + std::chrono::seconds(1);
            std::erase_if(addresses_, [now](const auto& e) { return e.second <= now; });
        }
        return addresses_.size() < max_tracked_;
    }

    const clock& clock_;
    const duration address_interval_;
    const duration address_tolerance_;
    const duration total_interval_;
    const duration total_tolerance_;
    const std::size_t max_tracked_;
    const bool unlimited_address_;
    const bool unlimited_total_;
    std::mutex mutex_;
    std::unordered_map<std::string, clock::steady_point> addresses_;  // address → GCRA TAT
    clock::steady_point total_tat_{};
    clock::steady_point next_sweep_{};
    std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace starling::adapters
