#include "http/client_session_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/client-session";

json version_json(std::uint32_t v) {
    switch (v) {
        case 3:
            return "3.1";
        case 4:
            return "3.1.1";
        case 5:
            return "5.0";
        default:
            return nullptr;
    }
}

json to_json(const session_view& s) {
    return {{"id", s.client_id},
            {"clientId", s.client_id},
            {"sessionId", s.session_id},
            {"connectionState", s.connected ? "CONNECTED" : "DISCONNECTED"},
            {"clientType", s.application ? "APPLICATION" : "DEVICE"},
            {"nodeId", s.node_id},
            {"subscriptionsCount", s.subscriptions_count},
            {"connectedAt", s.connected_at_ms},
            {"disconnectedAt", s.disconnected_at_ms},
            {"clientIpAdr", s.client_address},
            {"persistent", s.persistent},
            {"sessionExpiryInterval", s.session_expiry_interval},
            {"mqttVersion", version_json(s.protocol_version)}};
}

constexpr std::string_view qos_names[] = {"AT_MOST_ONCE", "AT_LEAST_ONCE", "EXACTLY_ONCE"};

}  // namespace

json to_json(const subscription_view& s) {
    return {{"topicFilter", s.topic_filter},
            {"qos", qos_names[std::clamp(s.qos, 0, 2)]},
            {"options",
             {{"noLocal", s.no_local},
              {"retainAsPublish", s.retain_as_published},
              {"retainHandling", s.retain_handling}}},
            {"subscriptionId", s.subscription_id ? json(*s.subscription_id) : json(nullptr)}};
}

namespace {

json to_json(const session_details_view& d) {
    json out = to_json(d.session);
    json subs = json::array();
    for (const auto& s : d.subscriptions) {
        subs.push_back(to_json(s));
    }
    out["subscriptions"] = std::move(subs);
    out["inFlight"] = d.in_flight ? json(*d.in_flight) : json(nullptr);
    out["queued"] = d.queued ? json(*d.queued) : json(nullptr);
    return out;
}

enum class sort_key {
    client_id,
    connection_state,
    client_type,
    node_id,
    subscriptions,
    connected_at,
    disconnected_at,
    address
};

struct list_request {
    page_request page;
    std::string text;
    std::optional<bool> connected;
    std::optional<bool> application;
    std::optional<std::string> node_id;
    std::string address;
    sort_key key = sort_key::client_id;
    bool descending = false;
};

std::variant<list_request, response> list_request_of(const query_params& params) {
    list_request r;
    auto page = page_of(params);
    if (auto* bad = std::get_if<response>(&page)) {
        return std::move(*bad);
    }
    r.page = std::get<page_request>(page);
    if (auto it = params.find("textSearch"); it != params.end()) {
        r.text = it->second;
    }
    if (auto it = params.find("connectionState"); it != params.end()) {
        if (it->second != "CONNECTED" && it->second != "DISCONNECTED") {
            return error_response(status_code::bad_request,
                                  "connectionState: CONNECTED or DISCONNECTED");
        }
        r.connected = it->second == "CONNECTED";
    }
    if (auto it = params.find("clientType"); it != params.end()) {
        if (it->second != "DEVICE" && it->second != "APPLICATION") {
            return error_response(status_code::bad_request, "clientType: DEVICE or APPLICATION");
        }
        r.application = it->second == "APPLICATION";
    }
    if (auto it = params.find("nodeId"); it != params.end()) {
        r.node_id = it->second;
    }
    if (auto it = params.find("clientIpAddress"); it != params.end()) {
        r.address = it->second;
    }
    if (auto it = params.find("sortProperty"); it != params.end()) {
        static constexpr std::pair<std::string_view, sort_key> keys[] = {
            {"clientId", sort_key::client_id},
            {"id", sort_key::client_id},
            {"connectionState", sort_key::connection_state},
            {"clientType", sort_key::client_type},
            {"nodeId", sort_key::node_id},
            {"subscriptionsCount", sort_key::subscriptions},
            {"connectedAt", sort_key::connected_at},
            {"disconnectedAt", sort_key::disconnected_at},
            {"clientIpAdr", sort_key::address}};
        auto found = std::find_if(std::begin(keys), std::end(keys),
                                  [&](const auto& k) { return k.first == it->second; });
        if (found == std::end(keys)) {
            return error_response(
                status_code::bad_request,
                "sortProperty: one of clientId, connectionState, clientType, nodeId, "
                "subscriptionsCount, connectedAt, disconnectedAt, clientIpAdr");
        }
        r.key = found->second;
    }
    auto descending = descending_of(params);
    if (auto* bad = std::get_if<response>(&descending)) {
        return std::move(*bad);
    }
    r.descending = std::get<bool>(descending);
    return r;
}

bool kept(const list_request& want, const session_view& s) {
    return (want.text.empty() || contains_ignoring_case(s.client_id, want.text)) &&
           (!want.connected || *want.connected == s.connected) &&
           (!want.application || *want.application == s.application) &&
           (!want.node_id || *want.node_id == s.node_id) &&
           (want.address.empty() || s.client_address.find(want.address) != std::string::npos);
}

// The sort key of `s` as (number, text); ties are broken by client id (unique), so pages never
// overlap or skip.
std::tuple<std::int64_t, std::string_view, std::string_view> rank(sort_key key,
                                                                  const session_view& s) {
    switch (key) {
        case sort_key::client_id:
            return {0, {}, s.client_id};
        case sort_key::connection_state:
            return {s.connected ? 0 : 1, {}, s.client_id};
        case sort_key::client_type:
            return {s.application ? 0 : 1, {}, s.client_id};
        case sort_key::node_id:
            return {0, s.node_id, s.client_id};
        case sort_key::subscriptions:
            return {static_cast<std::int64_t>(s.subscriptions_count), {}, s.client_id};
        case sort_key::connected_at:
            return {s.connected_at_ms, {}, s.client_id};
        case sort_key::disconnected_at:
            return {s.disconnected_at_ms, {}, s.client_id};
        case sort_key::address:
            return {0, s.client_address, s.client_id};
    }
    return {0, {}, s.client_id};
}

// The clientId (required) and sessionId (optional) of an action; or the 400.
std::variant<std::pair<std::string, std::string>, response> action_target(const request& req) {
    auto params = parsed_query(req);
    if (auto* bad = std::get_if<response>(&params)) {
        return std::move(*bad);
    }
    const auto& q = std::get<query_params>(params);
    auto client = q.find("clientId");
    if (client == q.end() || client->second.empty()) {
        return error_response(status_code::bad_request, "clientId: required");
    }
    auto session = q.find("sessionId");
    return std::pair{client->second, session == q.end() ? std::string() : session->second};
}

response outcome_response(session_action_outcome outcome, std::string_view what,
                          const std::string& client_id) {
    switch (outcome) {
        case session_action_outcome::done:
            return json_response(json::object());
        case session_action_outcome::not_found:
            return error_response(status_code::not_found, "no such session");
        case session_action_outcome::not_connected:
            return error_response(status_code::conflict, "the client is not connected");
        case session_action_outcome::connected:
            return error_response(status_code::conflict,
                                  "the session is connected: disconnect the client first");
        case session_action_outcome::unavailable:
            spdlog::warn("{} of client {}: the message log refused the request", what, client_id);
            return error_response(status_code::service_unavailable,
                                  "the request could not be written to the message log");
    }
    return error_response(status_code::service_unavailable, "unknown outcome");
}

void add_action(admin_routes& admin, std::string route, client_session_api::action act,
                std::string_view what) {
    admin.add_async(verb::delete_, std::move(route),
                    [act = std::move(act), what](const request& req, responder done) {
                        auto target = action_target(req);
                        if (auto* bad = std::get_if<response>(&target)) {
                            done(std::move(*bad));
                            return;
                        }
                        // Named copies, not a structured binding: lambdas may not capture
                        // bindings before C++20 compilers that implement P1091 (clang 16).
                        auto ids = std::get<std::pair<std::string, std::string>>(std::move(target));
                        std::string client_id = std::move(ids.first);
                        std::string session_id = std::move(ids.second);
                        spdlog::info("{} of client {} requested through {}", what, client_id, path);
                        act(client_id, session_id,
                            [done = std::move(done), what, client_id](session_action_outcome o) {
                                done(outcome_response(o, what, client_id));
                            });
                    });
}

}  // namespace

