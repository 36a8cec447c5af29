#pragma once

// The bookkeeping of the drain scenario, kept apart from sockets and threads so that it is
// unit-tested: when progress has stalled (stall_watch), and what the subscribers' counts add up
// to once the drain ended (tally_drain).
//
// The scenario (runner::run_drain): M persistent subscribers subscribe and go offline,
// publishers queue N messages for each and wait for every PUBACK, then all subscribers
// reconnect at once. The drain is timed from the first reconnect to the last message that
// completed a subscriber's backlog; a drain whose delivered count does not move for --drain
// seconds is a stall, and what never arrived is reported as lost (missing) per subscriber.
//
// Concurrency: plain values and free functions, used on the runner's thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace starling::bench {

// Watches a count that should keep growing (messages delivered, acknowledgements) and says when
// it has not moved for longer than a limit. Times are CLOCK_MONOTONIC nanoseconds.
class stall_watch {
  public:
    stall_watch(std::uint64_t limit_ns, std::uint64_t now_ns) noexcept
        : limit_ns_(limit_ns), last_change_ns_(now_ns) {}

    // Records the count seen at now_ns; true once it has not changed for more than the limit.
    bool stalled(std::uint64_t value, std::uint64_t now_ns) noexcept;

    // When the count last changed (or the watch started).
    std::uint64_t last_change_ns() const noexcept { return last_change_ns_; }

  private:
    std::uint64_t limit_ns_;
    std::uint64_t last_change_ns_;
    std::optional<std::uint64_t> value_;
};

// What one subscriber (tracking domain) received during the drain.
struct drain_subscriber {
    std::string name;
    std::uint64_t expected = 0;  // messages queued for it (sent by the publishers it matches)
    std::uint64_t received = 0;  // every arrival, duplicates included
    std::uint64_t unique = 0;
    std::uint64_t lost = 0;  // expected - unique: missing, a stalled tail included
    std::uint64_t duplicates = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t unexpected = 0;   // from publishers it should not hear from
    std::uint64_t first_ns = 0;     // first arrival (0 = none)
    std::uint64_t last_ns = 0;      // last new (non-duplicate) arrival (0 = none)
    std::uint64_t complete_ns = 0;  // when unique reached expected (0 = never)
};

// The sums over every subscriber; times in seconds from the first reconnect.
struct drain_tally {
    std::uint32_t subscribers = 0;
    std::uint32_t subscribers_expecting = 0;  // with at least one message queued
    std::uint32_t subscribers_complete = 0;   // of those, how many got all of it
    std::uint32_t subscribers_with_loss = 0;
    std::string worst_subscriber;  // the one missing most (empty when none misses any)
    std::uint64_t worst_subscriber_lost = 0;
    std::uint64_t expected = 0;
    std::uint64_t received = 0;
    std::uint64_t delivered = 0;  // unique
    std::uint64_t lost = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t unexpected = 0;
    bool complete = false;  // every subscriber expecting messages got all of them
    // Reconnect to the last message of the slowest subscriber; set only when complete.
    std::optional<double> drain_s;
    std::optional<double> drain_rate;  // delivered / drain_s, msg/s
    std::optional<double> first_message_s;
    std::optional<double> last_message_s;  // the last new arrival, complete or not
    // Per subscriber, reconnect to its last message, over the complete ones.
    std::optional<double> subscriber_p50_s;
    std::optional<double> subscriber_max_s;
};

// Sums the subscribers' counts; reconnect_ns is when the first subscriber started to reconnect.
drain_tally tally_drain(const std::vector<drain_subscriber>& subscribers,
                        std::uint64_t reconnect_ns);

}  // namespace starling::bench
