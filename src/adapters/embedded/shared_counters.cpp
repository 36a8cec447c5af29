#include "adapters/embedded/shared_counters.h"

#include "adapters/embedded/sqlite_error.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>

namespace starling::adapters::embedded {

namespace {

constexpr std::int64_t ns_per_second = 1'000'000'000;

bool valid(const std::vector<bandwidth>& limits) {
    return !limits.empty() && std::all_of(limits.begin(), limits.end(), [](const bandwidth& b) {
        return b.capacity > 0 && b.period_seconds > 0 &&
               b.period_seconds <= std::numeric_limits<std::int64_t>::max() / ns_per_second;
    });
}

template <class Bands>
bool same_limits(const std::vector<bandwidth>& limits, const Bands& bands) {
    if (limits.size() != bands.size()) {
        return false;
    }
    for (std::size_t i = 0; i < limits.size(); ++i) {
        if (limits[i].capacity != bands[i].limit.capacity ||
            limits[i].period_seconds != bands[i].limit.period_seconds) {
            return false;
        }
    }
    return true;
}

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() : sum;
}

}  // namespace

std::int64_t embedded_shared_counters::now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_.steady_now().time_since_epoch())
        .count();
}

embedded_shared_counters::shard& embedded_shared_counters::shard_of(const std::string& key) {
    return shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void embedded_shared_counters::add(std::string key, std::int64_t delta,
                                   callback<std::int64_t> done) {
    std::int64_t value = 0;
    {
        auto& s = shard_of(key);
        std::lock_guard lock(s.mutex);
        auto& counter = s.counters[key];
        counter = saturating_add(counter, delta);
        value = counter;
    }
    done(value);
}

void embedded_shared_counters::get(std::string key, callback<std::int64_t> done) {
    std::int64_t value = 0;
    {
        auto& s = shard_of(key);
        std::lock_guard lock(s.mutex);
        if (auto it = s.counters.find(key); it != s.counters.end()) {
            value = it->second;
        }
    }
    done(value);
}

embedded_shared_counters::bucket& embedded_shared_counters::refilled_bucket(
    shard& s, const std::string& key, const std::vector<bandwidth>& limits) {
    const std::int64_t now = now_ns();
    auto [it, created] = s.buckets.try_emplace(key);
    bucket& b = it->second;
    if (created || !same_limits(limits, b.bands)) {
        std::int64_t available = std::numeric_limits<std::int64_t>::max();
        for (const auto& band : b.bands) {  // empty when just created
            available = std::min(available, band.tokens);
        }
        b.bands.clear();
        for (const auto& limit : limits) {
            b.bands.push_back(band_state{limit, std::min(limit.capacity, available), 0});
        }
        b.last_refill_ns = now;
        return b;
    }
    const std::int64_t elapsed = now - b.last_refill_ns;
    if (elapsed <= 0) {
        return b;  // a steady clock never goes back; equal readings add nothing
    }
    b.last_refill_ns = now;
    for (auto& band : b.bands) {
        if (band.tokens >= band.limit.capacity) {
            band.remainder = 0;
            continue;
        }
        const std::int64_t period_ns = band.limit.period_seconds * ns_per_second;
        // capacity * elapsed overflows 64 bits for long idle periods; 128-bit arithmetic
        // keeps the greedy refill exact instead of clamping.
        __extension__ using wide = __int128;
        const wide divided = static_cast<wide>(band.limit.capacity) * elapsed + band.remainder;
        const wide refill = divided / period_ns;
        const wide missing = band.limit.capacity - band.tokens;
        if (refill >= missing) {
            band.tokens = band.limit.capacity;
            band.remainder = 0;
        } else {
            band.tokens += static_cast<std::int64_t>(refill);
            band.remainder = static_cast<std::int64_t>(divided % period_ns);
        }
    }
    return b;
}

void embedded_shared_counters::try_consume(std::string key, std::vector<bandwidth> limits,
                                           std::int64_t tokens, callback<std::int64_t> done) {
    if (tokens < 0 || !valid(limits)) {
        done(make_error_code(store_errc::invalid_argument));
        return;
    }
    std::int64_t granted = 0;
    {
        auto& s = shard_of(key);
        std::lock_guard lock(s.mutex);
        bucket& b = refilled_bucket(s, key, limits);
        granted = tokens;
        for (const auto& band : b.bands) {
            granted = std::min(granted, band.tokens);
        }
        for (auto& band : b.bands) {
            band.tokens -= granted;
        }
    }
    done(granted);
}

void embedded_shared_counters::refund(std::string key, std::vector<bandwidth> limits,
                                      std::int64_t tokens, callback<std::int64_t> done) {
    if (tokens < 0 || !valid(limits)) {
        done(make_error_code(store_errc::invalid_argument));
        return;
    }
    std::int64_t available = std::numeric_limits<std::int64_t>::max();
    {
        auto& s = shard_of(key);
        std::lock_guard lock(s.mutex);
        bucket& b = refilled_bucket(s, key, limits);
        for (auto& band : b.bands) {
            band.tokens = std::min(band.limit.capacity, saturating_add(band.tokens, tokens));
            if (band.tokens == band.limit.capacity) {
                band.remainder = 0;
            }
            available = std::min(available, band.tokens);
        }
    }
    done(available);  // tokens now available (the emptiest bandwidth)
}

}  // namespace starling::adapters::embedded
