#pragma once

// subscription_mirror: what a node's actors need from the cluster's mirror of the other nodes'
// subscriptions. state_follower implements it; broker::node hands it to broker_core in cluster
// mode. Embedded mode has none, and broker_core then does what a single node needs (nothing to
// wait for, nothing to put back, entries of a moved session removed).
//
// Local entries win over mirrored ones in the trie: while an actor here holds a client's
// subscriptions, the mirror keeps that client's entries from other nodes out. The three calls
// are the moments that rule needs the mirror.
//
// Thread-safety: every method may be called from any actor thread.

#include "routing/subscription.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace starling::broker {

class subscription_mirror {
  public:
    using handed_subscriptions = std::vector<std::pair<std::string, routing::subscription>>;

    virtual ~subscription_mirror() = default;

    // Runs `done` once the mirror holds every client.subscriptions record written so far for
    // the client (e.g. by the node a session is taken over from, before its SUBACK). Bounded:
    // `done` runs anyway after the implementation's timeout.
    virtual void after_caught_up(const std::string& client_id, std::function<void()> done) = 0;

    // A local actor removed its own entries: the mirrored entries they kept out go back.
    virtual void local_entries_dropped(const std::string& client_id) = 0;

    // A local actor's session moved to `new_owner`: its entries become the new owner's mirrored
    // entries, each in one trie operation, so a message routed here during the move still finds
    // the session.
    virtual void hand_over(const std::string& client_id, handed_subscriptions subs,
                           const std::string& new_owner) = 0;
};

}  // namespace starling::broker
