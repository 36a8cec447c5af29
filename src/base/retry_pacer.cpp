#include "base/retry_pacer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace starling::base {

retry_pacer::retry_pacer(std::string loop, options opts) : loop_(std::move(loop)), opts_(opts) {
    opts_.first_delay = std::max(opts_.first_delay, std::chrono::milliseconds(1));
    opts_.max_delay = std::max(opts_.max_delay, opts_.first_delay);
}

std::chrono::milliseconds retry_pacer::next_delay() const {
    // first·2^failures, capped; the shift stops growing long before it could overflow.
    auto delay = opts_.first_delay;
    for (std::size_t i = 0; i < failures_ && delay < opts_.max_delay; ++i) {
        delay *= 2;
    }
    return std::min(delay, opts_.max_delay);
}

bool retry_pacer::logged(std::size_t nth) { return nth != 0 && (nth & (nth - 1)) == 0; }

std::chrono::milliseconds retry_pacer::record_failure(std::string_view what,
                                                      std::string_view reason) {
    const auto delay = next_delay();
    ++failures_;
    if (logged(failures_)) {
        spdlog::warn("{}: {} failed ({} in a row): {}; retrying in {} ms", loop_, what, failures_,
                     reason, delay.count());
    }
    return delay;
}

bool retry_pacer::failed(std::string_view what, std::string_view reason, std::stop_token stop) {
    const auto delay = record_failure(what, reason);
    std::unique_lock lock(mutex_);
    // Returns early (true) only when a stop was requested; the predicate never holds otherwise.
    wake_.wait_for(lock, stop, delay, [] { return false; });
    return !stop.stop_requested();
}

void retry_pacer::succeeded() {
    if (failures_ >= 2) {
        spdlog::info("{}: recovered after {} failures in a row", loop_, failures_);
    }
    failures_ = 0;
}

}  // namespace starling::base
