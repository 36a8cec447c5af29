// libFuzzer target for the HTTP router and the /api handlers' request parsing (JSON bodies,
// query strings, URL-encoded path parts): credentials, blocked clients, unauthorized clients,
// retained messages, client sessions, subscriptions, APPLICATION shared subscriptions,
// publish, drops and quota (credentials also: one by id, password change, bulk import; every
// session's subscriptions paged), plus the actuator
// routes, behind the admin bearer token, as the daemon registers them.
//
// Input: one mode byte, then the request target up to the first '\n', then the body.
//   bits 0-1  method: GET, POST, DELETE, PUT
//   bit 2     send the right bearer token (else none)
//   bit 3     send it as TBMQ's X-Authorization header instead of Authorization
//
// The handlers run against in-memory doubles that answer synchronously (a metadata store with a
// map of credentials, a blocked-clients list whose writes apply at once). The bcrypt worker pool
// is stopped, so a credentials POST is parsed and validated in full, then answered 503 instead
// of spending 60 ms hashing: parsing is what is under test.
//
// Properties checked (an abort is a finding):
//   1. no crash, leak or sanitizer report on any input (a handler that throws is turned into a
//      500 by the router: also a finding here, the handlers must validate, not throw);
//   2. the responder is called exactly once, before dispatch returns (every double is
//      synchronous);
//   3. every /api answer is JSON with a numeric "status" on errors.

#include "auth/blocked_clients.h"
#include "auth/worker_pool.h"
#include "http/actuator.h"
#include "http/app_shared_subs_api.h"
#include "http/blocked_client_api.h"
#include "http/client_session_api.h"
#include "http/credentials_api.h"
#include "http/drops_api.h"
#include "http/health.h"
#include "http/publish_api.h"
#include "http/quota_api.h"
#include "http/retained_msg_api.h"
#include "http/router.h"
#include "http/subscription_api.h"
#include "http/timeseries_api.h"
#include "http/unauthorized_client_api.h"
#include "metrics/registry.h"
#include "starling/metadata_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>

namespace {

using namespace starling;

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_http_api invariant violated: %s\n", what);
        std::abort();
    }
}

constexpr std::string_view token = "fuzz-admin-token";

