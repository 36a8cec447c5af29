#pragma once

// integration_matcher: which integrations want a message, by their topic filters. The msg.all
// routers ask it once per message (publish_router::route) and produce one copy to each matched
// integration's msg.ie.<id> topic.
//
// Decision: a flat list checked with mqtt::topic_matches rather than entries in the
// subscription trie. Integrations are an operator's handful (each has a topic and an executor),
// so a scan costs less than the trie's per-client merge, and an integration can never be
// mistaken for a client by the session code that walks the trie.
//
// Concurrency: match() is lock-free for readers (an atomic snapshot); replace() swaps the whole
// table and may run on any thread. With no integration defined, match() is one atomic load.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace starling::integration {

// A client's lifecycle, as integrations can ask to be told of it (bit i = value i).
enum class lifecycle_event : std::uint8_t {
    connected,
    disconnected,
    subscribed,
    unsubscribed,
    auth_failed,  // CONNECT refused: bad credentials, not authorized, banned
};
inline constexpr std::size_t lifecycle_event_count = 5;
std::string_view to_string(lifecycle_event e);  // "CONNECTED", ... (the API's names)
bool lifecycle_event_from_string(std::string_view name, lifecycle_event& out);
constexpr std::uint32_t event_bit(lifecycle_event e) {
    return std::uint32_t{1} << static_cast<unsigned>(e);
}

class integration_matcher {
  public:
    struct entry {
        std::string integration_id;
        std::string log_topic;  // msg.ie.<id>
        std::vector<std::string> topic_filters;
        std::uint32_t events = 0;  // event_bit()s of the lifecycle events it wants
    };

    // Replaces every entry (the enabled integrations).
    void replace(std::vector<entry> entries);

    // Appends to `out` the log topic of every integration with a filter matching `topic`, once
    // per integration, in the order of the entries. Topics starting with '$' match only filters
    // that start with '$' too (MQTT 4.7.2).
    void match(std::string_view topic, std::vector<std::string>& out) const;

    // Whether some entry's log topic is `log_topic` (a copy whose produce failed is dropped
    // when its integration is gone: publish_router).
    bool routes_to(std::string_view log_topic) const;

    bool empty() const noexcept { return empty_.load(std::memory_order_acquire); }

    // Appends the log topic of every integration that wants `e`. One atomic load when none
    // wants any event.
    void match_event(lifecycle_event e, std::vector<std::string>& out) const;
    // Whether some integration wants `e` (one atomic load): callers skip gathering an event's
    // details when none does.
    bool wants_event(lifecycle_event e) const noexcept {
        return (events_.load(std::memory_order_acquire) & event_bit(e)) != 0;
    }

  private:
    using table = std::vector<entry>;
    std::atomic<std::shared_ptr<const table>> table_{std::make_shared<const table>()};
    std::atomic<bool> empty_{true};
    std::atomic<std::uint32_t> events_{0};  // union of the entries' events
};

}  // namespace starling::integration
