#include "bench/drain.h"

#include <algorithm>

namespace starling::bench {

namespace {

double seconds_since(std::uint64_t start_ns, std::uint64_t at_ns) {
    return at_ns > start_ns ? static_cast<double>(at_ns - start_ns) / 1e9 : 0.0;
}

}  // namespace

bool stall_watch::stalled(std::uint64_t value, std::uint64_t now_ns) noexcept {
    if (!value_ || *value_ != value) {
        value_ = value;
        last_change_ns_ = std::max(last_change_ns_, now_ns);
        return false;
    }
    return now_ns > last_change_ns_ && now_ns - last_change_ns_ > limit_ns_;
}

drain_tally tally_drain(const std::vector<drain_subscriber>& subscribers,
                        std::uint64_t reconnect_ns) {
    drain_tally t;
    t.subscribers = static_cast<std::uint32_t>(subscribers.size());
    std::uint64_t first_ns = 0;
    std::uint64_t last_ns = 0;
    std::uint64_t last_complete_ns = 0;
    std::vector<double> times;
    for (const auto& s : subscribers) {
        t.expected += s.expected;
        t.received += s.received;
        t.delivered += s.unique;
        t.lost += s.lost;
        t.duplicates += s.duplicates;
        t.out_of_order += s.out_of_order;
        t.unexpected += s.unexpected;
        if (s.lost != 0) {
            ++t.subscribers_with_loss;
            if (s.lost > t.worst_subscriber_lost) {
                t.worst_subscriber_lost = s.lost;
                t.worst_subscriber = s.name;
            }
        }
        if (s.first_ns != 0 && (first_ns == 0 || s.first_ns < first_ns)) {
            first_ns = s.first_ns;
        }
        last_ns = std::max(last_ns, s.last_ns);
        if (s.expected == 0) {
            continue;
        }
        ++t.subscribers_expecting;
        if (s.complete_ns != 0 && s.lost == 0) {
            ++t.subscribers_complete;
            last_complete_ns = std::max(last_complete_ns, s.complete_ns);
            times.push_back(seconds_since(reconnect_ns, s.complete_ns));
        }
    }
    t.complete = t.subscribers_expecting != 0 && t.subscribers_complete == t.subscribers_expecting;
    if (first_ns != 0) {
        t.first_message_s = seconds_since(reconnect_ns, first_ns);
    }
    if (last_ns != 0) {
        t.last_message_s = seconds_since(reconnect_ns, last_ns);
    }
    if (!times.empty()) {
        std::sort(times.begin(), times.end());
        t.subscriber_p50_s = times[(times.size() - 1) / 2];  // nearest rank, lower median
        t.subscriber_max_s = times.back();
    }
    if (t.complete) {
        t.drain_s = seconds_since(reconnect_ns, last_complete_ns);
        if (*t.drain_s > 0) {
            t.drain_rate = static_cast<double>(t.delivered) / *t.drain_s;
        }
    }
    return t;
}

}  // namespace starling::bench
