#pragma once

// Group inboxes: where a QoS 1/2 copy for a shared subscription group waits when none of the
// group's members could take it as it was routed (all offline, or connected here with a
// congested channel) and at least one member is a persistent DEVICE session. The first
// persistent DEVICE member that becomes available (connects, subscribes, or drains below its
// low watermark) moves the waiting copies into its own inbox and delivers them from there
// (docs/backpressure.md, "Shared subscriptions").
//
// A group inbox is an ordinary device inbox (port include/starling/device_inbox.h) under a key
// no client id can have: it starts with 0xFF, a byte that never occurs in UTF-8, and MQTT
// client ids are UTF-8. So it shares the inbox limits (persisted-messages.limit, TTL) and, in
// cluster mode, lives in Redis where every node's members can reach it.
//
// Delivery is at least once: a copy is appended to the member's inbox before it is removed
// from the group's, so a crash in between, or two members on different nodes moving at the
// same instant, can deliver it twice. Members on one node never move the same group at once
// (group_inbox_moves).

#include <cstddef>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace starling::broker {

class broker_core;
struct stored_subscription;

std::string group_inbox_key(std::string_view share, std::string_view filter);

// Which groups a member on this node is moving right now. Thread-safe.
class group_inbox_moves {
  public:
    bool try_begin(const std::string& key);
    void end(const std::string& key);

  private:
    std::mutex mutex_;
    std::set<std::string> active_;
};

// Moves every copy waiting in the inbox of `sub`'s group into `client_id`'s inbox, applying
// the member's subscription (maximum QoS, Retain As Published, identifier), in batches, oldest
// first. `done(moved)` runs once, on an adapter thread, after the last batch (moved = 0 when
// another local member was already moving this group, or on a store error, which is logged;
// the copies then stay for the next member). Never blocks.
void move_group_inbox(broker_core& core, const std::string& client_id,
                      const stored_subscription& sub, std::function<void(std::size_t)> done);

}  // namespace starling::broker