// Synchronous, in-memory metadata store: only credentials keep state.
class memory_store final : public metadata_store {
  public:
    void save_credentials(client_credentials c, done_callback done) override {
        credentials_[c.credentials_id] = std::move(c);
        done({});
    }
    void delete_credentials(std::string id, done_callback done) override {
        credentials_.erase(id);
        done({});
    }
    void find_credentials(std::vector<std::string> ids,
                          callback<std::vector<client_credentials>> done) override {
        std::vector<client_credentials> out;
        for (const auto& id : ids) {
            if (auto it = credentials_.find(id); it != credentials_.end()) {
                out.push_back(it->second);
            }
        }
        done(std::move(out));
    }
    void list_credentials(std::size_t limit, std::size_t offset,
                          callback<std::vector<client_credentials>> done) override {
        std::vector<client_credentials> out;
        std::size_t i = 0;
        for (const auto& [id, c] : credentials_) {
            if (i++ >= offset && out.size() < limit) {
                out.push_back(c);
            }
        }
        done(std::move(out));
    }
    void count_credentials(callback<std::size_t> done) override { done(credentials_.size()); }
    void save_session_context(session_context, done_callback done) override { done({}); }
    void load_session_context(std::string, callback<std::optional<session_context>> done) override {
        done(std::optional<session_context>());
    }
    void delete_session_context(std::string, done_callback done) override { done({}); }
    void save_application_context(application_session_context, done_callback done) override {
        done({});
    }
    void load_application_context(
        std::string, callback<std::optional<application_session_context>> done) override {
        done(std::optional<application_session_context>());
    }
    void delete_application_context(std::string, done_callback done) override { done({}); }
    void save_application_shared_subscription(application_shared_subscription,
                                              done_callback done) override {
        done({});
    }
    void find_application_shared_subscription(
        std::string, callback<std::optional<application_shared_subscription>> done) override {
        done(std::optional<application_shared_subscription>());
    }
    void list_application_shared_subscriptions(
        callback<std::vector<application_shared_subscription>> done) override {
        done(std::vector<application_shared_subscription>{
            {.id = "s1", .topic_filter = "a/+", .partitions = 2, .name = "\xff"}});
    }
    void delete_application_shared_subscription(std::string id, callback<bool> done) override {
        done(id == "s1");
    }
    void save_integration(integration_row row, done_callback done) override {
        if (row.id.empty() || row.type.empty()) {
            done(make_error_code(std::errc::invalid_argument));
            return;
        }
        auto [it, inserted] = integrations_.try_emplace(row.id, row);
        if (!inserted) {
            row.created_time_ms = it->second.created_time_ms;  // keeps its first value
            it->second = std::move(row);
        }
        done({});
    }
    void list_integrations(callback<std::vector<integration_row>> done) override {
        std::vector<integration_row> out;
        for (const auto& [id, row] : integrations_) {
            out.push_back(row);
        }
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
            return std::tie(a.created_time_ms, a.id) < std::tie(b.created_time_ms, b.id);
        });
        done(std::move(out));
    }
    void delete_integration(std::string id, callback<bool> done) override {
        done(integrations_.erase(id) > 0);
    }
    void record_unauthorized(unauthorized_client c, done_callback done) override {
        unauthorized_[c.client_id] = std::move(c);
        done({});
    }
    void list_unauthorized(unauthorized_query q, callback<unauthorized_page> done) override {
        unauthorized_page page;
        for (const auto& [id, c] : unauthorized_) {
            if (id.find(q.client_id_contains) == std::string::npos) {
                continue;
            }
            if (page.total++ >= q.offset && page.rows.size() < q.limit) {
                page.rows.push_back(c);
            }
        }
        done(std::move(page));
    }
    void find_unauthorized(std::string id,
                           callback<std::optional<unauthorized_client>> done) override {
        auto it = unauthorized_.find(id);
        done(it == unauthorized_.end() ? std::optional<unauthorized_client>()
                                       : std::optional<unauthorized_client>(it->second));
    }
    void delete_unauthorized(std::string id, callback<bool> done) override {
        done(unauthorized_.erase(id) > 0);
    }
    void clear_unauthorized(callback<std::size_t> done) override {
        const auto n = unauthorized_.size();
        unauthorized_.clear();
        done(n);
    }
    void save_stats(std::vector<stats_point> points, done_callback done) override {
        stats_.insert(stats_.end(), points.begin(), points.end());
        done({});
    }
    void read_stats(stats_query q, callback<std::vector<stats_point>> done) override {
        std::vector<stats_point> out;
        for (const auto& p : stats_) {
            if (out.size() < q.limit && p.ts_ms >= q.start_ms && p.ts_ms <= q.end_ms &&
                (q.entity_id.empty() || p.entity_id == q.entity_id) &&
                std::find(q.keys.begin(), q.keys.end(), p.key) != q.keys.end()) {
                out.push_back(p);
            }
        }
        done(std::move(out));
    }
    void delete_stats_before(std::int64_t ts, callback<std::size_t> done) override {
        done(static_cast<std::size_t>(
            std::erase_if(stats_, [ts](const stats_point& p) { return p.ts_ms < ts; })));
    }
    void put_setting(std::string, std::string, done_callback done) override { done({}); }
    void get_setting(std::string, callback<std::optional<std::string>> done) override {
        done(std::optional<std::string>());
    }
    bool healthy() const override { return true; }

    // Each input starts from the same state: no credentials, two unauthorized rows (so the
    // GET/DELETE-by-id paths have something to find).
    void clear() {
        credentials_.clear();
        integrations_.clear();
        unauthorized_.clear();
        // Two nodes' points, in read_stats order (key, ts, entity), for /api/timeseries.
        stats_.clear();
        for (std::int64_t ts : {0, 60000, 120000}) {
            for (const char* node : {"n1", "n2"}) {
                stats_.push_back({.entity_id = node, .key = "sessions", .ts_ms = ts, .value = ts});
            }
        }
        for (const auto* id : {"dev-1", "plant/7+a b"}) {
            unauthorized_[id] = unauthorized_client{
                .client_id = id, .ip_address = "10.0.0.1", .ts_ms = 1, .reason = "r"};
        }
    }

  private:
    std::map<std::string, client_credentials> credentials_;
    std::vector<stats_point> stats_;
    std::map<std::string, unauthorized_client> unauthorized_;
    std::map<std::string, integration_row> integrations_;
};

