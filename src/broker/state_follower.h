#pragma once

// state_follower: keeps a cluster node's mirror of the compacted state topics current after the
// start-up snapshot (docs/architecture.md §4) — client.session, client.subscriptions, msg.retained
// and client.blocked.
//
// One consumer, manual assignment of every partition of the four topics (partition counts read
// from the log), each partition starting where the snapshot stopped (state_loader.h), so
// nothing written between snapshot and follow is lost. client.blocked starts at offset 0: its
// list belongs to the composition root, which attaches it later (attach_blocked); records read
// before that are kept as latest-per-key and applied on attach.
//
// What a record does (the same apply_* functions serve the snapshot, from node::load_state):
//   - client.session / client.subscriptions are single-writer per client: the node holding the
//     client's actor. Records carrying this node's origin header (topics.h) are its own echo
//     and skipped. A session record from another node updates the session_registry mirror
//     (node id, connected, persistent); a tombstone removes it unless the mirror says the
//     session lives on this node (a stale end-of-session record of a client that moved here:
//     what to do with the local actor belongs to session coordination).
//   - A subscription record from another node replaces the client's mirrored set in the trie
//     (entries marked with routing::subscription::owner_node). Mirrored writes never replace or
//     remove an entry a local actor owns (subscription_trie::mirror_subscribe).
//   - msg.retained and client.blocked keys are written by any node, so every record is applied
//     in log order, own echoes included (the last write in the log wins on every node).
//
// Thread: its own (one per node), an RCU reader of the trie. apply_* before start() run on the
// caller's thread. Batches are bounded by the consumer's max_poll_records; records are applied
// on the follower thread, no queue in between.
// Lifecycle: built by broker::node in cluster mode; start() after the snapshot, before the
// msg.all consumers; stop() wakes and joins the thread (idempotent).
// Ownership: borrows the core and the attached blocked_clients_log; an attached log must stay
// alive until it is detached (attach_blocked(nullptr)) or the follower stopped.

#include "base/result.h"
#include "broker/subscription_mirror.h"
#include "broker/subscription_records.h"
#include "routing/subscription.h"
#include "starling/message_log.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace starling::broker {

class broker_core;
class blocked_clients_log;

class state_follower final : public subscription_mirror {
  public:
    explicit state_follower(broker_core& core);
    ~state_follower() override;
    state_follower(const state_follower&) = delete;
    state_follower& operator=(const state_follower&) = delete;

    // Applies one record of another node (`origin` = its node id; never this node's).
    void apply_session(const std::string& client_id, std::string_view value,
                       std::string_view origin);
    void apply_subscriptions(const std::string& client_id, std::string_view value,
                             std::string_view origin);
    void apply_retained(const std::string& topic, std::string_view value);

    // The client.subscriptions fold as of the start-up snapshot; records the follower reads
    // continue it. Before start().
    void seed_subscriptions(subscription_records::fold fold) {
        subscription_fold_ = std::move(fold);
    }

    // Where client.blocked records go from now on; the records read so far are applied first.
    void attach_blocked(blocked_clients_log* blocked);

    // Starts following at `start` (per partition of the session, subscription and retained
    // topics; client.blocked is added here from offset 0).
    status start(std::vector<std::pair<topic_partition, std::int64_t>> start);
    void stop();

    // Runs `done` (on the follower's thread) once the follower has applied client.subscriptions
    // up to the end offset that the client's partition has when the request is served: every
    // subscription record written before the call (e.g. by the node a session is taken over
    // from, before its SUBACK) is then in the mirror. Bounded: after `timeout` `done` runs
    // anyway (logged). Thread-safe.
    void after_subscriptions_caught_up(const std::string& client_id, std::function<void()> done,
                                       std::chrono::milliseconds timeout);

    // Applies the client's mirrored subscription set again (from session_registry's copy):
    // called when a local actor dropped its own entries, which had kept the mirror out.
    void reapply_subscriptions(const std::string& client_id);

    // subscription_mirror, for broker_core's actors: the catch-up wait is bounded at 5 s.
    void after_caught_up(const std::string& client_id, std::function<void()> done) override {
        after_subscriptions_caught_up(client_id, std::move(done), std::chrono::seconds(5));
    }
    void local_entries_dropped(const std::string& client_id) override {
        reapply_subscriptions(client_id);
    }

    // A local actor's session moved to `new_owner`: its entries (`subs`, owner_node set to the
    // new owner) replace the local ones in the trie, each in one operation, and become the
    // client's mirrored set, which the new owner's own record then updates like any other.
    // When that record was applied already (kept out by the local entries), it is the newer
    // truth: it replaces the local entries instead, and local ones it lacks are removed.
    void hand_over(const std::string& client_id, handed_subscriptions subs,
                   const std::string& new_owner) override;

    // Records applied (own echoes skipped are not counted). For tests and logs.
    std::uint64_t applied() const { return applied_.load(std::memory_order_acquire); }
    // Clients whose subscriptions are mirrored from other nodes.
    std::size_t mirrored_clients() const;

  private:
    struct mirrored_set {
        std::string owner_node;
        std::vector<std::pair<std::string, std::string>> keys;  // (filter, share group)
    };

    struct barrier {
        topic_partition tp;
        std::int64_t target = -1;  // -1: end offset not read yet
        std::chrono::steady_clock::time_point deadline;
        std::function<void()> done;
    };

    void run();
    void serve_barriers();
    void apply(const log_record& rec);
    void apply_blocked(const std::string& key, const std::string& value);
    // One client.subscriptions record (own ones too: the fold needs every record, and this
    // node collects the garbage its own writes make; docs/architecture.md §4).
    void apply_subscription_record(const log_record& rec, std::string_view origin, bool own);

    broker_core& core_;
    std::atomic<bool> running_{false};
    std::stop_source stop_;  // ends the thread's retry wait at stop()
    std::unique_ptr<log_consumer> consumer_;
    std::thread thread_;
    std::atomic<std::uint64_t> applied_{0};
    std::int32_t subscription_partitions_ = 0;
    // Every client's set, folded from client.subscriptions (follower thread only).
    subscription_records::fold subscription_fold_;
    // Next offset to apply per followed partition (follower thread only).
    std::map<topic_partition, std::int64_t> positions_;
    std::mutex barriers_mutex_;
    std::vector<barrier> barriers_;

    // Guards the mirrored sets: the snapshot (caller's thread) and the follower thread write
    // them, never at once in practice, but the lock makes that a guarantee.
    mutable std::mutex mirror_mutex_;
    std::unordered_map<std::string, mirrored_set> mirrored_;

    std::mutex blocked_mutex_;
    blocked_clients_log* blocked_ = nullptr;
    std::map<std::string, std::string> blocked_pending_;  // key → latest value, until attached
};

}  // namespace starling::broker
