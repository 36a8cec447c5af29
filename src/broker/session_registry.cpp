#include "broker/session_registry.h"

#include "proto/starling.pb.h"

#include <mutex>

namespace starling::broker {

std::string serialize_session_record(const session_record& r) {
    proto::client_session s;
    s.set_client_id(r.client_id);
    s.set_node_id(r.node_id);
    s.set_connected(r.connected);
    s.set_persistent(r.persistent);
    s.set_session_expiry_interval(r.session_expiry_interval);
    s.set_connected_at_ms(r.connected_at_ms);
    s.set_disconnected_at_ms(r.disconnected_at_ms);
    s.set_client_type(r.type == client_type::application ? "APPLICATION" : "DEVICE");
    s.set_session_id(r.session_id);
    s.set_request_offset(r.request_offset);
    s.set_unacknowledged(r.unacknowledged);
    s.set_protocol_version(r.protocol_version);
    s.set_client_address(r.client_address);
    return s.SerializeAsString();
}

std::optional<session_record> parse_session_record(std::string_view client_id,
                                                   std::string_view value,
                                                   std::string_view origin) {
    proto::client_session s;
    if (!s.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        return std::nullopt;
    }
    return session_record{
        .client_id = std::string(client_id),
        .persistent = s.persistent(),
        .connected = s.connected(),
        .session_expiry_interval = s.session_expiry_interval(),
        .connected_at_ms = s.connected_at_ms(),
        .disconnected_at_ms = s.disconnected_at_ms(),
        .node_id = s.node_id().empty() ? std::string(origin) : s.node_id(),
        .session_id = s.session_id(),
        .type = s.client_type() == "APPLICATION" ? client_type::application : client_type::device,
        .request_offset = s.request_offset(),
        .unacknowledged = s.unacknowledged(),
        .protocol_version = s.protocol_version(),
        .client_address = s.client_address(),
    };
}

std::shared_ptr<client_actor> session_registry::find_actor(std::string_view client_id) const {
    std::shared_lock lock(actors_mutex_);
    auto it = actors_.find(client_id);
    return it == actors_.end() ? nullptr : it->second;
}

std::shared_ptr<client_actor> session_registry::get_or_create_actor(const std::string& client_id,
                                                                    const actor_factory& factory) {
    std::unique_lock lock(actors_mutex_);
    auto it = actors_.find(client_id);
    if (it != actors_.end()) {
        return it->second;
    }
    auto actor = factory(client_id);
    actors_.emplace(client_id, actor);
    return actor;
}

bool session_registry::remove_actor(const std::string& client_id, const client_actor* actor) {
    std::unique_lock lock(actors_mutex_);
    auto it = actors_.find(client_id);
    if (it == actors_.end() || it->second.get() != actor) {
        return false;
    }
    actors_.erase(it);
    return true;
}

std::size_t session_registry::actor_count() const {
    std::shared_lock lock(actors_mutex_);
    return actors_.size();
}

void session_registry::for_each_actor(
    const std::function<void(const std::shared_ptr<client_actor>&)>& fn) const {
    std::vector<std::shared_ptr<client_actor>> copy;
    {
        std::shared_lock lock(actors_mutex_);
        copy.reserve(actors_.size());
        for (const auto& [id, actor] : actors_) {
            copy.push_back(actor);
        }
    }
    for (const auto& actor : copy) {
        fn(actor);
    }
}

std::optional<session_record> session_registry::find_session(std::string_view client_id) const {
    std::shared_lock lock(sessions_mutex_);
    auto it = sessions_.find(client_id);
    if (it == sessions_.end()) {
        return std::nullopt;
    }
    return it->second;
}

void session_registry::put_session(session_record record) {
    std::unique_lock lock(sessions_mutex_);
    auto id = record.client_id;
    sessions_.insert_or_assign(std::move(id), std::move(record));
}

void session_registry::erase_session(std::string_view client_id) {
    std::unique_lock lock(sessions_mutex_);
    auto it = sessions_.find(client_id);
    if (it != sessions_.end()) {
        sessions_.erase(it);
    }
}

std::size_t session_registry::session_count() const {
    std::shared_lock lock(sessions_mutex_);
    return sessions_.size();
}

void session_registry::for_each_session(
    const std::function<void(const session_record&)>& fn) const {
    std::vector<session_record> copy;
    {
        std::shared_lock lock(sessions_mutex_);
        copy.reserve(sessions_.size());
        for (const auto& [id, record] : sessions_) {
            copy.push_back(record);
        }
    }
    for (const auto& record : copy) {
        fn(record);
    }
}

std::optional<std::string> session_registry::subscriptions_of(std::string_view client_id) const {
    std::shared_lock lock(subscriptions_mutex_);
    auto it = subscriptions_.find(client_id);
    if (it == subscriptions_.end()) {
        return std::nullopt;
    }
    return it->second;
}

void session_registry::put_subscriptions(const std::string& client_id, std::string serialized_set) {
    std::unique_lock lock(subscriptions_mutex_);
    subscriptions_.insert_or_assign(client_id, std::move(serialized_set));
}

void session_registry::erase_subscriptions(std::string_view client_id) {
    std::unique_lock lock(subscriptions_mutex_);
    auto it = subscriptions_.find(client_id);
    if (it != subscriptions_.end()) {
        subscriptions_.erase(it);
    }
}

}  // namespace starling::broker
