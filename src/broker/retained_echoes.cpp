#include "broker/retained_echoes.h"

#include <algorithm>

namespace starling::broker {

bool retained_echoes::same_message(const app_message& a, const app_message& b) {
    if (a.created_at_ms != b.created_at_ms || a.topic != b.topic || a.node_id != b.node_id) {
        return false;
    }
    if (a.sequence != 0 && b.sequence != 0) {
        return a.sequence == b.sequence;
    }
    return a.publisher_id == b.publisher_id && a.payload == b.payload;
}

int retained_echoes::order(const app_message& a, const app_message& b) {
    if (a.created_at_ms != b.created_at_ms) {
        return a.created_at_ms < b.created_at_ms ? -1 : 1;
    }
    if (a.node_id == b.node_id && a.sequence != 0 && b.sequence != 0 && a.sequence != b.sequence) {
        return a.sequence < b.sequence ? -1 : 1;
    }
    return 0;  // the same message, or no telling (two nodes' messages of one millisecond)
}

bool retained_echoes::recent(const app_message& m, std::int64_t now_ms) {
    return m.created_at_ms != 0 && now_ms - m.created_at_ms < window_ms;
}

void retained_echoes::forget_old(std::vector<message_ptr>& list, std::int64_t now_ms) {
    std::erase_if(list, [now_ms](const message_ptr& m) { return !recent(*m, now_ms); });
}

void retained_echoes::subscribe_finished() {
    if (pending_subscribes_ > 0 && --pending_subscribes_ == 0) {
        sent_live_.clear();
    }
}

bool retained_echoes::admit_retained(const message_ptr& msg, std::int64_t now_ms, bool watch) {
    const bool live_already =
        std::any_of(sent_live_.begin(), sent_live_.end(), [&](const message_ptr& m) {
            return m->topic == msg->topic && (same_message(*m, *msg) || order(*m, *msg) > 0);
        });
    if (live_already) {
        return false;
    }
    forget_old(sent_retained_, now_ms);
    if (watch && recent(*msg, now_ms) && sent_retained_.size() < limit) {
        sent_retained_.push_back(msg);
    }
    return true;
}

bool retained_echoes::take_live_echo(const message_ptr& msg, std::int64_t now_ms) {
    if (!recent(*msg, now_ms)) {
        return false;
    }
    auto it = std::find_if(sent_retained_.begin(), sent_retained_.end(),
                           [&](const message_ptr& m) { return m->topic == msg->topic; });
    if (it == sent_retained_.end()) {
        return false;
    }
    if (same_message(**it, *msg)) {
        sent_retained_.erase(it);  // its one echo
        return true;
    }
    const int age = order(*msg, **it);
    if (age < 0) {
        // Replaced by the retained copy before the SUBSCRIBE read it: the client has the newer
        // value (as if the SUBSCRIBE took effect at that read, after both).
        return true;
    }
    if (age > 0) {
        // Newer: the retained copy's own live copy was routed before the subscription existed,
        // and the topic's later copies are newer still.
        sent_retained_.erase(it);
    }
    return false;
}

void retained_echoes::live_sent(const message_ptr& msg, std::int64_t now_ms) {
    if (pending_subscribes_ == 0 || !recent(*msg, now_ms)) {
        return;
    }
    forget_old(sent_live_, now_ms);
    if (sent_live_.size() < limit) {
        sent_live_.push_back(msg);
    }
}

bool retained_echoes::idle(std::int64_t now_ms) {
    forget_old(sent_retained_, now_ms);
    return pending_subscribes_ == 0 && sent_retained_.empty() && sent_live_.empty();
}

}  // namespace starling::broker
