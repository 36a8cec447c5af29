#pragma once

// The "limit:seconds[,limit:seconds...]" rate-limit format of TBMQ's rate-limits.* keys
// (Bucket4j bandwidths): "10:1,300:60" = at most 10 per second and at most 300 per minute;
// every window must hold. Used by the config loader (a bad value fails start-up naming the
// key) and shown back in logs.

#include "starling/shared_counters.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::ratelimit {

// Parses `text`. Spaces around items are allowed; every limit and period must be a positive
// integer, and one period may appear only once (two windows of the same length would only
// mean the smaller one). On failure returns nullopt and says why in `why` (without the key).
std::optional<std::vector<bandwidth>> parse_bandwidths(std::string_view text, std::string* why);

// "10:1,300:60": the canonical form of `limits`, for log lines.
std::string to_string(const std::vector<bandwidth>& limits);

}  // namespace starling::ratelimit
