#pragma once

// outbound_topic_aliases: the server → client topic aliases of one MQTT 5 connection
// (MQTT 5.0 section 3.3.2.3.4). Sans-I/O: it decides what a PUBLISH carries and learns what
// went out; it never sends.
//
// The client's CONNECT says how many aliases it accepts (Topic Alias Maximum). The first
// PUBLISH of a topic carries the topic and a free alias, which establishes the mapping at the
// client; later ones carry the alias and an empty topic. When every alias is in use, the least
// recently used one is re-established for the new topic (a PUBLISH with both the topic and that
// alias replaces the client's mapping), so a client with many topics keeps aliasing its busiest.
//
// choose() and sent() are separate because a PUBLISH can be dropped after the choice (larger
// than the client's Maximum Packet Size): a mapping is recorded only once the packet that
// establishes it is on its way, or the client would be sent an alias it never learnt.
//
// Mappings belong to the connection: a new connection starts with none (section 3.3.2.3.4).

#include "mqtt/reason_code.h"

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace starling::mqtt {

class outbound_topic_aliases {
  public:
    struct choice {
        std::uint16_t alias = 0;  // 0: send without an alias
        bool with_topic = true;   // false: the client knows the alias, the topic goes empty
    };

    explicit outbound_topic_aliases(std::uint16_t maximum = 0) : maximum_(maximum) {}
    // Move-only: the index holds views of the strings in the list, which a move keeps (the
    // nodes stay where they are) and a copy would leave pointing into the original.
    outbound_topic_aliases(outbound_topic_aliases&&) noexcept = default;
    outbound_topic_aliases& operator=(outbound_topic_aliases&&) noexcept = default;
    outbound_topic_aliases(const outbound_topic_aliases&) = delete;
    outbound_topic_aliases& operator=(const outbound_topic_aliases&) = delete;
    ~outbound_topic_aliases() = default;

    [[nodiscard]] std::uint16_t maximum() const { return maximum_; }
    [[nodiscard]] std::size_t size() const { return recency_.size(); }

    // What a PUBLISH of `topic` should carry now.
    [[nodiscard]] choice choose(std::string_view topic) const;

    // The PUBLISH of `topic` carrying `c` (from choose(), nothing sent in between) went out.
    void sent(std::string_view topic, choice c);

    // The topic the client maps `alias` to ("" when none); for tests and diagnostics.
    [[nodiscard]] std::string_view topic_of(std::uint16_t alias) const;

  private:
    using entry = std::pair<std::string, std::uint16_t>;  // topic, alias
    std::uint16_t maximum_;
    std::list<entry> recency_;  // most recently sent first
    std::unordered_map<std::string_view, std::list<entry>::iterator> by_topic_;  // keys in recency_
};

// inbound_topic_aliases: the client → server topic aliases of one MQTT 5 connection (section
// 3.3.2.3.4). Sans-I/O: resolve() turns a PUBLISH's alias into its topic, or says why the
// PUBLISH is a protocol violation; the caller sends the DISCONNECT.
//
// A PUBLISH with a topic and an alias (re)defines the alias; one with an empty topic and an
// alias takes the alias's topic. The table is created on the first alias (one pointer until
// then: most clients use none) and belongs to the connection (section 3.3.2.3.4).
class inbound_topic_aliases {
  public:
    struct refusal {
        reason_code code;      // for the DISCONNECT
        std::string_view why;  // for the log
    };

    // Resolves `alias` (consumed: reset on success) for a PUBLISH to `topic` (filled in when
    // it was empty). `maximum`: the Topic Alias Maximum the server announced in CONNACK.
    [[nodiscard]] std::optional<refusal> resolve(std::string& topic,
                                                 std::optional<std::uint16_t>& alias,
                                                 std::uint16_t maximum);

    // The topic the client mapped `alias` to ("" when none); for tests and diagnostics.
    [[nodiscard]] std::string_view topic_of(std::uint16_t alias) const;

  private:
    std::unique_ptr<std::unordered_map<std::uint16_t, std::string>> table_;
};

}  // namespace starling::mqtt