// Everything the routes reference, built once; per-input state is cleared in reset().
struct fixture {
    fixture() : pool("fuzz-pool", 1, 1), drops(system_clock::instance()) {
        pool.stop();  // submit() now refuses: no bcrypt in the loop
        health.set_lifecycle(http::lifecycle::running);
        http::add_actuator_routes(routes, health, metrics);
        http::add_credentials_routes(routes, store, pool, nullptr, std::string(token));
        http::add_drops_routes(routes, drops, std::string(token));
        http::add_quota_routes(routes, nullptr, std::string(token));
        http::add_unauthorized_client_routes(routes, store, std::string(token));
        http::add_app_shared_subs_routes(routes, store, std::string(token));
        http::add_timeseries_routes(routes, store, std::string(token));
        http::add_retained_msg_routes(
            routes,
            http::retained_msg_api{
                .list = [this](const std::string& filter)
                    -> std::optional<std::vector<http::retained_view>> {
                    if (filter.empty()) {
                        return std::nullopt;  // stands for an invalid filter
                    }
                    std::vector<http::retained_view> out;
                    for (const auto& [topic, m] : retained) {
                        if (filter == "#" || filter == topic) {
                            out.push_back(m);
                        }
                    }
                    return out;
                },
                .find = [this](const std::string& topic) -> std::optional<http::retained_view> {
                    auto it = retained.find(topic);
                    return it == retained.end() ? std::nullopt : std::optional(it->second);
                },
                .erase =
                    [this](std::string topic, std::function<void(result<bool>)> done) {
                        done(result<bool>(retained.erase(topic) > 0));
                    },
                .access = std::string(token)});
        auto session_action = [this](const std::string& client_id, const std::string& session_id,
                                     std::function<void(http::session_action_outcome)> done) {
            auto it = sessions.find(client_id);
            if (it == sessions.end() ||
                (!session_id.empty() && session_id != it->second.session_id)) {
                done(http::session_action_outcome::not_found);
                return;
            }
            done(it->second.connected ? http::session_action_outcome::done
                                      : http::session_action_outcome::not_connected);
        };
        http::add_client_session_routes(
            routes,
            http::client_session_api{
                .list =
                    [this] {
                        std::vector<http::session_view> out;
                        for (const auto& [id, s] : sessions) {
                            out.push_back(s);
                        }
                        return out;
                    },
                .find = [this](const std::string& id) -> std::optional<http::session_view> {
                    auto it = sessions.find(id);
                    return it == sessions.end() ? std::nullopt : std::optional(it->second);
                },
                .details =
                    [this](const std::string& id,
                           std::function<void(std::optional<http::session_details_view>)> done) {
                        auto it = sessions.find(id);
                        if (it == sessions.end()) {
                            done(std::nullopt);
                            return;
                        }
                        done(http::session_details_view{
                            .session = it->second,
                            .subscriptions = {{.topic_filter = "$share/g/a/#", .qos = 7}},
                            .in_flight = 1});
                    },
                .disconnect = session_action,
                .remove = session_action,
                .access = std::string(token)});
        http::add_subscription_routes(
            routes,
            http::subscription_api{
                .list =
                    [this](const std::string& id,
                           std::function<void(std::optional<std::vector<http::subscription_view>>)>
                               done) {
                        if (sessions.count(id) == 0) {
                            done(std::nullopt);
                            return;
                        }
                        done(std::vector<http::subscription_view>{{.topic_filter = "a/+"}});
                    },
                .replace =
                    [this](const std::string& id, std::vector<http::subscription_view> subs,
                           std::function<void(http::session_action_outcome, std::string)> done) {
                        for (const auto& sub : subs) {
                            check(!sub.topic_filter.empty() && sub.qos >= 0 && sub.qos <= 2 &&
                                      sub.retain_handling >= 0 && sub.retain_handling <= 2,
                                  "a subscription passed parsing with a bad field");
                        }
                        done(sessions.count(id) != 0 ? http::session_action_outcome::done
                                                     : http::session_action_outcome::not_found,
                             subs.size() > 3 ? "subscriptions: too many" : "");
                    },
                .access = std::string(token),
                .all =
                    [this](std::function<void(http::subscription_api::subscription_rows)> done) {
                        http::subscription_api::subscription_rows rows;
                        for (const auto& [id, session] : sessions) {
                            rows.emplace_back(id, http::subscription_view{.topic_filter = "a/#"});
                        }
                        done(std::move(rows));
                    }});
        http::add_publish_routes(
            routes, http::publish_api{
                        .publish =
                            [](http::publish_request r,
                               std::function<void(http::publish_outcome, std::string)> done) {
                                check(!r.topic.empty() && r.qos >= 0 && r.qos <= 2,
                                      "a publish request passed parsing with a bad topic or QoS");
                                done(r.retain ? http::publish_outcome::retained_refused
                                              : http::publish_outcome::published,
                                     "m");
                            },
                        .access = std::string(token)});
        http::add_blocked_client_routes(
            routes, http::blocked_client_api{
                        .list = *blocked,
                        .put =
                            [this](auth::blocked_entry e, std::function<void(status)> done) {
                                (void)blocked->add(std::move(e));
                                done({});
                            },
                        .erase =
                            [this](auth::block_type type, std::string value,
                                   std::function<void(result<bool>)> done) {
                                done(result<bool>(blocked->remove(type, value)));
                            },
                        .now_ms = [] { return std::int64_t{1'700'000'000'000}; }});
    }

