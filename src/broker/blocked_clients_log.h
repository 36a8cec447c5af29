#pragma once

// Persistence of the blocked-client rules in the compacted log topic client.blocked
// (docs/architecture.md §4-5; TBMQ's tbmq.client.blocked): one record per rule, key
// "<TYPE>|<value>" (TYPE one of CLIENT_ID, USERNAME, IP_ADDRESS, REGEX; an IP address in
// canonical form), value a proto::blocked_client, empty value = the rule was removed.
//
// The log is the source of truth: put() and erase() write the record first and change the
// in-memory auth::blocked_clients only once the log acknowledged it, so a rule the operator
// was told about survives a restart. At start, load() reads the topic to its end (every
// partition, see state_loader.h) into the list before the node serves traffic.
//
// In cluster mode the state follower reads the topic from offset 0 and applies every record
// (node::follow_blocked), so a rule written on any node reaches every node without a restart;
// in embedded mode load() at start is all there is to read.

#include "auth/blocked_clients.h"
#include "base/result.h"
#include "starling/message_log.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace starling::broker {

// Lifecycle: created by the composition root after the log, before the listeners; must
// outlive every put()/erase() callback (flush the log before destroying it).
// Ownership: borrows the log and the list.
// Concurrency: any thread. Callbacks run on a log thread and must not block.
class blocked_clients_log {
  public:
    blocked_clients_log(message_log& log, std::string topic, auth::blocked_clients& blocked);

    // Creates the compacted topic (1 partition) if it does not exist.
    status create_topic();

    // Reads every rule in the topic into the list; expired or unreadable records are skipped
    // (the latter with a log line). Returns how many rules were loaded. Blocks (start-up).
    result<std::size_t> load(const std::string& group_id, std::chrono::milliseconds timeout,
                             std::int64_t now_ms);

    // Writes the rule, then adds it to the list. An entry add() would refuse fails at once
    // with its error, nothing written.
    void put(auth::blocked_entry e, std::function<void(status)> done);

    // Writes the tombstone, then removes the rule; `done(true)` when a rule was removed.
    void erase(auth::block_type type, const std::string& value,
               std::function<void(result<bool>)> done);

    // Applies one record of the topic (key, value; empty value = tombstone) to the list.
    // Returns false for a record it cannot read.
    bool apply_record(std::string_view key, std::string_view value);

    // The record codec.
    static std::string record_key(auth::block_type type, const std::string& value);
    static std::string encode(const auth::blocked_entry& e);
    static std::optional<auth::blocked_entry> decode(std::string_view bytes);

  private:
    message_log& log_;
    std::string topic_;
    auth::blocked_clients& blocked_;
};

}  // namespace starling::broker
