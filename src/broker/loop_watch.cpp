#include "broker/loop_watch.h"

namespace starling::broker {
namespace {

std::int64_t ns_of(clock::steady_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

loop_watch::loop_watch(actor::timer_service& timers, actor::dispatcher& dispatcher,
                       const clock& clk, std::chrono::milliseconds period,
                       std::chrono::milliseconds stall_after)
    : timers_(timers),
      clock_(clk),
      period_(period),
      stall_after_(stall_after),
      timer_beat_ns_(ns_of(clk.steady_now())),
      dispatcher_beat_ns_(ns_of(clk.steady_now())) {
    // The handler captures only the atomic and the clock, both outliving the mailbox (closed in
    // stop() and released with this object). Capacity 1: a beat still queued is enough.
    mailbox_ = actor::mailbox<beat>::create(dispatcher,
                                            [beat_ns = &dispatcher_beat_ns_, &clk](beat&&) {
                                                beat_ns->store(ns_of(clk.steady_now()),
                                                               std::memory_order_relaxed);
                                            },
                                            {.capacity = 1, .throughput = 1});
}

loop_watch::~loop_watch() { stop(); }

void loop_watch::start() {
    std::lock_guard lock(mutex_);
    if (!stopped_ && !next_) {
        schedule_locked();
    }
}

void loop_watch::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopped_) {
            return;  // the destructor's call after stop(): the timer service may be gone by then
        }
        stopped_ = true;
        timers_.cancel(next_);
    }
    mailbox_->close();
}

void loop_watch::schedule_locked() {
    next_ = timers_.schedule_after(period_, [this] { on_timer(); });
}

void loop_watch::on_timer() {
    std::lock_guard lock(mutex_);
    if (stopped_) {
        return;
    }
    timer_beat_ns_.store(ns_of(clock_.steady_now()), std::memory_order_relaxed);
    (void)mailbox_->tell(beat{});  // full: the previous beat is still queued, which says enough
    schedule_locked();
}

std::vector<loop_watch::loop_state> loop_watch::check() const {
    const std::int64_t now = ns_of(clock_.steady_now());
    std::vector<loop_state> out;
    for (auto [name, beat_ns] : {std::pair{"timers", &timer_beat_ns_},
                                 std::pair{"clientDispatcher", &dispatcher_beat_ns_}}) {
        const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::nanoseconds(now - beat_ns->load(std::memory_order_relaxed)));
        out.push_back({.name = name, .since_beat = since, .stalled = since > stall_after_});
    }
    return out;
}

}  // namespace starling::broker
