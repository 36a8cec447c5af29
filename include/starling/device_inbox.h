#pragma once

// Device-inbox port (docs/architecture.md §2, §3): the per-client queue of QoS 1/2 messages for a
// persistent DEVICE client. Every operation is atomic per client (Redis: one Lua script each).
//
// Adapters: embedded (in-process, persisted under data_dir) and Redis. Both pass
// tests/contract/device_inbox/.
//
// Packet ids: append() assigns each message the next MQTT packet id of the client (1..65535,
// wrapping, continuing from the last one assigned — kept even after the inbox empties), so a
// message keeps its packet id across reconnects and nodes until it is acknowledged.
// Callbacks run once on a thread owned by the adapter and must not block.

#include "base/result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace starling {

// Where an entry was read from in the message log. The inbox keeps, per client and log, the
// position of the last entry it took, and skips an entry at or before it: a batch that is read
// again after a partial failure (the consumer rewinds to its last commit), or after a crash, is
// stored once, not once per try. During a long store outage a retried batch would otherwise
// pile copies into the inbox until its trim pushed real messages out.
//
// An entry is a repeat only if both its offset and its timestamp are at or before the stored
// ones: a log recreated under the same name starts again at offset 0 with newer timestamps,
// and those entries are stored (a producer clock running behind can let a true repeat through:
// a duplicate, which QoS 1 allows; never a loss).
struct log_position {
    std::string log;  // "<topic>/<partition>"; empty: not from the log, never skipped
    std::int64_t offset = -1;
    std::int64_t timestamp_ms = 0;
};

struct inbox_entry {
    std::string record;              // opaque serialized message (the broker's format)
    std::int64_t expires_at_ms = 0;  // absolute, ms since epoch; 0: the adapter's default TTL
    log_position from;
};

struct inbox_message {
    std::uint16_t packet_id = 0;
    bool pubrel = false;  // PUBREC received: only the PUBREL remains to be sent
    std::int64_t expires_at_ms = 0;
    std::string record;
};

struct inbox_settings {
    std::uint32_t max_messages = 10000;       // trim oldest past this; at most 65535
    std::int64_t default_ttl_ms = 604800000;  // for entries with expires_at_ms == 0
};

class device_inbox {
  public:
    template <class T>
    using callback = std::function<void(result<T>)>;
    using done_callback = std::function<void(status)>;

    virtual ~device_inbox() = default;

    // Appends a batch in order; returns the packet ids assigned, one per entry (0 for an entry
    // skipped as a repeat of its log position, counted in `repeats`). Trims the oldest messages
    // past max_messages (the caller counts them as dropped: the returned `trimmed` count).
    struct append_result {
        std::vector<std::uint16_t> packet_ids;
        std::uint32_t trimmed = 0;
        std::uint32_t repeats = 0;
    };
    virtual void append(const std::string& client_id, std::vector<inbox_entry> batch,
                        callback<append_result> done) = 0;

    // Pending messages oldest-first (at most `max`); expired ones are dropped, not returned.
    virtual void read_pending(const std::string& client_id, std::size_t max,
                              callback<std::vector<inbox_message>> done) = 0;

    // PUBACK / PUBCOMP: the messages are gone, all of them in one atomic step (a client that
    // acknowledges fast costs one store operation per batch, not one per message). Unknown
    // ids succeed (idempotent).
    virtual void remove_batch(const std::string& client_id, std::vector<std::uint16_t> packet_ids,
                              done_callback done) = 0;
    void remove(const std::string& client_id, std::uint16_t packet_id, done_callback done) {
        remove_batch(client_id, std::vector<std::uint16_t>{packet_id}, std::move(done));
    }

    // PUBREC: the message becomes a PUBREL marker and keeps its expiry.
    virtual void mark_pubrel(const std::string& client_id, std::uint16_t packet_id,
                             done_callback done) = 0;

    // Clean start / session end: every message, the packet-id counter and the log positions
    // are gone.
    virtual void clear(const std::string& client_id, done_callback done) = 0;

    virtual bool healthy() const = 0;
};

}  // namespace starling
