#pragma once

// A reference model of mqtt::inbound_window and a driver that runs one operation on both and
// compares them. Shared by the seeded model test (inbound_window_test.cpp) and the fuzz target
// (tests/fuzz/inbound_window): the model is written for obviousness — a list of what arrived
// and a set of ids awaiting PUBREL, everything else recomputed by scanning — where the window
// keeps counters.

#include "mqtt/inbound_window.h"

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace starling::mqtt::testing {

class inbound_window_model {
  public:
    struct slot {
        std::uint16_t id = 0;
        qos level = qos::at_least_once;
        bool resend = false;
        bool decided = false;
        reason_code code = reason_code::success;
    };

    // What the model expects on_publish to say.
    inbound_window::arrival publish(std::uint16_t id, qos level, std::size_t limit) {
        if (limit != 0 && outstanding() >= limit) {
            return inbound_window::arrival::over_limit;
        }
        slot s{.id = id, .level = level};
        if (level == qos::exactly_once) {
            if (releases.contains(id)) {
                s.resend = true;
                s.decided = true;
            } else {
                for (const auto& q : queue) {
                    if (q.id == id && q.level == qos::exactly_once && !q.resend) {
                        s.resend = true;
                        s.decided = q.decided;
                        s.code = q.code;
                        break;
                    }
                }
            }
        }
        queue.push_back(s);
        return s.resend ? inbound_window::arrival::resent : inbound_window::arrival::accepted;
    }

    bool decide(std::uint16_t id, reason_code code) {
        auto first = std::find_if(queue.begin(), queue.end(), [&](const slot& s) {
            return s.id == id && !s.decided && !s.resend;
        });
        if (first == queue.end()) {
            return false;
        }
        first->decided = true;
        first->code = code;
        if (first->level == qos::exactly_once) {
            for (auto& s : queue) {
                if (s.resend && !s.decided && s.id == id) {
                    s.decided = true;
                    s.code = code;
                }
            }
        }
        return true;
    }

    std::optional<slot> next() {
        if (queue.empty() || !queue.front().decided) {
            return std::nullopt;
        }
        slot s = queue.front();
        queue.pop_front();
        if (s.level == qos::exactly_once && !s.resend && !is_error(s.code) &&
            !releases.contains(s.id)) {
            releases[s.id] = true;
        }
        return s;
    }

    reason_code pubrel(std::uint16_t id) {
        if (releases.erase(id) == 0) {
            return reason_code::packet_identifier_not_found;
        }
        return reason_code::success;
    }

    void connection_ended() {
        queue.clear();
        for (auto& [id, counted] : releases) {
            counted = false;
        }
    }

    // Every PUBLISH not answered yet, and every QoS 2 of this connection awaiting its PUBREL.
    std::size_t outstanding() const {
        std::size_t n = queue.size();
        for (const auto& [id, counted] : releases) {
            n += counted ? 1 : 0;
        }
        return n;
    }

    std::vector<std::uint16_t> awaiting() const {
        std::vector<std::uint16_t> ids;
        for (const auto& [id, counted] : releases) {
            ids.push_back(id);
        }
        return ids;
    }

    // Whether a QoS 2 PUBLISH with this id was accepted and not answered yet.
    bool qos2_in_progress(std::uint16_t id) const {
        return std::any_of(queue.begin(), queue.end(), [id](const slot& s) {
            return s.id == id && s.level == qos::exactly_once && !s.resend;
        });
    }

    std::list<slot> queue;
    std::map<std::uint16_t, bool> releases;  // id → counted in this connection
};

// One operation, chosen by `op` and `arg` (any values: the fuzz target feeds bytes), run on the
// window and the model. Returns an empty string when they agree, else what differed.
inline std::string run_inbound_window_step(inbound_window& w, inbound_window_model& m,
                                           std::uint8_t op, std::uint8_t arg) {
    const auto id = static_cast<std::uint16_t>(1 + arg % 6);
    const std::size_t limit = (arg & 0x40) != 0 ? 4 : 0;
    switch (op % 8) {
        case 0:
        case 1: {  // PUBLISH
            const qos level = (arg & 0x80) != 0 ? qos::exactly_once : qos::at_least_once;
            // A second publication of one QoS 2 message is what the window exists to prevent.
            const bool published_already = m.releases.contains(id) || m.qos2_in_progress(id);
            const auto expected = m.publish(id, level, limit);
            const auto got = w.on_publish(id, level, limit);
            if (got != expected) {
                return "on_publish(" + std::to_string(id) + ") disagrees with the model";
            }
            if (level == qos::exactly_once && published_already &&
                got == inbound_window::arrival::accepted) {
                return "a QoS 2 message was accepted for publication twice";
            }
            break;
        }
        case 2:
        case 3: {  // the log (or a refusal) decides
            const reason_code code =
                (arg & 0x80) != 0 ? reason_code::quota_exceeded : reason_code::success;
            if (w.decide(id, code) != m.decide(id, code)) {
                return "decide(" + std::to_string(id) + ") disagrees with the model";
            }
            break;
        }
        case 4:
        case 5: {  // send what is ready
            for (;;) {
                auto expected = m.next();
                auto got = w.next_answer();
                if (expected.has_value() != got.has_value()) {
                    return "next_answer() readiness disagrees with the model";
                }
                if (!got) {
                    break;
                }
                if (got->packet_id != expected->id || got->level != expected->level ||
                    got->code != expected->code) {
                    return "next_answer() sent another answer than the model, or out of order";
                }
            }
            break;
        }
        case 6: {  // PUBREL
            if (w.on_pubrel(id) != m.pubrel(id)) {
                return "on_pubrel(" + std::to_string(id) + ") disagrees with the model";
            }
            break;
        }
        case 7: {
            if ((arg & 0x30) == 0x30) {
                w.clear();
                m = inbound_window_model{};
            } else if ((arg & 0x30) == 0x20) {
                // A restart: the stored ids come back into a fresh window.
                const auto stored = w.awaiting_release();
                w = inbound_window{};
                w.restore(stored);
                m.connection_ended();
            } else {
                w.connection_ended();
                m.connection_ended();
            }
            break;
        }
        default:
            break;
    }
    if (w.outstanding() != m.outstanding()) {
        return "outstanding() is " + std::to_string(w.outstanding()) + ", the model says " +
               std::to_string(m.outstanding());
    }
    if (w.unsent() != m.queue.size()) {
        return "unsent() disagrees with the model";
    }
    if (w.awaiting_release() != m.awaiting()) {
        return "awaiting_release() disagrees with the model";
    }
    return {};
}

}  // namespace starling::mqtt::testing
