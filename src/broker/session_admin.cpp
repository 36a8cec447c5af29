#include "broker/session_admin.h"

#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "broker/subscription_records.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace starling::broker {

std::vector<session_admin::session_info> session_admin::list() const {
    std::vector<session_record> records;
    core_.sessions().for_each_session([&](const session_record& r) { records.push_back(r); });
    std::vector<session_info> out;
    out.reserve(records.size());
    for (auto& r : records) {
        out.push_back(info_of(std::move(r)));
    }
    return out;
}

std::optional<session_admin::session_info> session_admin::find(const std::string& client_id) const {
    auto record = core_.sessions().find_session(client_id);
    if (!record) {
        return std::nullopt;
    }
    return info_of(std::move(*record));
}

session_admin::session_info session_admin::info_of(session_record record) const {
    session_info info;
    if (auto actor = core_.sessions().find_actor(record.client_id)) {
        info.subscriptions = actor->subscription_count();
    } else {
        info.subscriptions = mirrored_subscriptions(record.client_id).size();
    }
    info.record = std::move(record);
    return info;
}

std::vector<stored_subscription> session_admin::mirrored_subscriptions(
    const std::string& client_id) const {
    auto serialized = core_.sessions().subscriptions_of(client_id);
    if (!serialized) {
        return {};
    }
    return subscription_records::parse_set(*serialized)
        .value_or(std::vector<stored_subscription>{});
}

void session_admin::details(const std::string& client_id,
                            std::function<void(std::optional<session_details>)> done) const {
    auto info = find(client_id);
    if (!info) {
        done(std::nullopt);
        return;
    }
    session_details d;
    d.info = std::move(*info);
    auto actor = core_.sessions().find_actor(client_id);
    if (!actor) {
        d.subscriptions = mirrored_subscriptions(client_id);
        done(std::move(d));
        return;
    }
    // The actor answers on its own thread; if it stopped meanwhile, the mirror answers.
    auto shared_done =
        std::make_shared<std::function<void(std::optional<session_details>)>>(std::move(done));
    auto partial = std::make_shared<session_details>(d);
    const bool asked = actor->admin_inspect([partial, shared_done](client_actor::admin_view v) {
        partial->subscriptions = std::move(v.subscriptions);
        partial->info.subscriptions = partial->subscriptions.size();
        partial->in_flight = v.in_flight;
        partial->queued = v.queued;
        (*shared_done)(std::move(*partial));
    });
    if (!asked) {
        d.subscriptions = mirrored_subscriptions(client_id);
        (*shared_done)(std::move(d));
    }
}

void session_admin::disconnect(const std::string& client_id, const std::string& session_id,
                               std::function<void(outcome)> done) {
    act(action::disconnect, client_id, session_id, std::move(done));
}

void session_admin::end_session(const std::string& client_id, const std::string& session_id,
                                std::function<void(outcome)> done) {
    act(action::end_session, client_id, session_id, std::move(done));
}

void session_admin::set_subscriptions(const std::string& client_id,
                                      std::vector<stored_subscription> subscriptions,
                                      std::function<void(outcome)> done) {
    act(action::set_subscriptions, client_id, {}, std::move(done), std::move(subscriptions));
}

void session_admin::act(action what, const std::string& client_id, const std::string& session_id,
                        std::function<void(outcome)> done,
                        std::vector<stored_subscription> subscriptions) {
    auto record = core_.sessions().find_session(client_id);
    if (!record || (!session_id.empty() && session_id != record->session_id)) {
        done(outcome::not_found);
        return;
    }
    if (what == action::disconnect && !record->connected) {
        done(outcome::not_connected);
        return;
    }
    if (what == action::end_session && record->connected) {
        done(outcome::connected);
        return;
    }
    const auto& self = core_.cfg().node_id;
    const bool here = !core_.cfg().cluster || record->node_id.empty() || record->node_id == self;
    if (here) {
        auto actor = core_.sessions().find_actor(client_id);
        // What the actor's refusal means: the state changed since the record was read.
        const outcome refused = what == action::disconnect    ? outcome::not_connected
                                : what == action::end_session ? outcome::connected
                                                              : outcome::not_found;
        if (!actor) {
            done(what == action::disconnect ? outcome::not_connected : outcome::not_found);
            return;
        }
        auto answer = [done = std::move(done), refused](bool acted) {
            done(acted ? outcome::done : refused);
        };
        switch (what) {
            case action::disconnect:
                actor->admin_disconnect(record->session_id, std::move(answer));
                break;
            case action::end_session:
                actor->admin_end_session(record->session_id, std::move(answer));
                break;
            case action::set_subscriptions:
                actor->admin_set_subscriptions(record->session_id, std::move(subscriptions),
                                               std::move(answer));
                break;
        }
        return;
    }
    proto::client_disconnect request;
    request.set_client_id(client_id);
    request.set_session_id(record->session_id);
    const char* name = "disconnect";
    switch (what) {
        case action::disconnect:
            request.set_admin_action(proto::client_disconnect::DISCONNECT);
            break;
        case action::end_session:
            name = "session end";
            request.set_admin_action(proto::client_disconnect::END_SESSION);
            break;
        case action::set_subscriptions:
            name = "subscription change";
            request.set_admin_action(proto::client_disconnect::SET_SUBSCRIPTIONS);
            request.mutable_subscriptions()->ParseFromString(
                subscription_records::serialize_set(subscriptions));
            break;
    }
    spdlog::info("client {}: {} requested from node {} (session {} on node {})", client_id, name,
                 self, record->session_id, record->node_id);
    core_.log().produce(core_.topics().client_disconnect(record->node_id), client_id,
                        request.SerializeAsString(), {},
                        [done = std::move(done), client_id](result<produce_ack> r) {
                            if (!r) {
                                spdlog::warn("client {}: admin request not written: {}", client_id,
                                             r.error().message());
                            }
                            done(r ? outcome::done : outcome::unavailable);
                        });
}

}  // namespace starling::broker
