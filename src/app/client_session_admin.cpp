#include "app/client_session_admin.h"

#include <utility>

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

}  // namespace

http::client_session_api client_session_admin(broker::session_admin& sessions,
                                              std::string admin_token) {
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
        .admin_token = std::move(admin_token)};
}

}  // namespace starling::app
