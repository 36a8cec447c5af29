#pragma once

// session_registry: the node's directory of clients.
//   - live actors by client id (at most one actor per client id on a node: the actor is the
//     single writer of its session's state);
//   - session records: the node's mirror of the compacted client.session topic, which the router
//     consults to decide how to deliver (live socket, device inbox, drop).
//
// Concurrency: any thread. Actor lookups take a shared lock (router threads look up one actor
// per matched subscriber); creation and removal take the exclusive lock, which is also what
// makes "create unless present" and "remove only if still mine" atomic with respect to each
// other.

#include "starling/metadata_store.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace starling::broker {

class client_actor;

struct session_record {
    std::string client_id;
    bool persistent = false;
    bool connected = false;
    std::uint32_t session_expiry_interval = 0;  // seconds; 0xFFFFFFFF: never
    std::int64_t connected_at_ms = 0;
    std::int64_t disconnected_at_ms = 0;
    std::string node_id;
    // Id of the connection that created the record (client_session.session_id); in cluster mode
    // the request id the session-event handler granted. Empty in embedded mode.
    std::string session_id;
    // From authentication; decides the route of a persistent session's QoS 1/2 copies.
    client_type type = client_type::device;
    // Cluster mode: 1 + the offset of the CONNECT request that created the session (0: unknown);
    // see proto client_session.request_offset.
    std::int64_t request_offset = 0;
    // The last connection ended with messages sent and not acknowledged (proto
    // client_session.unacknowledged).
    bool unacknowledged = false;
    // What the management API shows: the MQTT protocol level of the connection (3, 4 or 5;
    // 0 unknown) and the address it came from.
    std::uint32_t protocol_version = 0;
    std::string client_address;
};

// The record as client.session stores it (proto client_session, serialized), and back; the
// node id of a record without one is `origin` (the node that wrote it). nullopt: unreadable.
std::string serialize_session_record(const session_record& r);
std::optional<session_record> parse_session_record(std::string_view client_id,
                                                   std::string_view value,
                                                   std::string_view origin = {});

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

class session_registry {
  public:
    using actor_factory = std::function<std::shared_ptr<client_actor>(const std::string&)>;

    std::shared_ptr<client_actor> find_actor(std::string_view client_id) const;
    // Returns the live actor of the client, creating it with `factory` when absent.
    std::shared_ptr<client_actor> get_or_create_actor(const std::string& client_id,
                                                      const actor_factory& factory);
    // Removes the entry only if it still points at `actor` (a newer actor may have replaced it).
    bool remove_actor(const std::string& client_id, const client_actor* actor);
    std::size_t actor_count() const;
    // Every live actor (for shutdown).
    void for_each_actor(const std::function<void(const std::shared_ptr<client_actor>&)>& fn) const;

    std::optional<session_record> find_session(std::string_view client_id) const;
    void put_session(session_record record);
    void erase_session(std::string_view client_id);
    std::size_t session_count() const;
    void for_each_session(const std::function<void(const session_record&)>& fn) const;

    // Mirror of client.subscriptions (value: a serialized proto::client_subscriptions), for a
    // session that moves to this node from another one (cluster mode). Filled by the follower
    // of client.subscriptions; until something calls put_subscriptions, subscriptions_of
    // returns nothing and a moved session starts without subscriptions.
    std::optional<std::string> subscriptions_of(std::string_view client_id) const;
    void put_subscriptions(const std::string& client_id, std::string serialized_set);
    void erase_subscriptions(std::string_view client_id);

  private:
    mutable std::shared_mutex actors_mutex_;
    std::unordered_map<std::string, std::shared_ptr<client_actor>, string_hash, std::equal_to<>>
        actors_;
    mutable std::shared_mutex sessions_mutex_;
    std::unordered_map<std::string, session_record, string_hash, std::equal_to<>> sessions_;
    mutable std::shared_mutex subscriptions_mutex_;
    std::unordered_map<std::string, std::string, string_hash, std::equal_to<>> subscriptions_;
};

}  // namespace starling::broker
