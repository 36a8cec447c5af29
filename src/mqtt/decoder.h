#pragma once

// Incremental, Sans-I/O MQTT decoder: bytes in, packets out.
//
//   decoder d{decoder_limits{.max_packet_size = 65536}};
//   auto buf = d.prepare(4096);            // read straight into the decoder (no copy) ...
//   std::size_t n = socket.read_some(buf);
//   d.commit(n);                            // ... or d.feed(bytes) to copy them in
//   for (;;) {
//       auto r = d.next();
//       if (std::holds_alternative<need_more>(r)) break;
//       if (auto* e = std::get_if<decode_error>(&r)) { /* DISCONNECT / close */ break; }
//       handle(std::get<packet>(std::move(r)));
//   }
//
// A server-role decoder learns the protocol version from CONNECT (which must come first, and
// only once) and decodes every later packet at that version. A client-role decoder (a client,
// the load generator) must be told the version with set_protocol_version() before it decodes.
// The role also decides which packet types are legal: a server never receives CONNACK, SUBACK,
// UNSUBACK or PINGRESP; a client never receives CONNECT, SUBSCRIBE, UNSUBSCRIBE or PINGREQ.
//
// The maximum packet size (whole packet, fixed header included, as MQTT 5.0 counts it) is
// checked as soon as the fixed header is complete, before the body is buffered. Servers must
// set it (the default is the protocol maximum, 256 MiB); even so, the buffer grows only with
// bytes that actually arrive (at most 1 MiB ahead of them), never with what a header promises.
//
// Errors: decode_error.code is the v5 reason code the specification requires (malformed_packet,
// protocol_error, packet_too_large, topic_name_invalid, ...); at 3.x the caller closes the
// connection (for an error in CONNECT it may first send a CONNACK with
// to_connect_return_code(code)). After an error the decoder stays failed: next() keeps
// returning the same error and fed bytes are discarded.
//
// Lifecycle and concurrency: one decoder per connection, owned by it, used by one thread at a
// time. Not copyable (it owns the receive buffer); movable.

#include "mqtt/packet.h"
#include "mqtt/protocol_version.h"
#include "mqtt/reason_code.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace starling::mqtt {

enum class decoder_role : std::uint8_t {
    server,  // decodes what clients send
    client,  // decodes what servers send
};

struct decoder_limits {
    // Largest acceptable packet in bytes including the fixed header. The protocol maximum is
    // 268435460 (1 + 4 + 268435455).
    std::uint32_t max_packet_size = 268'435'460;
    // When true, a v5 PUBLISH (or will) whose Payload Format Indicator is 1 must carry valid
    // UTF-8 or decoding fails with payload_format_invalid. The specification makes this check
    // optional (MQTT 5.0 section 3.3.2.3.2) and it costs a pass over the payload.
    bool validate_payload_format = false;
    // Most v5 User Properties one packet (or a CONNECT's will) may carry; beyond it decoding
    // fails with implementation_specific_error (0x83: valid, but not accepted by this server).
    // 0 = unlimited. Each property costs two strings: this bounds what one packet can allocate.
    std::uint16_t max_user_properties = 0;
};

struct need_more {
    bool operator==(const need_more&) const = default;
};

struct decode_error {
    reason_code code = reason_code::malformed_packet;
    std::string detail;  // human-readable, for logs ("PUBREL: reserved fixed-header flags")
};

using decode_result = std::variant<need_more, packet, decode_error>;

class decoder {
  public:
    explicit decoder(decoder_limits limits = {}, decoder_role role = decoder_role::server);
    ~decoder();
    decoder(decoder&&) noexcept;
    decoder& operator=(decoder&&) noexcept;
    decoder(const decoder&) = delete;
    decoder& operator=(const decoder&) = delete;

    // Copies bytes into the receive buffer.
    void feed(std::span<const std::uint8_t> bytes);
    void feed(std::string_view bytes);

    // Zero-copy alternative to feed(): a writable region of at least `min_size` bytes at the
    // end of the buffered data; read into it, then commit() how many bytes were written. The
    // region is invalidated by any other call.
    std::span<std::uint8_t> prepare(std::size_t min_size);
    void commit(std::size_t size);

    // The next complete packet, need_more, or the (sticky) error.
    decode_result next();

    // Fixes the protocol version: required before decoding in the client role; in the server
    // role it is learned from CONNECT.
    void set_protocol_version(mqtt::protocol_version version) noexcept;
    std::optional<mqtt::protocol_version> version() const noexcept;

    // May change at any time; applies from the next fixed header.
    void set_max_packet_size(std::uint32_t size) noexcept;

    decoder_role role() const noexcept;
    bool failed() const noexcept;
    // Bytes received but not yet consumed by next().
    std::size_t buffered() const noexcept;
    // Frees the receive buffer when nothing is buffered, so an idle connection holds no
    // receive memory. Cheap; call after draining next().
    void shrink() noexcept;

  private:
    struct state;
    std::unique_ptr<state> state_;
};

}  // namespace starling::mqtt
