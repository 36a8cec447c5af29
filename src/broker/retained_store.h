#pragma once

// retained_store: the node's retained messages (topic → message), matched by filter when a
// client subscribes. The retained trie is the reverse lookup: it walks stored topics following
// a filter. The store is the node's mirror of the compacted msg.retained topic.
//
// Concurrency: any thread (the trie takes a shared_mutex; retained lookups happen at SUBSCRIBE,
// not per PUBLISH).

#include "broker/message.h"
#include "routing/retained_trie.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace starling::broker {

class retained_store {
  public:
    void put(const std::string& topic, message_ptr msg) {
        const std::int64_t added = footprint(topic, *msg);
        std::optional<message_ptr> previous;
        trie_.put(topic, std::move(msg), &previous);
        bytes_.fetch_add(added - (previous ? footprint(topic, **previous) : 0),
                         std::memory_order_relaxed);
    }
    void erase(std::string_view topic) {
        std::optional<message_ptr> removed;
        if (trie_.erase(topic, &removed)) {
            bytes_.fetch_sub(footprint(topic, **removed), std::memory_order_relaxed);
        }
    }
    std::size_t size() const { return trie_.size(); }
    // Topic and payload bytes of every stored message (what mqtt.retained-messages.max-bytes
    // bounds).
    std::int64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
    bool contains(std::string_view topic) const { return trie_.contains(topic); }

    // Whether a retained message of `payload_size` bytes may be stored under `topic` within
    // `max_count` messages and `max_bytes` bytes (0 = unlimited). Replacing a stored message is
    // always allowed: the bound stops growth, never an update. Checked at admission, so two
    // publishers racing for the last place may both get it (a bound, not an exact count).
    bool admits(std::string_view topic, std::size_t payload_size, std::uint64_t max_count,
                std::uint64_t max_bytes) const {
        if ((max_count == 0 && max_bytes == 0) || contains(topic)) {
            return true;
        }
        if (max_count != 0 && size() >= max_count) {
            return false;
        }
        const auto after = static_cast<std::uint64_t>(bytes()) + topic.size() + payload_size;
        return max_bytes == 0 || after <= max_bytes;
    }

    // Visits every unexpired retained message whose topic matches `filter`.
    void match(std::string_view filter, std::int64_t now_ms,
               const std::function<void(const message_ptr&)>& visit) const {
        trie_.match_filter(filter, [&](std::string_view, const message_ptr& msg) {
            if (!msg->expired(now_ms)) {
                visit(msg);
            }
        });
    }

  private:
    static std::int64_t footprint(std::string_view topic, const app_message& msg) {
        return static_cast<std::int64_t>(topic.size() + msg.payload.size());
    }

    routing::retained_trie<message_ptr> trie_;
    std::atomic<std::int64_t> bytes_{0};
};

}  // namespace starling::broker
