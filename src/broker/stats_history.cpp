#include "broker/stats_history.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <utility>

namespace starling::broker {

stats_sampler::stats_sampler(std::string node_id) : node_id_(std::move(node_id)) {}

std::vector<stats_point> stats_sampler::sample(std::int64_t ts_ms, const stats_reading& reading) {
    auto change = [](std::uint64_t now, std::uint64_t before) {
        return static_cast<std::int64_t>(now >= before ? now - before : now);
    };
    std::vector<stats_point> points{
        {node_id_, "incomingMsgs", ts_ms, change(reading.incoming_msgs, previous_.incoming_msgs)},
        {node_id_, "outgoingMsgs", ts_ms, change(reading.outgoing_msgs, previous_.outgoing_msgs)},
        {node_id_, "droppedMsgs", ts_ms, change(reading.dropped_msgs, previous_.dropped_msgs)},
        {node_id_, "sessions", ts_ms, reading.sessions},
        {node_id_, "subscriptions", ts_ms, reading.subscriptions},
        {node_id_, "retainedMsgs", ts_ms, reading.retained_msgs},
    };
    previous_ = reading;
    return points;
}

namespace detail {

// Everything a timer callback or a store callback touches, shared with them so that neither
// outlives what it uses. `mutex` orders a tick against stop().
struct stats_recorder_state {
    stats_recorder_state(stats_recorder_options o, metadata_store& s, actor::timer_service& t,
                         const clock& c, stats_recorder::read_fn r)
        : options(std::move(o)),
          store(s),
          timers(t),
          clk(c),
          read(std::move(r)),
          sampler(options.node_id) {}

    const stats_recorder_options options;
    metadata_store& store;
    actor::timer_service& timers;
    const clock& clk;
    const stats_recorder::read_fn read;

    std::mutex mutex;
    bool stopped = false;            // guarded by mutex
    actor::timer_handle timer{};     // guarded by mutex
    stats_sampler sampler;           // guarded by mutex
    std::int64_t last_sweep_ms = 0;  // guarded by mutex; 0 = never
    std::atomic<bool> writing{false};
    std::atomic<std::uint64_t> written{0};
    std::atomic<std::uint64_t> skipped{0};
    std::atomic<std::uint64_t> failed{0};
};

}  // namespace detail

namespace {

using state_ptr = std::shared_ptr<detail::stats_recorder_state>;

void arm_locked(const state_ptr& s);

void tick(const state_ptr& s, std::int64_t boundary_ms) {
    std::lock_guard lock(s->mutex);
    if (s->stopped) {
        return;
    }
    const std::int64_t interval = s->options.interval.count();
    if (s->writing.exchange(true)) {
        // The store has not finished the previous interval: leave the sampler's last reading
        // as it is, so this interval's counts are carried into the next point.
        s->skipped.fetch_add(1, std::memory_order_relaxed);
    } else {
        auto points = s->sampler.sample(boundary_ms - interval, s->read());
        s->store.save_stats(std::move(points), [s](status st) {
            if (st) {
                s->written.fetch_add(1, std::memory_order_relaxed);
            } else {
                s->failed.fetch_add(1, std::memory_order_relaxed);
                spdlog::warn("statistics: writing the interval's points to ts_kv failed: {}",
                             st.error().message());
            }
            s->writing.store(false);
        });
    }
    if (s->last_sweep_ms == 0 || boundary_ms - s->last_sweep_ms >= s->options.sweep_every.count()) {
        s->last_sweep_ms = boundary_ms;
        s->store.delete_stats_before(
            boundary_ms - s->options.retention.count(), [](result<std::size_t> removed) {
                if (!removed) {
                    spdlog::warn("statistics: deleting points past their retention failed: {}",
                                 removed.error().message());
                } else if (*removed > 0) {
                    spdlog::debug("statistics: {} points past their retention deleted", *removed);
                }
            });
    }
    arm_locked(s);
}

// Schedules the next tick at the next multiple of the interval on the wall clock.
void arm_locked(const state_ptr& s) {
    const std::int64_t interval = s->options.interval.count();
    const std::int64_t now = s->clk.epoch_ms();
    const std::int64_t boundary = (now / interval + 1) * interval;
    s->timer = s->timers.schedule_after(std::chrono::milliseconds(boundary - now),
                                        [s, boundary] { tick(s, boundary); });
}

}  // namespace

stats_recorder::stats_recorder(stats_recorder_options options, metadata_store& store,
                               actor::timer_service& timers, const clock& clk, read_fn read)
    : state_(std::make_shared<detail::stats_recorder_state>(std::move(options), store, timers, clk,
                                                            std::move(read))) {}

stats_recorder::~stats_recorder() { stop(); }

void stats_recorder::start() {
    std::lock_guard lock(state_->mutex);
    if (!state_->stopped && !state_->timer) {
        arm_locked(state_);
    }
}

void stats_recorder::stop() {
    std::lock_guard lock(state_->mutex);
    if (state_->stopped) {
        return;  // the destructor's call after stop(): the timer service may be gone by then
    }
    state_->stopped = true;
    state_->timers.cancel(state_->timer);
}

std::uint64_t stats_recorder::written() const { return state_->written.load(); }
std::uint64_t stats_recorder::skipped() const { return state_->skipped.load(); }
std::uint64_t stats_recorder::failed() const { return state_->failed.load(); }

}  // namespace starling::broker
