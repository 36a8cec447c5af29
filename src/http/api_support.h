#pragma once

// Helpers every REST handler under /api/ shares: the bearer-token check and query-string
// parsing. Pure functions of the request; safe on any thread.

#include "base/log_throttle.h"
#include "http/router.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>

namespace starling::http {

// Who may call /api. Two kinds of bearer token, each optional:
//   - the static service-account token (security.admin-token), compared in constant time, so
//     it cannot be guessed byte by byte from response times;
//   - an admin user's access token (POST /api/auth/login), checked by `verify_jwt`.
// Either is read from `Authorization: Bearer …` or TBMQ's `X-Authorization: Bearer …`.
// Copyable; the copies share one immutable state, so every route of a node agrees.
class api_access {
  public:
    using token_verifier = std::function<bool(std::string_view bearer)>;

    api_access() = default;
    // Static token only (implicit: a plain token string is an access policy of its own).
    api_access(std::string static_token);  // NOLINT(google-explicit-constructor)
    api_access(const char* static_token);  // NOLINT(google-explicit-constructor)
    api_access(std::string static_token, token_verifier verify_jwt);

    // Whether /api is served at all: with neither kind of token nobody could call it, so the
    // routes are not registered (404) rather than refusing everyone.
    bool enabled() const;
    // nullopt when `req` may call /api; else why not (for the log, never for the caller).
    std::optional<std::string_view> refusal(const request& req) const;

  private:
    struct state {
        std::string static_token;
        token_verifier verify_jwt;
    };
    std::shared_ptr<const state> state_;
};

// The header the HTTP server sets to the caller's IP address (any such header a client sent is
// replaced), for per-address limits and the refusal log.
inline constexpr std::string_view peer_address_header = "X-Starling-Peer-Address";
std::string peer_address(const request& req);

// Registers /api routes behind api_access: each handler runs only for an authorized request;
// any other gets 401 first, and the refusal is logged (rate-limited: a scanner cannot flood the
// log). When access is not enabled nothing is registered, so a node without any admin
// credentials has no such routes (404) rather than unprotected ones.
class admin_routes {
  public:
    admin_routes(router& routes, api_access access);

    bool enabled() const { return access_.enabled(); }
    void add(verb method, std::string path, handler fn);
    void add_async(verb method, std::string path, async_handler fn);

  private:
    router& routes_;
    api_access access_;
};

// Logs that `req` was refused for `why` (at most five lines a second, shared with the login's
// refusals: the rest are counted and the count is logged with the next line that gets through).
void log_refusal(const request& req, std::string_view why);

// The throttle of those lines, for other refusals of /api (the login's) to share.
base::log_throttle& refusal_log_throttle();

// The 401 every /api route answers without the right token.
response unauthorized_response();

// application/x-www-form-urlencoded decoding of one query component ('+' is a space, %XX a
// byte); nullopt when a '%' is not followed by two hex digits. With `plus_is_space` false,
// '+' stays '+' (the rule for path segments).
std::optional<std::string> url_decode(std::string_view in, bool plus_is_space = true);

// The percent-decoded rest of the request path after `prefix` (the query string left out), for
// routes registered as "<prefix>*": "/api/x/a%2Fb?q" with prefix "/api/x/" → "a/b". nullopt
// when the path does not start with `prefix` or its encoding is malformed.
std::optional<std::string> path_tail(const request& req, std::string_view prefix);

using query_params = std::unordered_map<std::string, std::string>;

// The decoded query parameters of the request target (a repeated name keeps its last value);
// nullopt when one of them is not decodable.
std::optional<query_params> query_of(const request& req);

// query_of, or the 400 that says the query's encoding is malformed.
std::variant<query_params, response> parsed_query(const request& req);

// 200 with a JSON body. Strings that came from clients (ids, usernames) may not be valid UTF-8:
// such bytes are written as U+FFFD rather than failing the response.
response json_response(const nlohmann::json& body);

// The page a TBMQ-style paged GET asks for: `pageSize` 1..1000 (default 100), `page` from 0.
struct page_request {
    std::int64_t size = 100;
    std::int64_t page = 0;
};

// The page in `params`, or the 400 response naming the bad parameter.
std::variant<page_request, response> page_of(const query_params& params);

// A paged list's request: the page and the `textSearch` filter (empty when absent).
struct page_search {
    page_request page;
    std::string text;
};

// parsed_query, page_of and `textSearch` together, or the 400 of the first that fails.
std::variant<page_search, response> page_search_of(const request& req);

// The [first, last) indices of `page` in a list of `total` elements (empty past the end).
std::pair<std::size_t, std::size_t> page_slice(std::size_t total, const page_request& page);

// Whether `text` contains `part`, ASCII letters compared without case (the `textSearch`
// filter of the paged lists).
bool contains_ignoring_case(std::string_view text, std::string_view part);

// `sortOrder`: ASC (false, the default when absent) or DESC (true); or the 400 naming it.
std::variant<bool, response> descending_of(const query_params& params);

// TBMQ's PageData: {"data":[...],"totalPages":n,"totalElements":n,"hasNext":b}, where `data`
// is the requested page of `total` elements.
nlohmann::json page_data(nlohmann::json data, std::int64_t total, const page_request& page);

}  // namespace starling::http
