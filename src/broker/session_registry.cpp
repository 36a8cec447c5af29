#include "broker/session_registry.h"

#include <mutex>

namespace starling::broker {

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
