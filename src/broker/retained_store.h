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
#include <functional>
#include <string_view>

namespace starling::broker {

class retained_store {
  public:
    void put(const std::string& topic, message_ptr msg) { trie_.put(topic, std::move(msg)); }
    void erase(std::string_view topic) { trie_.erase(topic); }
    std::size_t size() const { return trie_.size(); }

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
    routing::retained_trie<message_ptr> trie_;
};

}  // namespace starling::broker
