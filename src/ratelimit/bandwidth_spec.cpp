#include "ratelimit/bandwidth_spec.h"

#include "base/text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace starling::ratelimit {

namespace {

std::optional<std::int64_t> positive(std::string_view text) {
    text = base::trim(text);
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc{} || ptr != end || value <= 0) {
        return std::nullopt;
    }
    return value;
}

// Periods beyond this overflow the nanosecond arithmetic of the buckets (292 years).
constexpr std::int64_t max_period_seconds =
    std::numeric_limits<std::int64_t>::max() / 1'000'000'000;

}  // namespace

std::optional<std::vector<bandwidth>> parse_bandwidths(std::string_view text, std::string* why) {
    const auto fail = [&](std::string reason) -> std::optional<std::vector<bandwidth>> {
        if (why != nullptr) {
            *why = std::move(reason) +
                   " (expected limit:seconds[,limit:seconds...], e.g. 10:1,300:60)";
        }
        return std::nullopt;
    };
    std::vector<bandwidth> out;
    if (base::trim(text).empty()) {
        return fail("is empty");
    }
    while (true) {
        const auto comma = text.find(',');
        const std::string_view item = base::trim(text.substr(0, comma));
        const auto colon = item.find(':');
        if (colon == std::string_view::npos) {
            return fail("has an item '" + std::string(item) + "' without ':'");
        }
        const auto limit = positive(item.substr(0, colon));
        const auto seconds = positive(item.substr(colon + 1));
        if (!limit || !seconds) {
            return fail("has an item '" + std::string(item) +
                        "' whose limit or seconds is not a positive integer");
        }
        if (*seconds > max_period_seconds) {
            return fail("has a period over " + std::to_string(max_period_seconds) + " seconds");
        }
        if (std::any_of(out.begin(), out.end(),
                        [&](const bandwidth& b) { return b.period_seconds == *seconds; })) {
            return fail("names the period " + std::to_string(*seconds) + " s twice");
        }
        out.push_back(bandwidth{.capacity = *limit, .period_seconds = *seconds});
        if (comma == std::string_view::npos) {
            break;
        }
        text.remove_prefix(comma + 1);
    }
    return out;
}

std::string to_string(const std::vector<bandwidth>& limits) {
    std::string out;
    for (const auto& b : limits) {
        if (!out.empty()) {
            out.push_back(',');
        }
        out += std::to_string(b.capacity) + ":" + std::to_string(b.period_seconds);
    }
    return out;
}

}  // namespace starling::ratelimit
