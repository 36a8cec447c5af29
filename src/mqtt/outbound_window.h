#pragma once

// outbound_window: the QoS 1 and QoS 2 PUBLISHes a server sent to a client and not yet seen
// acknowledged (MQTT 5.0 sections 4.3.2, 4.3.3 and 4.9; 3.1.1 sections 4.3 and 4.4). Sans-I/O:
// it keeps, per packet id, the stage of the exchange and what the caller attached (`Entry`:
// the message, where it came from), and says what each acknowledgement means; the caller sends
// PUBREL, removes the message from storage and fills the window again.
//
// The stages: a QoS 1 PUBLISH awaits its PUBACK; a QoS 2 PUBLISH awaits its PUBREC, then (after
// a PUBREC below 0x80, answered with PUBREL) its PUBCOMP. A PUBREC of 0x80 or above ends the
// exchange (section 4.3.3: the message is not delivered and no PUBREL follows). The client's
// Receive Maximum caps how many are outstanding (section 4.9): has_room().
//
// What it answers for the client's mistakes, none of which ends the connection:
// - an acknowledgement for an id not in flight, or of the wrong kind (PUBACK for a QoS 2
//   PUBLISH, PUBCOMP before the PUBREC) is ignored;
// - a PUBREC for an id not in flight is answered PUBREL 0x92 Packet Identifier not found, so a
//   client whose session outlived the server's knowledge can still complete;
// - a PUBREC repeated after the PUBREL went out is answered with the PUBREL again (a 3.1.1
//   client that resends on a timeout would otherwise wait for it forever).

#include "mqtt/qos.h"
#include "mqtt/reason_code.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace starling::mqtt {

template <class Entry>
class outbound_window {
  public:
    enum class stage : std::uint8_t { awaiting_puback, awaiting_pubrec, awaiting_pubcomp };

    // What a PUBREC asks of the caller.
    enum class pubrec_action : std::uint8_t {
        send_pubrel,       // moved to awaiting PUBCOMP: send PUBREL (success)
        resend_pubrel,     // a repeat: send the PUBREL again
        finish,            // refused by the client (code >= 0x80): the exchange is over
        pubrel_not_found,  // no such PUBLISH: send PUBREL 0x92
        ignore,            // the id awaits a PUBACK (a QoS 1 PUBLISH): nothing to do
    };

    struct slot {
        stage at = stage::awaiting_puback;
        Entry entry;
    };

    // The PUBLISH `packet_id` of QoS `level` (1 or 2) goes out now, carrying `entry`. An id
    // already in flight is replaced (the caller allocates ids with next_id()).
    Entry& start(std::uint16_t packet_id, qos level, Entry entry) {
        slot& s = slots_[packet_id];
        s.at = level == qos::exactly_once ? stage::awaiting_pubrec : stage::awaiting_puback;
        s.entry = std::move(entry);
        return s.entry;
    }

    // A QoS 2 exchange interrupted after its PUBREC (a resumed session) resumes at PUBREL: the
    // caller sends PUBREL, the PUBCOMP completes it.
    Entry& resume_at_pubrel(std::uint16_t packet_id, Entry entry) {
        slot& s = slots_[packet_id];
        s.at = stage::awaiting_pubcomp;
        s.entry = std::move(entry);
        return s.entry;
    }

    // PUBACK: true when a QoS 1 PUBLISH awaited it (the caller finishes it).
    [[nodiscard]] bool on_puback(std::uint16_t packet_id) const {
        return at(packet_id) == stage::awaiting_puback;
    }

    [[nodiscard]] pubrec_action on_pubrec(std::uint16_t packet_id, reason_code code) {
        auto it = slots_.find(packet_id);
        if (it == slots_.end()) {
            return pubrec_action::pubrel_not_found;
        }
        switch (it->second.at) {
            case stage::awaiting_puback:
                return pubrec_action::ignore;
            case stage::awaiting_pubcomp:
                return pubrec_action::resend_pubrel;
            case stage::awaiting_pubrec:
                break;
        }
        if (is_error(code)) {
            return pubrec_action::finish;
        }
        it->second.at = stage::awaiting_pubcomp;
        return pubrec_action::send_pubrel;
    }

    // PUBCOMP: true when the id awaited it (the caller finishes it).
    [[nodiscard]] bool on_pubcomp(std::uint16_t packet_id) const {
        return at(packet_id) == stage::awaiting_pubcomp;
    }

    // Ends the exchange of `packet_id`: what it carried, or nullopt when it was not in flight.
    std::optional<Entry> finish(std::uint16_t packet_id) {
        auto it = slots_.find(packet_id);
        if (it == slots_.end()) {
            return std::nullopt;
        }
        std::optional<Entry> entry(std::move(it->second.entry));
        slots_.erase(it);
        return entry;
    }

    // The next packet id after `last` (1…65535, wrapping) that is not in flight and not
    // `reserved` (ids another source of the session holds); 0 when every id is taken.
    template <class Reserved>
    [[nodiscard]] std::uint16_t next_id(std::uint16_t last, Reserved&& reserved) const {
        std::uint16_t id = last;
        for (int attempts = 0; attempts < 65535; ++attempts) {
            id = static_cast<std::uint16_t>(id >= 65535 ? 1 : id + 1);
            if (!slots_.contains(id) && !reserved(id)) {
                return id;
            }
        }
        return 0;
    }

    // Room for one more PUBLISH under `maximum` outstanding (the client's Receive Maximum, or
    // the server's own cap, whichever is lower).
    [[nodiscard]] bool has_room(std::size_t maximum) const { return slots_.size() < maximum; }

    // What `packet_id` carries; nullptr when it is not in flight.
    [[nodiscard]] Entry* find(std::uint16_t packet_id) {
        auto it = slots_.find(packet_id);
        return it == slots_.end() ? nullptr : &it->second.entry;
    }

    [[nodiscard]] std::optional<stage> at(std::uint16_t packet_id) const {
        auto it = slots_.find(packet_id);
        return it == slots_.end() ? std::nullopt : std::optional<stage>(it->second.at);
    }
    [[nodiscard]] bool contains(std::uint16_t packet_id) const {
        return slots_.contains(packet_id);
    }
    [[nodiscard]] std::size_t size() const { return slots_.size(); }
    [[nodiscard]] bool empty() const { return slots_.empty(); }
    void clear() { slots_.clear(); }

    // In packet-id order: (id, slot).
    [[nodiscard]] auto begin() const { return slots_.begin(); }
    [[nodiscard]] auto end() const { return slots_.end(); }

  private:
    std::map<std::uint16_t, slot> slots_;
};

}  // namespace starling::mqtt
