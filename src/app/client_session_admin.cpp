#include "app/client_session_admin.h"

#include "mqtt/reason_code.h"
#include "mqtt/topic.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>

namespace starling::app {
namespace {

http::session_view view_of(const broker::session_admin::session_info& info) {
    const auto& r = info.record;
    return http::session_view{.client_id = r.client_id,
                              .session_id = r.session_id,
                              .connected = r.connected,
                              .application = r.type == client_type::application,
                              .node_id = r.node_id,
                              .subscriptions_count = info.subscriptions,
                              .connected_at_ms = r.connected_at_ms,
                              .disconnected_at_ms = r.disconnected_at_ms,
                              .client_address = r.client_address,
                              .persistent = r.persistent,
                              .session_expiry_interval = r.session_expiry_interval,
                              .protocol_version = r.protocol_version};
}

http::subscription_view view_of(const broker::stored_subscription& s) {
    return http::subscription_view{.topic_filter = s.share_group.empty()
                                                       ? s.filter
                                                       : "$share/" + s.share_group + "/" + s.filter,
                                   .qos = static_cast<int>(s.options.qos),
                                   .no_local = s.options.no_local,
                                   .retain_as_published = s.options.retain_as_published,
                                   .retain_handling = static_cast<int>(s.options.retain_handling),
                                   .subscription_id = s.subscription_id};
}

http::session_action_outcome outcome_of(broker::session_admin::outcome o) {
    using out = broker::session_admin::outcome;
    switch (o) {
        case out::done:
            return http::session_action_outcome::done;
        case out::not_found:
            return http::session_action_outcome::not_found;
        case out::not_connected:
            return http::session_action_outcome::not_connected;
        case out::connected:
            return http::session_action_outcome::connected;
        case out::unavailable:
            return http::session_action_outcome::unavailable;
    }
    return http::session_action_outcome::unavailable;
}

// The broker's SUBSCRIBE rules for one subscription; the 400 message naming it when refused.
std::variant<broker::stored_subscription, std::string> checked(const broker::settings& cfg,
                                                               const http::subscription_view& v,
                                                               std::size_t index) {
    const std::string where = "subscriptions[" + std::to_string(index) + "].";
    std::string_view filter = v.topic_filter;
    std::string_view group;
    if (mqtt::validate_topic_filter(filter) != mqtt::reason_code::success) {
        return where + "topicFilter: not a valid MQTT topic filter";
    }
    if (mqtt::is_shared(filter)) {
        auto shared = mqtt::parse_shared(filter);
        if (!shared) {
            return where + "topicFilter: not a valid shared subscription";
        }
        if (v.no_local) {
            return where + "options.noLocal: not allowed on a shared subscription";
        }
        group = shared->group;
        filter = shared->filter;
    }
    const auto levels = mqtt::topic_levels(filter);
    if ((!cfg.allow_root_multi_level_wildcard && filter == "#") ||
        (cfg.max_topic_segments != 0 && levels > cfg.max_topic_segments)) {
        return where +
               "topicFilter: refused by mqtt.subscription.allow-root-multi-level-wildcard or "
               "mqtt.topic.max-segments-count";
    }
    broker::stored_subscription sub{.filter = std::string(filter),
                                    .share_group = std::string(group),
                                    .subscription_id = v.subscription_id};
    sub.options.qos = static_cast<mqtt::qos>(std::min<int>(v.qos, cfg.max_qos));
    sub.options.no_local = v.no_local;
    sub.options.retain_as_published = v.retain_as_published;
    sub.options.retain_handling = static_cast<mqtt::retain_handling>(v.retain_handling);
    return sub;
}

}  // namespace

http::subscription_api subscription_admin(broker::session_admin& sessions,
                                          const broker::broker_core& core,
                                          http::api_access access) {
    return http::subscription_api{
        .list =
            [&sessions](
                const std::string& client_id,
                std::function<void(std::optional<std::vector<http::subscription_view>>)> done) {
                sessions.details(client_id, [done = std::move(done)](auto d) {
                    if (!d) {
                        done(std::nullopt);
                        return;
                    }
                    std::vector<http::subscription_view> out;
                    for (const auto& s : d->subscriptions) {
                        out.push_back(view_of(s));
                    }
                    done(std::move(out));
                });
            },
        .replace =
            [&sessions, &core](
                const std::string& client_id, std::vector<http::subscription_view> views,
                std::function<void(http::session_action_outcome, std::string)> done) {
                const auto& cfg = core.cfg();
                if (cfg.max_subscriptions_per_client != 0 &&
                    views.size() > cfg.max_subscriptions_per_client) {
                    done(http::session_action_outcome::done,
                         "subscriptions: more than the per-client maximum (" +
                             std::to_string(cfg.max_subscriptions_per_client) + ")");
                    return;
                }
                std::vector<broker::stored_subscription> subs;
                for (std::size_t i = 0; i < views.size(); ++i) {
                    auto sub = checked(cfg, views[i], i);
                    if (auto* problem = std::get_if<std::string>(&sub)) {
                        done(http::session_action_outcome::done, std::move(*problem));
                        return;
                    }
                    subs.push_back(std::get<broker::stored_subscription>(std::move(sub)));
                }
                sessions.set_subscriptions(
                    client_id, std::move(subs),
                    [done = std::move(done)](broker::session_admin::outcome o) {
                        done(outcome_of(o), {});
                    });
            },
        .access = std::move(access),
        .all =
            [&sessions](std::function<void(http::subscription_api::subscription_rows)> done) {
                // One details() per session (an actor's answer for a local connected client);
                // the last answer completes the list.
                struct gathering {
                    std::mutex mutex;
                    http::subscription_api::subscription_rows rows;
                    std::size_t waiting = 0;
                    std::function<void(http::subscription_api::subscription_rows)> done;
                };
                const auto infos = sessions.list();
                auto g = std::make_shared<gathering>();
                g->waiting = infos.size();
                g->done = std::move(done);
                if (infos.empty()) {
                    g->done({});
                    return;
                }
                for (const auto& info : infos) {
                    const auto client_id = info.record.client_id;
                    sessions.details(client_id, [g, client_id](auto d) {
                        bool last = false;
                        {
                            std::lock_guard lock(g->mutex);
                            if (d) {
                                for (const auto& s : d->subscriptions) {
                                    g->rows.emplace_back(client_id, view_of(s));
                                }
                            }
                            last = --g->waiting == 0;
                        }
                        if (last) {
                            g->done(std::move(g->rows));
                        }
                    });
                }
            }};
}

http::client_session_api client_session_admin(broker::session_admin& sessions,
                                              http::api_access access) {
    auto answer = [](std::function<void(http::session_action_outcome)> done) {
        return [done = std::move(done)](broker::session_admin::outcome o) { done(outcome_of(o)); };
    };
    return http::client_session_api{
        .list =
            [&sessions] {
                std::vector<http::session_view> out;
                for (const auto& info : sessions.list()) {
                    out.push_back(view_of(info));
                }
                return out;
            },
        .find = [&sessions](const std::string& client_id) -> std::optional<http::session_view> {
            auto info = sessions.find(client_id);
            if (!info) {
                return std::nullopt;
            }
            return view_of(*info);
        },
        .details =
            [&sessions](const std::string& client_id,
                        std::function<void(std::optional<http::session_details_view>)> done) {
                sessions.details(client_id,
                                 [done = std::move(done)](
                                     std::optional<broker::session_admin::session_details> d) {
                                     if (!d) {
                                         done(std::nullopt);
                                         return;
                                     }
                                     http::session_details_view view{.session = view_of(d->info),
                                                                     .in_flight = d->in_flight,
                                                                     .queued = d->queued};
                                     for (const auto& s : d->subscriptions) {
                                         view.subscriptions.push_back(view_of(s));
                                     }
                                     done(std::move(view));
                                 });
            },
        .disconnect =
            [&sessions, answer](const std::string& client_id, const std::string& session_id,
                                std::function<void(http::session_action_outcome)> done) {
                sessions.disconnect(client_id, session_id, answer(std::move(done)));
            },
        .remove =
            [&sessions, answer](const std::string& client_id, const std::string& session_id,
                                std::function<void(http::session_action_outcome)> done) {
                sessions.end_session(client_id, session_id, answer(std::move(done)));
            },
        .access = std::move(access)};
}

}  // namespace starling::app
