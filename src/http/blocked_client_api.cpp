#include "http/blocked_client_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;
constexpr std::string_view path = "/api/blockedClient";
constexpr std::int64_t default_page_size = 100;
constexpr std::int64_t max_page_size = 1000;

std::optional<std::int64_t> to_int(const std::string& s) {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size()) {
        return std::nullopt;
    }
    return v;
}

json to_json(const auth::blocked_entry& e) {
    json j = {{"type", auth::tbmq_name(e.type)},
              {"value", e.value},
              {"expirationTime", e.expires_at_ms},
              {"description", e.description}};
    j["regexMatchTarget"] =
        e.type == auth::block_type::regex ? json(auth::tbmq_name(e.target)) : json(nullptr);
    return j;
}

response json_response(const json& j) {
    // Values come from clients (a CLIENT_ID rule's id): invalid UTF-8 becomes U+FFFD.
    return make_response(status_code::ok, "application/json",
                         j.dump(-1, ' ', false, json::error_handler_t::replace));
}

// The entry a POST body describes, or the 400 response naming the bad field.
std::variant<auth::blocked_entry, response> entry_from_body(const std::string& body) {
    const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        return error_response(status_code::bad_request, "body: expected a JSON object");
    }
    auth::blocked_entry e;
    auto type = j.find("type");
    if (type == j.end() || !type->is_string()) {
        return error_response(status_code::bad_request,
                              "type: required, one of CLIENT_ID, USERNAME, IP_ADDRESS, REGEX");
    }
    auto parsed_type = auth::block_type_from_tbmq(type->get<std::string>());
    if (!parsed_type) {
        return error_response(status_code::bad_request,
                              "type: '" + type->get<std::string>() +
                                  "' is not one of CLIENT_ID, USERNAME, IP_ADDRESS, REGEX");
    }
    e.type = *parsed_type;
    auto value = j.find("value");
    if (value == j.end() || !value->is_string() || value->get<std::string>().empty()) {
        return error_response(status_code::bad_request, "value: required, a non-empty string");
    }
    e.value = value->get<std::string>();
    if (auto exp = j.find("expirationTime"); exp != j.end() && !exp->is_null()) {
        if (!exp->is_number_integer() || exp->get<std::int64_t>() < 0) {
            return error_response(status_code::bad_request,
                                  "expirationTime: ms since the epoch, 0 = never");
        }
        e.expires_at_ms = exp->get<std::int64_t>();
    }
    if (auto d = j.find("description"); d != j.end() && !d->is_null()) {
        if (!d->is_string()) {
            return error_response(status_code::bad_request, "description: expected a string");
        }
        e.description = d->get<std::string>();
    }
    if (auto t = j.find("regexMatchTarget");
        e.type == auth::block_type::regex && t != j.end() && !t->is_null()) {
        auto target =
            t->is_string() ? auth::regex_target_from_tbmq(t->get<std::string>()) : std::nullopt;
        if (!target) {
            return error_response(status_code::bad_request,
                                  "regexMatchTarget: one of BY_CLIENT_ID, BY_USERNAME, "
                                  "BY_IP_ADDRESS");
        }
        e.target = *target;
    }
    if (auto why = auth::blocked_clients::describe_error(e)) {
        return error_response(status_code::bad_request, *why);
    }
    return e;
}

}  // namespace

void add_blocked_client_routes(router& routes, blocked_client_api api) {
    if (api.admin_token.empty()) {
        spdlog::info("blocked-client REST API disabled (security.admin-token is empty)");
        return;
    }
    auto shared = std::make_shared<blocked_client_api>(std::move(api));
    auto unauthorized = [] {
        return error_response(status_code::unauthorized, "missing or wrong bearer token");
    };

    routes.add(verb::get, std::string(path), [shared, unauthorized](const request& req) {
        if (!bearer_authorized(req, shared->admin_token)) {
            return unauthorized();
        }
        auto params = query_of(req);
        if (!params) {
            return error_response(status_code::bad_request, "query: malformed percent-encoding");
        }
        std::int64_t page_size = default_page_size;
        std::int64_t page = 0;
        if (auto it = params->find("pageSize"); it != params->end()) {
            auto v = to_int(it->second);
            if (!v || *v < 1 || *v > max_page_size) {
                return error_response(status_code::bad_request,
                                      "pageSize: an integer from 1 to 1000");
            }
            page_size = *v;
        }
        if (auto it = params->find("page"); it != params->end()) {
            auto v = to_int(it->second);
            if (!v || *v < 0) {
                return error_response(status_code::bad_request, "page: an integer from 0");
            }
            page = *v;
        }
        const auto all = shared->list.list(shared->now_ms());
        const auto total = static_cast<std::int64_t>(all.size());
        json data = json::array();
        const std::int64_t first = std::min(total, page * page_size);
        const std::int64_t last = std::min(total, first + page_size);
        for (std::int64_t i = first; i < last; ++i) {
            data.push_back(to_json(all[static_cast<std::size_t>(i)]));
        }
        return json_response({{"data", std::move(data)},
                              {"totalPages", (total + page_size - 1) / page_size},
                              {"totalElements", total},
                              {"hasNext", last < total}});
    });

    routes.add_async(
        verb::post, std::string(path), [shared, unauthorized](const request& req, responder done) {
            if (!bearer_authorized(req, shared->admin_token)) {
                done(unauthorized());
                return;
            }
            auto parsed = entry_from_body(req.body());
            if (auto* bad = std::get_if<response>(&parsed)) {
                done(std::move(*bad));
                return;
            }
            auto entry = std::get<auth::blocked_entry>(std::move(parsed));
            entry.value = auth::blocked_clients::canonical_value(entry.type, entry.value);
            json body = to_json(entry);
            shared->put(std::move(entry), [done = std::move(done),
                                           body = std::move(body)](status st) mutable {
                if (!st) {
                    done(error_response(status_code::service_unavailable,
                                        "cannot store the rule: " + st.error().message()));
                    return;
                }
                done(json_response(body));
            });
        });

    routes.add_async(
        verb::delete_, std::string(path),
        [shared, unauthorized](const request& req, responder done) {
            if (!bearer_authorized(req, shared->admin_token)) {
                done(unauthorized());
                return;
            }
            auto params = query_of(req);
            if (!params) {
                done(error_response(status_code::bad_request, "query: malformed percent-encoding"));
                return;
            }
            auto type_it = params->find("type");
            auto value_it = params->find("value");
            auto type = type_it == params->end() ? std::nullopt
                                                 : auth::block_type_from_tbmq(type_it->second);
            if (!type) {
                done(error_response(
                    status_code::bad_request,
                    "type: required, one of CLIENT_ID, USERNAME, IP_ADDRESS, REGEX"));
                return;
            }
            if (value_it == params->end() || value_it->second.empty()) {
                done(error_response(status_code::bad_request, "value: required"));
                return;
            }
            shared->erase(*type, value_it->second, [done = std::move(done)](result<bool> removed) {
                if (!removed) {
                    done(error_response(status_code::service_unavailable,
                                        "cannot remove the rule: " + removed.error().message()));
                } else if (!removed.value()) {
                    done(error_response(status_code::not_found, "no such blocked client rule"));
                } else {
                    done(json_response(json::object()));
                }
            });
        });
}

}  // namespace starling::http
