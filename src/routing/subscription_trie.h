#pragma once

// The subscription trie: which subscriptions match a PUBLISH topic (docs/architecture.md §7).
//
// Structure. Every level of a topic filter is a node; the root stands for "no level yet".
// A node holds
//   - its exact-segment children in a small hash table (bucket = immutable array),
//   - one `+` child and one `#` child, reached without hashing,
//   - its entries: the subscriptions whose filter ends at this node, in a hash table keyed by
//     (client_id, share_group), so one client can hold one plain and several shared
//     subscriptions on the same filter,
//   - the text of the filter that ends here (kept only by nodes that held an entry), handed to
//     visitors so the router knows which filter matched.
// Matching walks the topic level by level, following the exact child, the `+` child and the
// `#` child of each reached node; cost depends on the topic's length and on the matches, not on
// how many subscriptions exist.
//
// Concurrency (RCU, liburcu "memb" flavour). Readers (match) take no lock and allocate nothing
// on the common path: every pointer a reader follows is an atomic loaded with acquire, and
// everything it points to is immutable once published. Writers (subscribe/unsubscribe) serialize
// on a mutex, build a new bucket / table / node next to the old one (copy-on-write), publish it
// with a release store (what rcu_assign_pointer does) and hand the old version to call_rcu, which
// frees it after a grace period, i.e. once every reader that could still see it has left its
// read-side critical section. See README.md for why call_rcu rather than synchronize_rcu.
//
// Thread rules:
//   - every thread that calls match() must hold an rcu_reader_registration for its whole life
//     (create one at the top of the thread function); a debug build asserts it;
//   - threads that call subscribe()/unsubscribe() should be registered too (call_rcu wants a
//     registered caller); an unregistered writer is registered for the duration of the call,
//     which costs a registry lock round-trip per call and may wait out a grace period.

#include "routing/subscription.h"

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>

namespace starling::routing {

// Registers the calling thread as an RCU reader for the lifetime of the object.
// Lifecycle: construct at the top of a thread function, destroy on the same thread before it
// exits. Nests: an inner registration on an already registered thread only counts.
// Not copyable, not movable (it is tied to the thread that made it).
class rcu_reader_registration {
  public:
    rcu_reader_registration();
    ~rcu_reader_registration();
    rcu_reader_registration(const rcu_reader_registration&) = delete;
    rcu_reader_registration& operator=(const rcu_reader_registration&) = delete;

    // Whether the calling thread currently holds a registration.
    static bool this_thread_registered() noexcept;
};

// An RCU read-side critical section for the lifetime of the object. Nests. Pointers and
// references obtained from an RCU-protected structure stay valid until the outermost guard of
// the thread is destroyed. Do not block inside one: a long section delays every deferred free.
// The thread must be registered (rcu_reader_registration).
class rcu_read_guard {
  public:
    rcu_read_guard() noexcept;
    ~rcu_read_guard();
    rcu_read_guard(const rcu_read_guard&) = delete;
    rcu_read_guard& operator=(const rcu_read_guard&) = delete;
};

// Lifecycle: created empty (one root node) by the routing layer at start-up; destroyed at
// shutdown after every reader thread has stopped matching; the destructor waits for the trie's
// pending deferred frees (one grace period), so it must not run inside a read-side section.
// Ownership: owns every node and entry; visitors receive references valid only during the visit.
// Concurrency: match() from any number of registered threads, lock-free, concurrently with
// subscribe()/unsubscribe() from any threads (serialized among themselves by a mutex).
class subscription_trie {
  public:
    subscription_trie();
    ~subscription_trie();
    subscription_trie(const subscription_trie&) = delete;
    subscription_trie& operator=(const subscription_trie&) = delete;

    // Adds `s` under `filter`. The filter is already validated and stripped of
    // `$share/<group>/` (the group is in s.share_group). An existing entry with the same
    // (client_id, share_group) on the same filter is replaced; returns true in that case.
    bool subscribe(std::string_view filter, subscription s);

    // Removes the entry of (client_id, share_group) under `filter` and prunes the nodes left
    // empty. Returns false if there was none.
    bool unsubscribe(std::string_view filter, std::string_view client_id,
                     std::string_view share_group = {});

    // Cluster mirror of another node's client (s.owner_node not empty). Like subscribe(), but
    // never replaces an entry owned by a local actor (owner_node empty): the local actor is the
    // single writer of its entries, and a record of the client's old node must not clobber
    // them. Returns true when the entry is in place, false when a local entry was kept.
    bool mirror_subscribe(std::string_view filter, subscription s);
    // Removes the entry only when it is a mirrored one (owner_node not empty).
    bool mirror_unsubscribe(std::string_view filter, std::string_view client_id,
                            std::string_view share_group = {});

    // Calls visit(std::string_view filter, const subscription&) -- or visit(const subscription&)
    // -- once for every entry whose filter matches `topic` (a valid topic name, no wildcards).
    // The filter passed is the stripped filter the entry was subscribed with. Runs inside a
    // read-side critical section: the references are valid only during the call and the visitor
    // should be short and must not block. No lock, no allocation unless the walk needs more than
    // 32 pending branches (only with very deep wildcard filters).
    template <class Visitor>
    void match(std::string_view topic, Visitor&& visit) const {
        using visitor_type = std::remove_reference_t<Visitor>;
        match_erased(
            topic,
            [](void* context, std::string_view filter, const subscription& s) {
                auto& v = *static_cast<visitor_type*>(context);
                if constexpr (std::is_invocable_v<visitor_type&, std::string_view,
                                                  const subscription&>) {
                    std::invoke(v, filter, s);
                } else {
                    std::invoke(v, s);
                }
            },
            const_cast<void*>(static_cast<const void*>(std::addressof(visit))));
    }

    // Number of entries (client, share group, filter) stored. For metrics.
    std::size_t subscription_count() const noexcept {
        return subscription_count_.load(std::memory_order_relaxed);
    }
    // Number of trie nodes, the root included (1 when empty). For metrics.
    std::size_t node_count() const noexcept { return node_count_.load(std::memory_order_relaxed); }

    // Opaque outside subscription_trie.cpp; public only so that file's helpers can name them.
    struct node;
    struct reclaim_tracker;

  private:
    using visit_fn = void (*)(void* context, std::string_view filter, const subscription&);
    // The walk itself lives in the .cpp so the node layout stays private; the visitor is called
    // through one function pointer per match.
    void match_erased(std::string_view topic, visit_fn fn, void* context) const;
    bool subscribe_impl(std::string_view filter, subscription s, bool keep_local);
    bool unsubscribe_impl(std::string_view filter, std::string_view client_id,
                          std::string_view share_group, bool only_mirrored);

    node* const root_;
    const std::shared_ptr<reclaim_tracker> reclaim_;  // batches awaiting their grace period
    std::mutex write_mutex_;  // serializes subscribe/unsubscribe (and pruning)
    std::atomic<std::size_t> subscription_count_{0};
    std::atomic<std::size_t> node_count_{1};
};

}  // namespace starling::routing
