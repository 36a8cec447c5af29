#include "http/api_support.h"

#include "base/log_throttle.h"

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <utility>

namespace starling::http {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

}  // namespace

api_access::api_access(std::string static_token)
    : state_(std::make_shared<const state>(state{std::move(static_token), nullptr})) {}

api_access::api_access(const char* static_token) : api_access(std::string(static_token)) {}

api_access::api_access(std::string static_token, token_verifier verify_jwt)
    : state_(std::make_shared<const state>(state{std::move(static_token), std::move(verify_jwt)})) {
}

bool api_access::enabled() const {
    return state_ != nullptr && (!state_->static_token.empty() || state_->verify_jwt != nullptr);
}

std::optional<std::string_view> api_access::refusal(const request& req) const {
    if (!enabled()) {
        return "the API is disabled";
    }
    bool offered = false;
    for (const auto* header : {"Authorization", "X-Authorization"}) {
        auto it = req.find(header);
        if (it == req.end()) {
            continue;
        }
        std::string_view value = it->value();
        if (!value.starts_with("Bearer ")) {
            continue;
        }
        value.remove_prefix(7);
        offered = true;
        const auto& token = state_->static_token;
        if (!token.empty() && value.size() == token.size() &&
            CRYPTO_memcmp(value.data(), token.data(), token.size()) == 0) {
            return std::nullopt;
        }
        if (state_->verify_jwt != nullptr && state_->verify_jwt(value)) {
            return std::nullopt;
        }
    }
    return offered ? "wrong, expired or revoked bearer token" : "no bearer token";
}

std::string peer_address(const request& req) {
    auto it = req.find(peer_address_header);
    return it == req.end() ? std::string() : std::string(it->value());
}

base::log_throttle& refusal_log_throttle() {
    static base::log_throttle throttle(5);
    return throttle;
}

void log_refusal(const request& req, std::string_view why) {
    std::size_t held_back = 0;
    if (!refusal_log_throttle().admit(std::chrono::steady_clock::now(), held_back)) {
        return;
    }
    const std::string_view target(req.target().data(), req.target().size());
    spdlog::warn("api: refused {} {} from {}: {}{}", std::string_view(req.method_string()),
                 base::clipped_for_log(target.substr(0, target.find('?'))), peer_address(req), why,
                 held_back > 0 ? fmt::format(" [{} more refusals not logged]", held_back) : "");
}

admin_routes::admin_routes(router& routes, api_access access)
    : routes_(routes), access_(std::move(access)) {}

void admin_routes::add(verb method, std::string path, handler fn) {
    if (!enabled()) {
        return;
    }
    routes_.add(method, std::move(path),
                [access = access_, fn = std::move(fn)](const request& req) {
                    if (auto why = access.refusal(req)) {
                        log_refusal(req, *why);
                        return unauthorized_response();
                    }
                    return fn(req);
                });
}

void admin_routes::add_async(verb method, std::string path, async_handler fn) {
    if (!enabled()) {
        return;
    }
    routes_.add_async(method, std::move(path),
                      [access = access_, fn = std::move(fn)](const request& req, responder done) {
                          if (auto why = access.refusal(req)) {
                              log_refusal(req, *why);
                              done(unauthorized_response());
                              return;
                          }
                          fn(req, std::move(done));
                      });
}

response unauthorized_response() {
    return error_response(status_code::unauthorized, "missing or wrong bearer token");
}

std::optional<std::string> url_decode(std::string_view in, bool plus_is_space) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '+' && plus_is_space) {
            out.push_back(' ');
        } else if (in[i] == '%') {
            if (i + 2 >= in.size()) {
                return std::nullopt;
            }
            const int hi = hex_value(in[i + 1]);
            const int lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(in[i]);
        }
    }
    return out;
}

std::optional<query_params> query_of(const request& req) {
    query_params params;
    const std::string_view target(req.target().data(), req.target().size());
    const std::size_t q = target.find('?');
    if (q == std::string_view::npos) {
        return params;
    }
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const std::size_t amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        if (pair.empty()) {
            continue;
        }
        const std::size_t eq = pair.find('=');
        auto key = url_decode(pair.substr(0, eq));
        auto value =
            url_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        if (!key || !value) {
            return std::nullopt;
        }
        params.insert_or_assign(std::move(*key), std::move(*value));
    }
    return params;
}

std::optional<std::string> path_tail(const request& req, std::string_view prefix) {
    std::string_view path(req.target().data(), req.target().size());
    path = path.substr(0, path.find('?'));
    if (!path.starts_with(prefix)) {
        return std::nullopt;
    }
    return url_decode(path.substr(prefix.size()), /*plus_is_space=*/false);
}

std::variant<query_params, response> parsed_query(const request& req) {
    auto params = query_of(req);
    if (!params) {
        return error_response(status_code::bad_request, "query: malformed percent-encoding");
    }
    return std::move(*params);
}

response json_response(const nlohmann::json& body) {
    return make_response(status_code::ok, "application/json",
                         body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

namespace {

std::optional<std::int64_t> to_int(const std::string& s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

}  // namespace

std::variant<page_request, response> page_of(const query_params& params) {
    page_request page;
    if (auto it = params.find("pageSize"); it != params.end()) {
        auto v = to_int(it->second);
        if (!v || *v < 1 || *v > 1000) {
            return error_response(status_code::bad_request, "pageSize: an integer from 1 to 1000");
        }
        page.size = *v;
    }
    if (auto it = params.find("page"); it != params.end()) {
        auto v = to_int(it->second);
        // The bound keeps page * size far from overflowing.
        if (!v || *v < 0 || *v > 1'000'000'000) {
            return error_response(status_code::bad_request,
                                  "page: an integer from 0 to 1000000000");
        }
        page.page = *v;
    }
    return page;
}

std::variant<page_search, response> page_search_of(const request& req) {
    auto params = parsed_query(req);
    if (auto* err = std::get_if<response>(&params)) {
        return std::move(*err);
    }
    const auto& q = std::get<query_params>(params);
    auto page = page_of(q);
    if (auto* err = std::get_if<response>(&page)) {
        return std::move(*err);
    }
    page_search out{.page = std::get<page_request>(page), .text = {}};
    if (auto it = q.find("textSearch"); it != q.end()) {
        out.text = it->second;
    }
    return out;
}

std::pair<std::size_t, std::size_t> page_slice(std::size_t total, const page_request& page) {
    // page_of bounds page and size, so the product fits.
    const auto first = std::min(total, static_cast<std::size_t>(page.page * page.size));
    return {first, std::min(total, first + static_cast<std::size_t>(page.size))};
}

nlohmann::json page_data(nlohmann::json data, std::int64_t total, const page_request& page) {
    const std::int64_t first = page.page * page.size;
    return {{"data", std::move(data)},
            {"totalPages", (total + page.size - 1) / page.size},
            {"totalElements", total},
            {"hasNext", first + page.size < total}};
}

bool contains_ignoring_case(std::string_view text, std::string_view part) {
    auto lower = [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    };
    return std::search(text.begin(), text.end(), part.begin(), part.end(),
                       [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

std::variant<bool, response> descending_of(const query_params& params) {
    auto it = params.find("sortOrder");
    if (it == params.end()) {
        return false;
    }
    if (it->second != "ASC" && it->second != "DESC") {
        return error_response(status_code::bad_request, "sortOrder: ASC or DESC");
    }
    return it->second == "DESC";
}

}  // namespace starling::http