void add_client_session_routes(router& routes, client_session_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("client-session REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const client_session_api>(std::move(api));

    admin.add(verb::get, std::string(path), [shared](const request& req) {
        auto parsed_params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&parsed_params)) {
            return std::move(*bad);
        }
        const auto& params = std::get<query_params>(parsed_params);
        if (auto it = params.find("clientId"); it != params.end()) {
            auto found = shared->find(it->second);
            if (!found) {
                return error_response(status_code::not_found, "no such session");
            }
            return json_response(to_json(*found));
        }
        auto parsed = list_request_of(params);
        if (auto* bad = std::get_if<response>(&parsed)) {
            return std::move(*bad);
        }
        const auto& want = std::get<list_request>(parsed);
        auto all = shared->list();
        std::erase_if(all, [&](const session_view& s) { return !kept(want, s); });
        std::sort(all.begin(), all.end(), [&](const session_view& a, const session_view& b) {
            const auto ka = rank(want.key, a);
            const auto kb = rank(want.key, b);
            return want.descending ? kb < ka : ka < kb;
        });
        const auto [first, last] = page_slice(all.size(), want.page);
        json data = json::array();
        for (std::size_t i = first; i < last; ++i) {
            data.push_back(to_json(all[i]));
        }
        return json_response(
            page_data(std::move(data), static_cast<std::int64_t>(all.size()), want.page));
    });

    admin.add_async(
        verb::get, std::string(path) + "/details", [shared](const request& req, responder done) {
            auto parsed_params = parsed_query(req);
            if (auto* bad = std::get_if<response>(&parsed_params)) {
                done(std::move(*bad));
                return;
            }
            const auto& params = std::get<query_params>(parsed_params);
            auto it = params.find("clientId");
            if (it == params.end() || it->second.empty()) {
                done(error_response(status_code::bad_request, "clientId: required"));
                return;
            }
            shared->details(it->second,
                            [done = std::move(done)](std::optional<session_details_view> d) {
                                done(d ? json_response(to_json(*d))
                                       : error_response(status_code::not_found, "no such session"));
                            });
        });

    add_action(
        admin, std::string(path) + "/disconnect",
        [shared](const std::string& c, const std::string& s,
                 std::function<void(session_action_outcome)> done) {
            shared->disconnect(c, s, std::move(done));
        },
        "disconnect");
    add_action(
        admin, std::string(path) + "/remove",
        [shared](const std::string& c, const std::string& s,
                 std::function<void(session_action_outcome)> done) {
            shared->remove(c, s, std::move(done));
        },
        "session removal");
}

}  // namespace starling::http
