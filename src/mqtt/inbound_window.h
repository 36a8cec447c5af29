#pragma once

// inbound_window: what the server owes a client for the QoS 1 and QoS 2 PUBLISHes it receives
// (MQTT 5.0 sections 4.3.2, 4.3.3, 4.6 and 4.9; 3.1.1 sections 4.3 and 4.6). Sans-I/O: it is told
// what arrived, what was decided about each PUBLISH (written to the log, or refused with a
// reason code) and which PUBRELs came, and it says what to answer, in which order; it never
// sends, stores or reads a clock, so its tests are plain function calls.
//
// The rules it keeps, each of which the broker once got wrong in a corner:
// - **Answers leave in the order the PUBLISHes came** (MQTT-4.6.0-2, -3), whatever order the
//   log decides them in: an answer decided early waits for the older ones.
// - **A QoS 2 message is published once.** Its packet id is remembered from its PUBREC until
//   the PUBREL, and a PUBLISH with that id meanwhile is answered PUBREC again and not published
//   (MQTT-4.3.3-10) — also while the first is still being written (a 3.1.1 client may resend
//   on a timeout), when it gets its PUBREC after the first one's.
// - **Receive Maximum** (v5, section 3.3.4): a PUBLISH counts from its arrival until it is
//   complete (PUBACK; PUBREC with an error; PUBCOMP after a successful PUBREC). One more than
//   the limit is a protocol error the caller answers with DISCONNECT 0x93. A resent PUBLISH
//   counts until its answer went out, as the client's send quota does (section 4.9).
// - **A connection's answers go with it**: PUBLISHes not answered when it ends are resent by
//   the client on its next connection. The ids awaiting PUBREL belong to the session and stay
//   (restore() brings them back from storage after a restart), but no longer count against
//   the new connection's Receive Maximum.
//
// QoS 0 PUBLISHes are never given to it. A QoS 1 PUBLISH resent while the first is undecided is
// a second message with its own answer (at least once allows it; MQTT-4.3.2-2).

#include "base/lazy_deque.h"
#include "mqtt/qos.h"
#include "mqtt/reason_code.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace starling::mqtt {

class inbound_window {
  public:
    enum class arrival {
        // New: decide it (decide() with the log's verdict or a refusal), then send_ready().
        accepted,
        // A QoS 2 PUBLISH whose id awaits PUBREL or is still being decided: nothing to publish;
        // its PUBREC is queued in order (already decided, or decided with the first one).
        resent,
        // v5: more PUBLISHes outstanding than the client's Receive Maximum allows: DISCONNECT
        // 0x93. Nothing was recorded.
        over_limit,
    };

    struct answer {
        std::uint16_t packet_id = 0;
        qos level = qos::at_least_once;  // at_least_once: PUBACK; exactly_once: PUBREC
        reason_code code = reason_code::success;
        // This answer started the wait for a PUBREL: a persistent session stores the ids again.
        bool awaiting_release_changed = false;
    };

    // A QoS 1 or 2 PUBLISH arrived. `limit`: the Receive Maximum to enforce; 0 = none (3.1.1,
    // whose clients the caller holds back instead, see unsent()).
    [[nodiscard]] arrival on_publish(std::uint16_t packet_id, qos level, std::size_t limit);

    // The verdict on an accepted PUBLISH with this id: success (it is stored) or the reason code
    // of a refusal (it is not published). Decides the oldest undecided PUBLISH with the id, and
    // for QoS 2 the resends waiting on it. False when there is none (the connection it came on
    // ended, or a QoS 0 id).
    bool decide(std::uint16_t packet_id, reason_code code);

    // The next answer to send, oldest first; nullopt while the oldest is undecided (or none).
    [[nodiscard]] std::optional<answer> next_answer();

    // A PUBREL arrived: the reason code of its PUBCOMP (success, or 0x92 Packet Identifier not
    // found when the id awaits no PUBREL). On success the stored ids changed.
    [[nodiscard]] reason_code on_pubrel(std::uint16_t packet_id);

    // Ids awaiting PUBREL, ascending: what a persistent session stores.
    [[nodiscard]] std::vector<std::uint16_t> awaiting_release() const;
    [[nodiscard]] bool awaits_release(std::uint16_t packet_id) const;
    // Ids a resumed session remembered as awaiting PUBREL (from storage).
    void restore(std::span<const std::uint16_t> packet_ids);

    // The connection ended: answers not sent are dropped (the client resends those PUBLISHes);
    // ids awaiting PUBREL stay with the session and stop counting against Receive Maximum.
    void connection_ended();
    // The session ended: nothing is owed any more.
    void clear();

    // Answers not sent yet (decided or not): the window a 3.1.1 client is held to.
    [[nodiscard]] std::size_t unsent() const { return answers_.size(); }
    // PUBLISHes counted against Receive Maximum.
    [[nodiscard]] std::size_t outstanding() const { return outstanding_; }

  private:
    struct pending {
        std::uint16_t packet_id = 0;
        qos level = qos::at_least_once;
        bool decided = false;
        // A QoS 2 resend: answered like the PUBLISH it repeats, never published itself.
        bool resend = false;
        reason_code code = reason_code::success;
    };
    struct release {
        std::uint16_t packet_id = 0;
        bool counted = false;  // counts against this connection's Receive Maximum
    };

    // Where `packet_id` is, or would go, in the sorted release list.
    std::vector<release>::const_iterator release_slot(std::uint16_t packet_id) const;
    std::vector<release>::iterator find_release(std::uint16_t packet_id);
    // Starts a wait for the PUBREL of `packet_id` unless one exists; true when it did.
    bool insert_release(std::uint16_t packet_id, bool counted);
    pending* find_pending(std::uint16_t packet_id, qos level);

    base::lazy_deque<pending> answers_;  // arrival order
    std::vector<release> releases_;      // sorted by packet id
    std::size_t outstanding_ = 0;
};

}  // namespace starling::mqtt
