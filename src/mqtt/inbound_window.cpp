#include "mqtt/inbound_window.h"

#include <algorithm>

namespace starling::mqtt {

inbound_window::arrival inbound_window::on_publish(std::uint16_t packet_id, qos level,
                                                   std::size_t limit) {
    // Every PUBLISH counts until its answer is out, resends included (section 4.9: the
    // client's send quota is spent on each PUBLISH it sends).
    if (limit != 0 && outstanding_ >= limit) {
        return arrival::over_limit;
    }
    pending p{.packet_id = packet_id, .level = level};
    if (level == qos::exactly_once) {
        if (find_release(packet_id) != releases_.end()) {
            // Its PUBREC went out before: answer it again, publish nothing (MQTT-4.3.3-10).
            p.resend = true;
            p.decided = true;
        } else if (const pending* first = find_pending(packet_id, level)) {
            // The first is still being written (or its PUBREC waits its turn): this one gets
            // the same answer, after it.
            p.resend = true;
            p.decided = first->decided;
            p.code = first->code;
        }
    }
    answers_.push_back(p);
    ++outstanding_;
    return p.resend ? arrival::resent : arrival::accepted;
}

bool inbound_window::decide(std::uint16_t packet_id, reason_code code) {
    pending* first = nullptr;
    for (auto& p : answers_) {
        if (p.packet_id == packet_id && !p.decided && !p.resend) {
            first = &p;
            break;
        }
    }
    if (first == nullptr) {
        return false;
    }
    first->decided = true;
    first->code = code;
    if (first->level == qos::exactly_once) {
        for (auto& p : answers_) {
            if (p.resend && !p.decided && p.packet_id == packet_id) {
                p.decided = true;
                p.code = code;
            }
        }
    }
    return true;
}

std::optional<inbound_window::answer> inbound_window::next_answer() {
    if (answers_.empty() || !answers_.front().decided) {
        return std::nullopt;
    }
    const pending p = answers_.front();
    answers_.pop_front();
    answer a{.packet_id = p.packet_id, .level = p.level, .code = p.code};
    if (p.level == qos::exactly_once && !is_error(p.code) && !p.resend) {
        // Complete only at PUBCOMP: the count moves to the wait for the PUBREL.
        if (insert_release(p.packet_id, /*counted=*/true)) {
            a.awaiting_release_changed = true;
            return a;
        }
    }
    if (outstanding_ > 0) {
        --outstanding_;
    }
    return a;
}

reason_code inbound_window::on_pubrel(std::uint16_t packet_id) {
    auto it = find_release(packet_id);
    if (it == releases_.end()) {
        return reason_code::packet_identifier_not_found;
    }
    if (it->counted && outstanding_ > 0) {
        --outstanding_;
    }
    releases_.erase(it);
    return reason_code::success;
}

std::vector<std::uint16_t> inbound_window::awaiting_release() const {
    std::vector<std::uint16_t> ids;
    ids.reserve(releases_.size());
    for (const auto& r : releases_) {
        ids.push_back(r.packet_id);
    }
    return ids;
}

bool inbound_window::awaits_release(std::uint16_t packet_id) const {
    auto slot = release_slot(packet_id);
    return slot != releases_.end() && slot->packet_id == packet_id;
}

void inbound_window::restore(std::span<const std::uint16_t> packet_ids) {
    for (auto id : packet_ids) {
        (void)insert_release(id, /*counted=*/false);
    }
}

void inbound_window::connection_ended() {
    answers_.clear();
    for (auto& r : releases_) {
        r.counted = false;
    }
    outstanding_ = 0;
}

void inbound_window::clear() {
    connection_ended();
    releases_.clear();
}

std::vector<inbound_window::release>::const_iterator inbound_window::release_slot(
    std::uint16_t packet_id) const {
    return std::lower_bound(releases_.begin(), releases_.end(), packet_id,
                            [](const release& r, std::uint16_t id) { return r.packet_id < id; });
}

std::vector<inbound_window::release>::iterator inbound_window::find_release(
    std::uint16_t packet_id) {
    auto it = releases_.begin() + (release_slot(packet_id) - releases_.cbegin());
    return it != releases_.end() && it->packet_id == packet_id ? it : releases_.end();
}

bool inbound_window::insert_release(std::uint16_t packet_id, bool counted) {
    auto slot = release_slot(packet_id);
    if (slot != releases_.end() && slot->packet_id == packet_id) {
        return false;
    }
    releases_.insert(slot, release{.packet_id = packet_id, .counted = counted});
    return true;
}

inbound_window::pending* inbound_window::find_pending(std::uint16_t packet_id, qos level) {
    for (auto& p : answers_) {
        if (p.packet_id == packet_id && p.level == level && !p.resend) {
            return &p;
        }
    }
    return nullptr;
}

}  // namespace starling::mqtt
