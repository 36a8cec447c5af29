#pragma once

// retained_echoes: what a SUBSCRIBE sends as retained and what reaches the same client live
// agree, so that a message goes out once and an older value never follows a newer one.
//
// The node stores a retained message when the log has it (before the PUBACK), but routes its
// live copies later, when a msg.all consumer reads it back. A SUBSCRIBE puts its subscription
// into the trie when it is handled and reads the retained set when the subscription is stored
// (after that write). Messages published before the SUBSCRIBE can therefore still be routed
// after the trie insert, and their live copies meet the retained copies:
//   - the same message twice: live while the SUBSCRIBE was pending, and then as retained; or as
//     retained first and then live — at QoS 0 a breach of "at most once";
//   - an older value after the newer: the retained copy is the topic's latest, then a live copy
//     of a message it replaced arrives, and the client's last value for the topic is stale.
// So: a retained copy is skipped when a live copy of the same or a newer message on its topic
// went out while the SUBSCRIBE was pending; a live copy is skipped when it is the retained copy
// sent (once) or older than it — as if the SUBSCRIBE took effect when it read the retained
// set, which is what the client sees of that topic. The first newer live copy of a topic ends
// that topic's watch (the log routes a topic's messages in order). "Older" compares creation
// times, and within one millisecond the accepting node's publish counter (app_message::
// sequence): on one node that is the log's order (but for two publishers racing, where either
// order is fair); across nodes it is as close as the nodes' clocks, and two nodes' messages of
// one millisecond are not told apart (both pass).
//
// Messages are recognised by what the log keeps of them (topic, node, creation time, sequence;
// publisher and payload for records without a sequence): the retained store and the live path
// hold different objects. Only recent messages
// are watched (`window_ms`: a live copy routed later than that after its creation is not
// expected), at most `limit` of each kind, so the state stays small and goes away: the owner
// drops the object once idle() (most connections never have one).
//
// A topic the client was already subscribed to is not watched: its live copies are owed
// through the older subscription whatever the new one's retained copy says. Copies a
// persistent session reads from its inbox or application topic are not watched either (they
// were stored for the session; at QoS 1/2 a repeat is the protocol's to absorb).
// Concurrency: none; owned by the client's actor (per connection).

#include "broker/message.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace starling::broker {

class retained_echoes {
  public:
    static constexpr std::int64_t window_ms = 30'000;
    static constexpr std::size_t limit = 256;

    // A SUBSCRIBE that will send retained messages entered the trie; until the
    // matching subscribe_finished, live copies of retained messages are remembered.
    void subscribe_started() { ++pending_subscribes_; }
    void subscribe_finished();

    // The SUBSCRIBE's retained copy of `msg`: false when a live copy of it, or of a newer
    // message on its topic, already went (skip it); true when it is to be sent. With `watch`,
    // its topic's older live copies are skipped from now on: the caller passes false when the
    // client was already subscribed to the topic (those copies are owed to it) or the message
    // is not recent().
    bool admit_retained(const message_ptr& msg, std::int64_t now_ms, bool watch);
    // A live copy about to be sent: true when it must be skipped (the echo of a retained copy
    // sent, or older than it).
    bool take_live_echo(const message_ptr& msg, std::int64_t now_ms);
    // A live copy that was sent, remembered while a SUBSCRIBE is pending.
    void live_sent(const message_ptr& msg, std::int64_t now_ms);

    // Nothing remembered and no SUBSCRIBE pending: the owner may drop this object.
    bool idle(std::int64_t now_ms);

    // Created less than window_ms ago: its live copies may still be routed.
    static bool recent(const app_message& m, std::int64_t now_ms);

  private:
    static bool same_message(const app_message& a, const app_message& b);
    // Drops what is no longer recent().
    static void forget_old(std::vector<message_ptr>& list, std::int64_t now_ms);
    // -1: a is older than b; 1: newer; 0: the same message or no telling.
    static int order(const app_message& a, const app_message& b);

    std::vector<message_ptr> sent_retained_;  // awaiting their live copies
    std::vector<message_ptr> sent_live_;      // while a SUBSCRIBE is pending
    std::uint32_t pending_subscribes_ = 0;
};

}  // namespace starling::broker
