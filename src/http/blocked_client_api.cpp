#include "http/blocked_client_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;
constexpr std::string_view path = "/api/blockedClient";

json to_json(const auth::blocked_entry& e) {
    json j = {{"type", auth::tbmq_name(e.type)},
              {"value", e.value},
              {"expirationTime", e.expires_at_ms},
              {"description", e.description}};
    j["regexMatchTarget"] =
        e.type == auth::block_type::regex ? json(auth::tbmq_name(e.target)) : json(nullptr);
    return j;
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
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("blocked-client REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<blocked_client_api>(std::move(api));

    admin.add(verb::get, std::string(path), [shared](const request& req) {
        auto params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&params)) {
            return std::move(*bad);
        }
        auto page = page_of(std::get<query_params>(params));
        if (auto* bad = std::get_if<response>(&page)) {
            return std::move(*bad);
        }
        const auto& wanted = std::get<page_request>(page);
        const auto all = shared->list.list(shared->now_ms());
        const auto [first, last] = page_slice(all.size(), wanted);
        json data = json::array();
        for (std::size_t i = first; i < last; ++i) {
            data.push_back(to_json(all[i]));
        }
        return json_response(
            page_data(std::move(data), static_cast<std::int64_t>(all.size()), wanted));
    });

    admin.add_async(verb::post, std::string(path), [shared](const request& req, responder done) {
        auto parsed = entry_from_body(req.body());
        if (auto* bad = std::get_if<response>(&parsed)) {
            done(std::move(*bad));
            return;
        }
        auto entry = std::get<auth::blocked_entry>(std::move(parsed));
        entry.value = auth::blocked_clients::canonical_value(entry.type, entry.value);
        json body = to_json(entry);
        shared->put(std::move(entry),
                    [done = std::move(done), body = std::move(body)](status st) mutable {
                        if (!st) {
                            done(error_response(status_code::service_unavailable,
                                                "cannot store the rule: " + st.error().message()));
                            return;
                        }
                        done(json_response(body));
                    });
    });

    admin.add_async(verb::delete_, std::string(path), [shared](const request& req, responder done) {
        auto parsed_params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&parsed_params)) {
            done(std::move(*bad));
            return;
        }
        const auto* params = &std::get<query_params>(parsed_params);
        auto type_it = params->find("type");
        auto value_it = params->find("value");
        auto type =
            type_it == params->end() ? std::nullopt : auth::block_type_from_tbmq(type_it->second);
        if (!type) {
            done(error_response(status_code::bad_request,
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
