#pragma once

// Keep Alive, server side (MQTT 3.1.1 section 3.1.2.10, MQTT 5.0 sections 3.1.2.10 and
// 3.2.2.3.14). Sans-I/O: it decides the interval a connection runs under and when silence ends
// it; the caller reads the clock, arms its timer and closes the connection.
//
// Two parts:
// - negotiate_keep_alive: what the server enforces for a CONNECT's Keep Alive, and whether a v5
//   client must be told (Server Keep Alive in the CONNACK).
// - keep_alive_deadline: the instant a connection that stays silent is closed — one and a half
//   times the interval after the last control packet the client sent.
//
// The server has a maximum and enforces it on every protocol level, so no connection stays
// open forever without a packet: at v5 a client that asked for more, or for none (0), is told
// the maximum in Server Keep Alive and must use it; 3.1.x has no way to tell the client, so the
// maximum is applied all the same (a client that pings within it, as it asked, is unaffected;
// one that asked for more or for none is closed after 1.5 × the maximum of silence).

#include "mqtt/protocol_version.h"

#include <chrono>
#include <cstdint>
#include <optional>

namespace starling::mqtt {

struct keep_alive_terms {
    // The interval in force, seconds; never 0 (the server's maximum is at least 1 s).
    std::uint16_t seconds = 0;
    // v5 only: the value to send as Server Keep Alive, set when it differs from what the client
    // asked. Always empty for 3.1.x.
    std::optional<std::uint16_t> server_keep_alive;
};

// `requested`: the CONNECT's Keep Alive (0 = the client asks for none). `server_maximum`: the
// server's maximum, seconds, at least 1 (mqtt.keep-alive.max-keep-alive).
[[nodiscard]] keep_alive_terms negotiate_keep_alive(std::uint16_t requested,
                                                    std::uint16_t server_maximum,
                                                    protocol_version version);

class keep_alive_deadline {
  public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    keep_alive_deadline() = default;
    // `seconds` 0: no deadline (a connection before its CONNECT was negotiated).
    keep_alive_deadline(std::uint16_t seconds, time_point now) : seconds_(seconds), last_(now) {}

    [[nodiscard]] std::uint16_t seconds() const { return seconds_; }

    // The client sent a control packet at `now` (any packet counts, PINGREQ or not).
    void on_packet(time_point now) { last_ = now; }

    // How long the connection may stay silent: 1.5 × the interval. Zero when there is none.
    [[nodiscard]] duration grace() const {
        return std::chrono::milliseconds(static_cast<std::int64_t>(seconds_) * 1500);
    }
    // When the connection is closed unless a packet arrives first; nullopt when there is no
    // deadline.
    [[nodiscard]] std::optional<time_point> deadline() const {
        if (seconds_ == 0) {
            return std::nullopt;
        }
        return last_ + grace();
    }
    // Whether the silence at `now` ends the connection (MQTT 5.0 reason 0x8D, Keep alive
    // timeout). A timer that fires early, or after a packet moved the deadline, reads false:
    // the caller arms a new timer at deadline().
    [[nodiscard]] bool expired(time_point now) const {
        return seconds_ != 0 && now - last_ >= grace();
    }

  private:
    std::uint16_t seconds_ = 0;
    time_point last_{};
};

}  // namespace starling::mqtt
