#pragma once

// Helpers every REST handler under /api/ shares: the bearer-token check and query-string
// parsing. Pure functions of the request; safe on any thread.

#include "http/router.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace starling::http {

// True when an `Authorization` or `X-Authorization` header carries `Bearer <token>`. The
// comparison takes the same time wherever the first difference is, so the token cannot be
// guessed byte by byte from response times.
bool bearer_authorized(const request& req, std::string_view token);

// application/x-www-form-urlencoded decoding of one query component ('+' is a space, %XX a
// byte); nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> url_decode(std::string_view in);

using query_params = std::unordered_map<std::string, std::string>;

// The decoded query parameters of the request target (a repeated name keeps its last value);
// nullopt when one of them is not decodable.
std::optional<query_params> query_of(const request& req);

}  // namespace starling::http
