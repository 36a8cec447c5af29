#include "bench/sequence_tracker.h"

#include <iterator>

namespace starling::bench {

arrival sequence_tracker::on_message(std::uint64_t seq) {
    ++received_;
    if (seq == next_) {
        ++next_;
        ++unique_;
        return arrival::in_order;
    }
    if (seq > next_) {
        add_missing(next_, seq);
        ++gaps_;
        next_ = seq + 1;
        ++unique_;
        return arrival::gap;
    }
    // seq < next_: either it fills a gap (late) or it was seen already.
    if (seq < base_) {
        // Before the stream's declared start: never expected, so it cannot be "late".
        ++duplicates_;
        ++ambiguous_;
        return arrival::duplicate;
    }
    auto it = ranges_.upper_bound(seq);
    if (it != ranges_.begin()) {
        auto range = std::prev(it);
        const std::uint64_t begin = range->first;
        const std::uint64_t end = range->second;
        if (seq < end) {
            ranges_.erase(range);
            if (begin < seq) {
                ranges_.emplace(begin, seq);
            }
            if (seq + 1 < end) {
                ranges_.emplace(seq + 1, end);
            }
            --missing_;
            ++unique_;
            ++out_of_order_;
            return arrival::out_of_order;
        }
    }
    ++duplicates_;
    if (seq < written_off_below_) {
        ++ambiguous_;
    }
    return arrival::duplicate;
}

void sequence_tracker::add_missing(std::uint64_t begin, std::uint64_t end) {
    ranges_.emplace(begin, end);
    missing_ += end - begin;
    while (ranges_.size() > max_ranges_) {
        // Forget the oldest gap: its numbers stay counted as missing (and so as lost).
        auto oldest = ranges_.begin();
        written_off_below_ = oldest->second;
        ranges_.erase(oldest);
    }
}

}  // namespace starling::bench
