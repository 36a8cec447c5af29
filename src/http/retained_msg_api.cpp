#include "http/retained_msg_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/retained-msg";

json to_json(const retained_view& m) {
    json props = nullptr;
    if (!m.user_properties.empty()) {
        props = json{{"props", json::array()}};
        for (const auto& [k, v] : m.user_properties) {
            props["props"].push_back({{"k", k}, {"v", v}});
        }
    }
    return {{"topic", m.topic},
            {"payload", m.payload},
            {"qos", m.qos},
            {"createdTime", m.created_time_ms},
            {"userProperties", std::move(props)}};
}

enum class sort_key { topic, qos, created_time };

struct list_request {
    page_request page;
    std::string filter = "#";
    std::string text;
    sort_key key = sort_key::topic;
    bool descending = false;
};

std::variant<list_request, response> list_request_of(const query_params& params) {
    list_request r;
    auto page = page_of(params);
    if (auto* bad = std::get_if<response>(&page)) {
        return std::move(*bad);
    }
    r.page = std::get<page_request>(page);
    if (auto it = params.find("topicFilter"); it != params.end()) {
        r.filter = it->second;
    }
    if (auto it = params.find("textSearch"); it != params.end()) {
        r.text = it->second;
    }
    if (auto it = params.find("sortProperty"); it != params.end()) {
        if (it->second == "topic") {
            r.key = sort_key::topic;
        } else if (it->second == "qos") {
            r.key = sort_key::qos;
        } else if (it->second == "createdTime") {
            r.key = sort_key::created_time;
        } else {
            return error_response(status_code::bad_request,
                                  "sortProperty: one of topic, qos, createdTime");
        }
    }
    auto descending = descending_of(params);
    if (auto* bad = std::get_if<response>(&descending)) {
        return std::move(*bad);
    }
    r.descending = std::get<bool>(descending);
    return r;
}

}  // namespace

void add_retained_msg_routes(router& routes, retained_msg_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("retained-message REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const retained_msg_api>(std::move(api));

    admin.add(verb::get, std::string(path), [shared](const request& req) {
        auto parsed_params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&parsed_params)) {
            return std::move(*bad);
        }
        const auto* params = &std::get<query_params>(parsed_params);
        if (auto it = params->find("topicName"); it != params->end()) {
            auto found = shared->find(it->second);
            if (!found) {
                return error_response(status_code::not_found, "no retained message on this topic");
            }
            return json_response(to_json(*found));
        }
        auto parsed = list_request_of(*params);
        if (auto* bad = std::get_if<response>(&parsed)) {
            return std::move(*bad);
        }
        const auto& want = std::get<list_request>(parsed);
        auto all = shared->list(want.filter);
        if (!all) {
            return error_response(status_code::bad_request,
                                  "topicFilter: not a valid MQTT topic filter");
        }
        if (!want.text.empty()) {
            std::erase_if(*all, [&](const retained_view& m) {
                return !contains_ignoring_case(m.topic, want.text);
            });
        }
        // Ties broken by topic (unique), so pages never overlap or skip.
        auto rank = [&](const retained_view& m) {
            const std::int64_t primary = want.key == sort_key::qos            ? m.qos
                                         : want.key == sort_key::created_time ? m.created_time_ms
                                                                              : 0;
            return std::pair<std::int64_t, std::string_view>(primary, m.topic);
        };
        std::sort(all->begin(), all->end(), [&](const retained_view& a, const retained_view& b) {
            const auto ka = rank(a);
            const auto kb = rank(b);
            return want.descending ? kb < ka : ka < kb;
        });
        const auto [first, last] = page_slice(all->size(), want.page);
        json data = json::array();
        for (std::size_t i = first; i < last; ++i) {
            data.push_back(to_json((*all)[i]));
        }
        return json_response(
            page_data(std::move(data), static_cast<std::int64_t>(all->size()), want.page));
    });

    admin.add_async(verb::delete_, std::string(path), [shared](const request& req, responder done) {
        auto params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&params)) {
            done(std::move(*bad));
            return;
        }
        const auto& q = std::get<query_params>(params);
        auto it = q.find("topicName");
        if (it == q.end() || it->second.empty()) {
            done(error_response(status_code::bad_request, "topicName: required"));
            return;
        }
        std::string topic = it->second;
        shared->erase(topic, [done = std::move(done), topic](result<bool> removed) {
            if (!removed) {
                spdlog::warn("DELETE {}: retained message of '{}' not deleted: {}", path, topic,
                             removed.error().message());
                done(error_response(
                    status_code::service_unavailable,
                    "cannot delete the retained message: " + removed.error().message()));
            } else if (!removed.value()) {
                done(error_response(status_code::not_found, "no retained message on this topic"));
            } else {
                spdlog::info("retained message of '{}' deleted through {}", topic, path);
                done(json_response(json::object()));
            }
        });
    });
}

}  // namespace starling::http
