#pragma once

// sequence_tracker: what one receiver saw of one publisher's numbered stream — how many
// messages arrived, which were duplicates, which arrived out of order, and (given how many the
// publisher sent) how many were lost.
//
// A publisher numbers its messages 0, 1, 2, ... MQTT keeps one publisher's messages in order
// per subscription (same QoS), so a broker that loses nothing and reorders nothing yields
// exactly 0, 1, 2, ... at every subscriber. The tracker classifies each arrival:
//   - in order:     seq == highest + 1 (or the first message, seq == first expected);
//   - gap:          seq > highest + 1; the skipped numbers become *missing*, the message itself
//                   counts as in order (it is the gap that is the anomaly, counted once);
//   - out of order: seq < highest and seq was missing: a late arrival, no longer missing;
//   - duplicate:    seq was already received.
// lost(sent) = sent - unique: everything never received, including a missing tail.
//
// Structure: the fast path (in order) is two compares and an increment. Missing numbers are
// kept as disjoint half-open ranges [begin, end) in an ordered map keyed by begin, so a gap of a
// million messages costs one entry and a late arrival splits at most one range. Memory grows
// with the number of separate gaps, bounded by `max_ranges`: past it the oldest range is
// written off (still counted as lost); an arrival inside a written-off range cannot be told
// from a duplicate and is counted as one (reported as `ambiguous` too).
//
// Lifecycle and concurrency: a plain value type owned by one worker thread.

#include <cstddef>
#include <cstdint>
#include <map>

namespace starling::bench {

enum class arrival : std::uint8_t { in_order, gap, out_of_order, duplicate };

class sequence_tracker {
  public:
    static constexpr std::size_t default_max_ranges = 100'000;

    // first_expected: the number the stream starts at (0 for a publisher started by this run).
    explicit sequence_tracker(std::uint64_t first_expected = 0,
                              std::size_t max_ranges = default_max_ranges) noexcept
        : next_(first_expected), max_ranges_(max_ranges), base_(first_expected) {}

    arrival on_message(std::uint64_t seq);

    std::uint64_t received() const noexcept { return received_; }  // every arrival
    std::uint64_t unique() const noexcept { return unique_; }
    std::uint64_t duplicates() const noexcept { return duplicates_; }
    std::uint64_t out_of_order() const noexcept { return out_of_order_; }
    std::uint64_t gaps() const noexcept { return gaps_; }
    std::uint64_t ambiguous() const noexcept { return ambiguous_; }
    // Numbers below the highest received that have not arrived (yet).
    std::uint64_t missing() const noexcept { return missing_; }
    // The next in-order number (highest received + 1, or first_expected).
    std::uint64_t next_expected() const noexcept { return next_; }
    // Messages the publisher sent that never arrived: sent - unique, never negative.
    std::uint64_t lost(std::uint64_t sent) const noexcept {
        return sent > unique_ ? sent - unique_ : 0;
    }
    std::size_t missing_ranges() const noexcept { return ranges_.size(); }

  private:
    void add_missing(std::uint64_t begin, std::uint64_t end);

    std::uint64_t next_;
    std::size_t max_ranges_;
    std::map<std::uint64_t, std::uint64_t> ranges_;  // begin -> end (exclusive)
    std::uint64_t base_;  // numbers below first_expected were never expected
    std::uint64_t written_off_below_ = 0;
    std::uint64_t received_ = 0;
    std::uint64_t unique_ = 0;
    std::uint64_t duplicates_ = 0;
    std::uint64_t out_of_order_ = 0;
    std::uint64_t gaps_ = 0;
    std::uint64_t ambiguous_ = 0;
    std::uint64_t missing_ = 0;
};

}  // namespace starling::bench
