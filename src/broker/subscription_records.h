#pragma once

// The records of client.subscriptions (docs/architecture.md §4, §5), and the fold that turns
// them back into each client's set.
//
// A client's set is not written whole on every change: a SUBSCRIBE of one filter to a client
// holding a thousand would otherwise put a thousand entries on the log, and a client that
// subscribes one filter at a time would write O(n²) in all. Instead:
//   - the base record (key = client id) names the set's generation: a random non-zero number
//     the writing actor picks when it takes the set over (a new session, a session restored
//     from another node) — written once, without entries;
//   - each subscription is its own record, key = client id \0 generation \0 entry key (entry
//     key = share name \0 filter; MQTT strings never hold U+0000, so the key splits
//     unambiguously), value = a proto::topic_subscription, tombstone when unsubscribed;
//   - clearing the set is one tombstone on the base record: entries of a generation other
//     than the base's are dead, whatever their order, so a writer never has to know every
//     entry to end a set.
// Dead entries are garbage, not state: the node whose actor wrote the current base removes
// them as its follower meets them (state_follower), and every node removes those its start-up
// snapshot shows (node::load_state).
//
// A base record without a generation (written by earlier releases) carries the whole set; it
// is read as generation 0, which no writer picks, and replaced by the first write.
//
// Thread-compatible: one fold is used by one thread at a time.

#include "broker/stored_subscription.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace starling::broker::subscription_records {

// Key of one subscription's record in `generation` of the client's set.
std::string entry_record_key(std::string_view client_id, std::uint64_t generation,
                             std::string_view entry_key);

// Entry key of a subscription: share name \0 filter (as client_actor keys its map).
std::string entry_key(std::string_view share_group, std::string_view filter);

struct parsed_key {
    std::string_view client_id;
    bool is_entry = false;  // false: the base record
    std::uint64_t generation = 0;
    std::string_view entry_key;  // is_entry only
};

// nullopt: an entry key that does not have the shape above.
std::optional<parsed_key> parse_key(std::string_view key);

// Value of a base record naming `generation` (non-zero), without entries; the writer puts
// `entries_following` entry records right after it.
std::string base_record(std::uint64_t generation, std::uint32_t entries_following);

// A fresh, random, non-zero generation.
std::uint64_t new_generation();

// The subscriptions of a whole set in its in-memory form (a serialized
// proto::client_subscriptions, as the mirrors and hand-overs pass it); nullopt when it does not
// parse. Out-of-range QoS and Retain Handling values are clamped to 2.
std::optional<std::vector<stored_subscription>> parse_set(std::string_view serialized);
// The reverse: `subscriptions` as a serialized proto::client_subscriptions (generation 0).
std::string serialize_set(const std::vector<stored_subscription>& subscriptions);
// One subscription as the value of its entry record (a serialized proto::topic_subscription).
std::string serialize_entry(const stored_subscription& sub);

// A key and a value to produce; an empty value is a tombstone.
using record = std::pair<std::string, std::string>;

class fold {
  public:
    enum class outcome : std::uint8_t {
        changed,     // the client's set is different now
        incomplete,  // a new generation whose first entries are still to come
        unchanged,   // e.g. a tombstone for an entry that was not there
        dead,        // an entry of a generation other than the base's: garbage
        unreadable,  // a key or value that does not parse (logged by the caller)
    };
    struct applied {
        outcome what = outcome::unchanged;
        std::string client_id;
        // A base record that replaced another generation: the entry records of that one,
        // which are garbage now.
        std::vector<std::string> superseded;
    };

    // Applies one record, in log order. `writer`: the node that wrote it (kept for bases).
    applied apply(std::string_view key, std::string_view value, std::string_view writer = {});

    // Loads a compacted snapshot (key → latest value, tombstones gone; order lost): bases
    // first, then entries; every set counts as complete (what is still to come applies as
    // changes). Returns the keys of dead entries found, to be removed.
    // `writers`: per key, the node that wrote it (compacted_snapshot::origin).
    std::vector<std::string> load(const std::unordered_map<std::string, std::string>& snapshot,
                                  const std::unordered_map<std::string, std::string>& writers);

    // The client's set as a serialized proto::client_subscriptions (generation 0); "" when it
    // has no subscriptions; nullopt when there is no base record.
    std::optional<std::string> serialized_set(std::string_view client_id) const;
    // The client's current generation (0 when none or an older release's record).
    std::uint64_t generation_of(std::string_view client_id) const;

    // The node that wrote the client's current base record (empty when unknown or none).
    std::string_view writer_of(std::string_view client_id) const;

    // Clients with a base record.
    std::vector<std::string> clients() const;
    std::size_t client_count() const { return clients_.size(); }

  private:
    struct client_set {
        std::uint64_t generation = 0;
        std::string writer;
        std::uint32_t pending = 0;  // entry records of the base's write still to come
        std::map<std::string, std::string, std::less<>> entries;  // entry key → topic_subscription
    };

    std::unordered_map<std::string, client_set> clients_;
};

}  // namespace starling::broker::subscription_records