    void reset() {
        store.clear();
        retained.clear();
        retained["a/1"] = {.topic = "a/1", .payload = "\xff", .qos = 1, .created_time_ms = 2};
        retained["b"] = {.topic = "b", .payload = "x", .user_properties = {{"k", "v"}}};
        // Entries from the last input (expiration times past "now" included: purge everything).
        for (const auto& e : blocked->list(0)) {
            (void)blocked->remove(e.type, e.value);
        }
        (void)blocked->purge_expired(std::numeric_limits<std::int64_t>::max());
    }

    memory_store store;
    std::map<std::string, http::retained_view> retained;
    // Client ids that are not UTF-8 or contain query syntax, so the JSON and the lookups see them.
    std::map<std::string, http::session_view> sessions{
        {"dev-1",
         {.client_id = "dev-1", .session_id = "s1", .connected = true, .protocol_version = 5}},
        {"x&y=\xfe", {.client_id = "x&y=\xfe", .application = true, .protocol_version = 9}}};
    auth::worker_pool pool;
    metrics::drop_log drops;
    metrics::registry metrics;
    http::health_registry health;
    std::unique_ptr<auth::blocked_clients> blocked = std::make_unique<auth::blocked_clients>();
    http::router routes;
};

fixture& the_fixture() {
    static fixture f;
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    auto& f = the_fixture();
    f.reset();
    const std::uint8_t mode = data[0];
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    const auto newline = rest.find('\n');
    const auto target = rest.substr(0, newline);
    const auto body =
        newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);

    static constexpr http::verb methods[] = {http::verb::get, http::verb::post, http::verb::delete_,
                                             http::verb::put};
    http::request req;
    req.method(methods[mode & 0x3]);
    req.target(boost::beast::string_view(target.data(), target.size()));
    req.version(11);
    if ((mode & 0x4) != 0) {
        const std::string value = "Bearer " + std::string(token);
        req.set((mode & 0x8) != 0 ? "X-Authorization" : "Authorization", value);
    }
    req.set(boost::beast::http::field::content_type, "application/json");
    req.body() = std::string(body);
    req.prepare_payload();

    int answers = 0;
    http::response answer;
    f.routes.dispatch(req, [&](http::response res) {
        ++answers;
        answer = std::move(res);
    });
    check(answers == 1, "exactly one synchronous answer");
    const auto code = static_cast<unsigned>(answer.result_int());
    check(code >= 200 && code < 600, "an HTTP status");
    check(code != 500, "no handler threw");
    if (target.starts_with("/api") && code >= 400 && code != 404 && code != 405) {
        auto parsed = nlohmann::json::parse(answer.body(), nullptr, false);
        check(!parsed.is_discarded() && parsed.contains("status"), "API errors are JSON");
    }
    return 0;
}
