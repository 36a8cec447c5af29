#include "http/subscription_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/subscription";

// MQTT 5's largest Subscription Identifier (a four-byte variable byte integer).
constexpr std::int64_t max_subscription_id = 268'435'455;

response bad(std::string message) { return error_response(status_code::bad_request, message); }

// QoS as a number or as TBMQ's MqttQoS name; nullopt otherwise.
std::optional<int> qos_of(const json& v) {
    if (v.is_number_integer()) {
        const auto q = v.get<std::int64_t>();
        return q >= 0 && q <= 2 ? std::optional<int>(static_cast<int>(q)) : std::nullopt;
    }
    if (v.is_string()) {
        static constexpr std::string_view names[] = {"AT_MOST_ONCE", "AT_LEAST_ONCE",
                                                     "EXACTLY_ONCE"};
        for (int i = 0; i < 3; ++i) {
            if (v.get_ref<const std::string&>() == names[i]) {
                return i;
            }
        }
    }
    return std::nullopt;
}

std::variant<subscription_view, response> subscription_of(const json& item, std::size_t index) {
    const std::string where = "subscriptions[" + std::to_string(index) + "]";
    if (!item.is_object()) {
        return bad(where + ": expected an object");
    }
    subscription_view s;
    auto filter = item.find("topicFilter");
    if (filter == item.end() || !filter->is_string() ||
        filter->get_ref<const std::string&>().empty()) {
        return bad(where + ".topicFilter: a non-empty string is required");
    }
    s.topic_filter = filter->get<std::string>();
    auto qos = item.find("qos");
    if (qos == item.end() || !qos_of(*qos)) {
        return bad(where + ".qos: 0, 1, 2 or AT_MOST_ONCE, AT_LEAST_ONCE, EXACTLY_ONCE");
    }
    s.qos = *qos_of(*qos);
    if (auto options = item.find("options"); options != item.end() && !options->is_null()) {
        if (!options->is_object()) {
            return bad(where + ".options: expected an object");
        }
        for (auto [name, field] : {std::pair{"noLocal", &s.no_local},
                                   std::pair{"retainAsPublish", &s.retain_as_published}}) {
            if (auto it = options->find(name); it != options->end() && !it->is_null()) {
                if (!it->is_boolean()) {
                    return bad(where + ".options." + name + ": true or false");
                }
                *field = it->get<bool>();
            }
        }
        if (auto it = options->find("retainHandling"); it != options->end() && !it->is_null()) {
            if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
                it->get<std::int64_t>() > 2) {
                return bad(where + ".options.retainHandling: 0, 1 or 2");
            }
            s.retain_handling = it->get<int>();
        }
    }
    if (auto id = item.find("subscriptionId"); id != item.end() && !id->is_null()) {
        if (!id->is_number_integer() || id->get<std::int64_t>() < 1 ||
            id->get<std::int64_t>() > max_subscription_id) {
            return bad(where + ".subscriptionId: 1 to 268435455");
        }
        s.subscription_id = id->get<std::uint32_t>();
    }
    return s;
}

// GET ?pageSize=&page=&textSearch=: one page of every session's subscriptions.
void all_subscriptions(const subscription_api& api, const query_params& q, responder done) {
    auto page = page_of(q);
    if (auto* err = std::get_if<response>(&page)) {
        done(std::move(*err));
        return;
    }
    const auto want = std::get<page_request>(page);
    const auto text_it = q.find("textSearch");
    std::string text = text_it == q.end() ? std::string() : text_it->second;
    api.all([want, text = std::move(text),
             done = std::move(done)](subscription_api::subscription_rows rows) {
        if (!text.empty()) {
            std::erase_if(rows, [&text](const auto& row) {
                return !contains_ignoring_case(row.second.topic_filter, text);
            });
        }
        std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
            return std::tie(a.first, a.second.topic_filter) <
                   std::tie(b.first, b.second.topic_filter);
        });
        const auto [first, last] = page_slice(rows.size(), want);
        json data = json::array();
        for (std::size_t i = first; i < last; ++i) {
            json row = to_json(rows[i].second);
            row["clientId"] = rows[i].first;
            data.push_back(std::move(row));
        }
        done(json_response(
            page_data(std::move(data), static_cast<std::int64_t>(rows.size()), want)));
    });
}

}  // namespace

std::variant<std::pair<std::string, std::vector<subscription_view>>, response>
parse_subscription_update(std::string_view text) {
    const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) {
        return bad("body: expected a JSON object");
    }
    auto client = body.find("clientId");
    if (client == body.end() || !client->is_string() ||
        client->get_ref<const std::string&>().empty()) {
        return bad("clientId: a non-empty string is required");
    }
    auto list = body.find("subscriptions");
    if (list == body.end() || !list->is_array()) {
        return bad("subscriptions: expected an array (empty removes every subscription)");
    }
    std::vector<subscription_view> subs;
    subs.reserve(list->size());
    for (std::size_t i = 0; i < list->size(); ++i) {
        auto s = subscription_of((*list)[i], i);
        if (auto* err = std::get_if<response>(&s)) {
            return std::move(*err);
        }
        subs.push_back(std::get<subscription_view>(std::move(s)));
    }
    return std::pair{client->get<std::string>(), std::move(subs)};
}

void add_subscription_routes(router& routes, subscription_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("subscription REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const subscription_api>(std::move(api));

    admin.add_async(verb::get, std::string(path), [shared](const request& req, responder done) {
        auto parsed = parsed_query(req);
        if (auto* err = std::get_if<response>(&parsed)) {
            done(std::move(*err));
            return;
        }
        const auto& q = std::get<query_params>(parsed);
        auto client = q.find("clientId");
        if (client == q.end() && (q.contains("pageSize") || q.contains("page"))) {
            all_subscriptions(*shared, q, std::move(done));
            return;
        }
        if (client == q.end() || client->second.empty()) {
            done(bad("clientId: required (or pageSize, for every session's subscriptions)"));
            return;
        }
        shared->list(client->second,
                     [done = std::move(done)](std::optional<std::vector<subscription_view>> subs) {
                         if (!subs) {
                             done(error_response(status_code::not_found, "no such session"));
                             return;
                         }
                         json out = json::array();
                         for (const auto& s : *subs) {
                             out.push_back(to_json(s));
                         }
                         done(json_response(out));
                     });
    });

    admin.add_async(verb::post, std::string(path), [shared](const request& req, responder done) {
        auto parsed = parse_subscription_update(req.body());
        if (auto* err = std::get_if<response>(&parsed)) {
            done(std::move(*err));
            return;
        }
        // Named copies, not a structured binding: the lambda below captures client_id.
        auto update =
            std::get<std::pair<std::string, std::vector<subscription_view>>>(std::move(parsed));
        std::string client_id = std::move(update.first);
        auto subs = std::move(update.second);
        const auto count = subs.size();
        spdlog::info("subscriptions of client {} replaced through {} ({} given)", client_id, path,
                     count);
        shared->replace(
            client_id, std::move(subs),
            [done = std::move(done), client_id, count](session_action_outcome o,
                                                       std::string problem) {
                if (!problem.empty()) {
                    done(bad(std::move(problem)));
                } else if (o == session_action_outcome::done) {
                    done(json_response({{"clientId", client_id}, {"subscriptions", count}}));
                } else if (o == session_action_outcome::unavailable) {
                    done(error_response(status_code::service_unavailable,
                                        "the request could not be written to the message log"));
                } else {
                    done(error_response(status_code::not_found, "no such session"));
                }
            });
    });
}

}  // namespace starling::http
