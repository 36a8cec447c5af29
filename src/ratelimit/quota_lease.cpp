#include "ratelimit/quota_lease.h"

#include "ratelimit/bandwidth_spec.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

namespace starling::ratelimit {

namespace {

// Phases of a waiting charge: charge() has not returned yet / has returned (the verdict goes to
// the callback) / was decided before charge() returned (charge() returns it itself).
constexpr int phase_pending = 0;
constexpr int phase_returned = 1;
constexpr int phase_settled_inline = 2;

std::int64_t to_ns(clock::steady_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::chrono::milliseconds derive_empty_backoff(const std::vector<bandwidth>& limits,
                                               std::int64_t block) {
    // The time the slowest window needs to regain one block: asking sooner only finds the
    // bucket empty again.
    std::int64_t ms = 0;
    for (const auto& b : limits) {
        __extension__ using wide = __int128;
        const wide w = static_cast<wide>(block) * b.period_seconds * 1000 / b.capacity;
        ms = std::max<std::int64_t>(ms, static_cast<std::int64_t>(std::min<wide>(w, 1000)));
    }
    return std::chrono::milliseconds(std::clamp<std::int64_t>(ms, 10, 1000));
}

}  // namespace

struct quota_lease::waiter {
    std::int64_t cost = 0;
    verdict_callback later;
    std::atomic<int> phase{phase_pending};
    quota_verdict verdict = quota_verdict::refused;
};

std::int64_t quota_lease::derive_block_size(const std::vector<bandwidth>& limits,
                                            std::int64_t configured) {
    if (configured > 0) {
        return configured;
    }
    std::int64_t rate = std::numeric_limits<std::int64_t>::max();
    for (const auto& b : limits) {
        rate = std::min(rate, b.capacity / b.period_seconds);
    }
    if (limits.empty()) {
        rate = 0;
    }
    return std::max<std::int64_t>(1, rate / 10);
}

std::shared_ptr<quota_lease> quota_lease::create(shared_counters& counters, const clock& clk,
                                                 quota_options options) {
    return std::shared_ptr<quota_lease>(new quota_lease(counters, clk, std::move(options)));
}

quota_lease::quota_lease(shared_counters& counters, const clock& clk, quota_options options)
    : counters_(counters),
      clock_(clk),
      options_(std::move(options)),
      block_size_(derive_block_size(options_.limits, options_.block_size)),
      overdraft_limit_(std::max(block_size_, derive_block_size(options_.limits, 0))),
      empty_backoff_(derive_empty_backoff(options_.limits, block_size_)) {
    next_return_ = clock_.steady_now() + options_.lease_return;
}

quota_lease::~quota_lease() { stop(); }

void quota_lease::start() {
    {
        std::lock_guard lock(run_mutex_);
        if (running_) {
            return;
        }
        running_ = true;
    }
    spdlog::info(
        "throughput quota: {} cluster-wide, drawing blocks of {} tokens from '{}', lease return "
        "every {} ms",
        to_string(options_.limits), block_size_, options_.key, options_.lease_return.count());
    maybe_refill();  // a first block, so the first packets do not wait
    thread_ = std::thread([this] {
        pthread_setname_np(pthread_self(), "quota-lease");
        run();
    });
}

void quota_lease::stop() {
    {
        std::lock_guard lock(run_mutex_);
        if (!running_) {
            return;
        }
        running_ = false;
    }
    run_cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

void quota_lease::run() {
    std::unique_lock lock(run_mutex_);
    while (running_) {
        run_cv_.wait_for(lock, tick_interval, [this] { return !running_; });
        if (!running_) {
            break;
        }
        lock.unlock();
        tick();
        lock.lock();
    }
}

bool quota_lease::take(std::int64_t cost) {
    std::int64_t b = balance_.load(std::memory_order_relaxed);
    while (b >= cost) {
        if (balance_.compare_exchange_weak(b, b - cost, std::memory_order_acq_rel)) {
            return true;
        }
    }
    return false;
}

void quota_lease::maybe_refill() {
    // Lock-free pre-checks keep the mutex off the per-packet path while a draw is in flight,
    // the store is down or the bucket was just found empty.
    if (balance_.load(std::memory_order_relaxed) > block_size_ / 2 ||
        drawing_.load(std::memory_order_relaxed) || store_down_.load(std::memory_order_relaxed)) {
        return;
    }
    const auto now = clock_.steady_now();
    if (to_ns(now) < empty_until_ns_.load(std::memory_order_relaxed)) {
        return;
    }
    std::optional<draw_request> d;
    {
        std::lock_guard lock(mutex_);
        if (!down_since_ && now >= empty_until_) {
            d = begin_draw_locked(now);
        }
    }
    if (d) {
        issue(*d);
    }
}

std::optional<quota_verdict> quota_lease::charge(std::int64_t cost, verdict_callback later) {
    if (cost <= 0) {
        return quota_verdict::admitted;
    }
    if (take(cost)) {
        maybe_refill();
        return quota_verdict::admitted;
    }
    auto w = std::make_shared<waiter>();
    std::optional<draw_request> d;
    {
        std::lock_guard lock(mutex_);
        const auto now = clock_.steady_now();
        if (down_since_) {
            return grace_verdict_locked(now);
        }
        if (take(cost)) {  // a draw may have landed meanwhile
            return quota_verdict::admitted;
        }
        if (now < empty_until_) {
            raise_locked(now);
            return quota_verdict::refused;
        }
        w->cost = cost;
        w->later = std::move(later);
        waiters_.push_back(w);
        d = begin_draw_locked(now);  // none when one is in flight: it serves us when it lands
    }
    if (d) {
        issue(*d);
    }
    int expected = phase_pending;
    if (!w->phase.compare_exchange_strong(expected, phase_returned, std::memory_order_acq_rel)) {
        return w->verdict;  // the store answered inline
    }
    return std::nullopt;
}

quota_verdict quota_lease::charge_now(std::int64_t cost) {
    if (cost <= 0) {
        return quota_verdict::admitted;
    }
    if (take(cost)) {
        maybe_refill();
        return quota_verdict::admitted;
    }
    std::optional<draw_request> d;
    quota_verdict v = quota_verdict::refused;
    {
        std::lock_guard lock(mutex_);
        const auto now = clock_.steady_now();
        if (down_since_) {
            return grace_verdict_locked(now);
        }
        if (take(cost)) {
            return quota_verdict::admitted;
        }
        if (now < empty_until_) {
            raise_locked(now);
            return quota_verdict::refused;
        }
        // The bucket was not found empty: overdraw (bounded) rather than refuse a packet that
        // cannot wait; the next draw asks for the debt too.
        std::int64_t b = balance_.load(std::memory_order_relaxed);
        while (b - cost >= -overdraft_limit_) {
            if (balance_.compare_exchange_weak(b, b - cost, std::memory_order_acq_rel)) {
                v = quota_verdict::admitted;
                break;
            }
        }
        if (v == quota_verdict::refused) {
            raise_locked(now);
        }
        d = begin_draw_locked(now);
    }
    if (d) {
        issue(*d);
    }
    return v;
}

std::optional<quota_lease::draw_request> quota_lease::begin_draw_locked(clock::steady_point now) {
    if (draw_in_flight_) {
        return std::nullopt;
    }
    std::int64_t tokens = block_size_ + std::max<std::int64_t>(0, -balance_.load());
    for (const auto& w : waiters_) {
        tokens += w->cost;
    }
    draw_in_flight_ = true;
    drawing_.store(true, std::memory_order_relaxed);
    draw_started_ = now;
    return draw_request{.id = ++draw_id_, .tokens = tokens};
}

void quota_lease::issue(draw_request d) {
    counters_.try_consume(options_.key, options_.limits, d.tokens,
                          [self = shared_from_this(), d](result<std::int64_t> r) {
                              self->on_draw(d.id, d.tokens, std::move(r));
                          });
}

void quota_lease::on_draw(std::uint64_t id, std::int64_t requested, result<std::int64_t> r) {
    decided out;
    std::optional<draw_request> next;
    {
        std::lock_guard lock(mutex_);
        const auto now = clock_.steady_now();
        const bool current = draw_in_flight_ && id == draw_id_;
        if (current) {
            draw_in_flight_ = false;
            drawing_.store(false, std::memory_order_relaxed);
        }
        if (!r) {
            if (current) {
                if (!down_since_) {
                    spdlog::warn(
                        "throughput quota: the shared bucket '{}' is unreachable ({}); admitting "
                        "beyond the local balance for a {} s grace, then refusing",
                        options_.key, r.error().message(), store_grace.count());
                }
                last_probe_ = now;
                store_lost_locked(draw_started_, now, out);
            }
        } else {
            const std::int64_t granted = r.value();
            balance_.fetch_add(granted, std::memory_order_acq_rel);
            if (down_since_) {
                spdlog::info("throughput quota: the shared bucket '{}' answers again",
                             options_.key);
                down_since_.reset();
                store_down_.store(false, std::memory_order_relaxed);
            }
            const bool bucket_short = granted < requested;
            if (bucket_short) {
                empty_until_ = now + empty_backoff_;
                empty_until_ns_.store(to_ns(empty_until_), std::memory_order_relaxed);
            }
            serve_locked(now, bucket_short, out, next);
        }
    }
    for (auto& [w, v] : out) {
        settle(w, v);
    }
    if (next) {
        issue(*next);
    }
}

void quota_lease::serve_locked(clock::steady_point now, bool bucket_short, decided& out,
                               std::optional<draw_request>& next) {
    while (!waiters_.empty() && take(waiters_.front()->cost)) {
        out.emplace_back(std::move(waiters_.front()), quota_verdict::admitted);
        waiters_.pop_front();
    }
    if (waiters_.empty() || draw_in_flight_) {
        return;  // an abandoned draw landed late: the one in flight serves the rest
    }
    if (bucket_short || now < empty_until_) {
        raise_locked(now);
        for (auto& w : waiters_) {
            out.emplace_back(std::move(w), quota_verdict::refused);
        }
        waiters_.clear();
        return;
    }
    next = begin_draw_locked(now);  // the fast path took what the waiters needed: ask again
}

void quota_lease::store_lost_locked(clock::steady_point since, clock::steady_point now,
                                    decided& out) {
    if (!down_since_) {
        down_since_ = since;
        down_since_ms_ = clock_.epoch_ms() -
                         std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count();
        store_down_.store(true, std::memory_order_relaxed);
    }
    const quota_verdict v = grace_verdict_locked(now);
    for (auto& w : waiters_) {
        out.emplace_back(std::move(w), v);
    }
    waiters_.clear();
}

quota_verdict quota_lease::grace_verdict_locked(clock::steady_point now) const {
    return now - *down_since_ < store_grace ? quota_verdict::admitted_in_grace
                                            : quota_verdict::degraded;
}

void quota_lease::raise_locked(clock::steady_point now) {
    if (reached_ && now - reached_at_ >= indicator_ttl) {
        reached_ = false;  // expired: this refusal raises it afresh
    }
    if (!reached_) {
        reached_ = true;
        reached_at_ = now;
        reached_at_ms_ = clock_.epoch_ms();
        spdlog::warn("throughput quota reached: {} cluster-wide; packets are being refused",
                     to_string(options_.limits));
    }
}

void quota_lease::settle(const std::shared_ptr<waiter>& w, quota_verdict v) {
    w->verdict = v;
    int expected = phase_pending;
    if (w->phase.compare_exchange_strong(expected, phase_settled_inline,
                                         std::memory_order_acq_rel)) {
        return;  // charge() has not returned yet and returns the verdict itself
    }
    w->later(v);
}

void quota_lease::tick() {
    decided out;
    std::optional<draw_request> d;
    std::int64_t give_back = 0;
    {
        std::lock_guard lock(mutex_);
        const auto now = clock_.steady_now();
        // Watchdog: a store that does not answer is as good as down (Redis paused, network
        // partition); its late answer is still accounted when it comes.
        if (draw_in_flight_ && now - draw_started_ >= answer_timeout) {
            if (!down_since_) {
                spdlog::warn(
                    "throughput quota: the shared bucket '{}' did not answer within {} ms; "
                    "admitting beyond the local balance for a {} s grace, then refusing",
                    options_.key, answer_timeout.count(), store_grace.count());
            }
            draw_in_flight_ = false;
            drawing_.store(false, std::memory_order_relaxed);
            last_probe_ = now;
            store_lost_locked(draw_started_, now, out);
        }
        if (down_since_ && !draw_in_flight_ && now - last_probe_ >= probe_interval) {
            last_probe_ = now;
            d = begin_draw_locked(now);
        }
        if (options_.lease_return.count() > 0 && now >= next_return_) {
            next_return_ = now + options_.lease_return;
            // Not while a draw or a charge is pending: they are about to use the balance.
            if (!draw_in_flight_ && waiters_.empty() && !down_since_) {
                std::int64_t b = balance_.load(std::memory_order_relaxed);
                while (b > 0 && !balance_.compare_exchange_weak(b, 0, std::memory_order_acq_rel)) {
                }
                give_back = std::max<std::int64_t>(b, 0);
                if (give_back > 0) {
                    // The bucket holds at least these again: it is no longer known empty.
                    empty_until_ = {};
                    empty_until_ns_.store(0, std::memory_order_relaxed);
                }
            }
        }
    }
    for (auto& [w, v] : out) {
        settle(w, v);
    }
    if (d) {
        issue(*d);
    }
    if (give_back > 0) {
        counters_.refund(options_.key, options_.limits, give_back,
                         [key = options_.key, give_back](result<std::int64_t> r) {
                             if (!r) {
                                 // The tokens are lost to the cluster until the bucket refills.
                                 spdlog::debug(
                                     "throughput quota: returning {} tokens to '{}' "
                                     "failed: {}",
                                     give_back, key, r.error().message());
                             }
                         });
    }
}

quota_state quota_lease::state() {
    std::lock_guard lock(mutex_);
    const auto now = clock_.steady_now();
    if (reached_ && now - reached_at_ >= indicator_ttl) {
        reached_ = false;
        spdlog::info("throughput quota reached indicator expired ({} min after it was raised)",
                     indicator_ttl.count());
    }
    return quota_state{.balance = balance_.load(),
                       .reached = reached_,
                       .reached_at_ms = reached_ ? reached_at_ms_ : 0,
                       .degraded = down_since_.has_value(),
                       .degraded_since_ms = down_since_ ? down_since_ms_ : 0};
}

bool quota_lease::acknowledge() {
    std::lock_guard lock(mutex_);
    const bool was = reached_ && clock_.steady_now() - reached_at_ < indicator_ttl;
    reached_ = false;
    if (was) {
        spdlog::info("throughput quota reached indicator acknowledged");
    }
    return was;
}

}  // namespace starling::ratelimit
