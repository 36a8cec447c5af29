#pragma once

// quota_lease: this node's share of the cluster-wide throughput quota (mqtt.rate-limits.total,
// docs/backpressure.md "Throughput quota").
//
// The budget is one token bucket of the shared-counters port (`totalMsgsLimit::bucket`: Redis in
// cluster mode, in process when embedded). Asking Redis for every packet would put a round trip
// on the publish path, so the node draws tokens in blocks of `block_size` into a local atomic
// balance and charges packets from it:
//
//   - fast path: the balance covers the cost → one compare-and-swap, admitted. When the
//     balance falls to half a block or less, a refill draw starts in the background, so an
//     evenly loaded node rarely runs dry;
//   - charge(): the balance is short → the charge waits for a draw (asynchronous, never
//     blocking its caller) that asks for the shortfall of every waiting charge plus one block,
//     so a publish whose fan-out exceeds the block still passes when the bucket has the tokens.
//     The verdict comes back through the callback (or at once when the store answers inline,
//     as the embedded one does);
//   - charge_now(): for callers that cannot wait (a delivery being sent, a retained message on
//     SUBSCRIBE): when the balance is short but the bucket was not found empty, it may overdraw
//     up to `overdraft_limit` = max(block_size, sustainedRate / 10), a tenth of a second of
//     budget (a burst of deliveries must not be refused just because a small block's draw is
//     still on its way); the next draw pays the debt first, so the long-run rate stays exact
//     and the overshoot while the bucket is empty is bounded by that limit per node;
//   - a draw that gets fewer tokens than asked means the bucket is empty: charges that the
//     balance cannot cover are refused without asking again for `empty_backoff` (the time the
//     bucket needs to regain one block at the sustained rate, 10 ms .. 1 s);
//   - tick() (every 100 ms on the lease thread) returns the unused balance to the bucket every
//     `lease_return` (0 = never), so an idle node does not sit on budget the others need.
//
// Store unreachable (a draw fails, or gets no answer within `answer_timeout`): for a fixed
// `store_grace` (30 s, deliberately not configurable — a longer grace would suspend the quota
// for as long as one keeps Redis away) charges beyond the local balance are admitted from an
// unknown budget (admitted_in_grace); after it they are refused as `degraded`. One probe draw
// per second finds out when the store is back.
//
// The "throughput quota reached" indicator is raised by a refusal (not a degraded one: the
// budget is unknown, not spent) and cleared by acknowledge() or `indicator_ttl` (5 min) after
// it was first raised.
//
// Lifecycle: create() (shared: the store's callbacks keep the lease alive), start() runs the
// lease thread, stop() joins it; the counters and the clock outlive every callback (the daemon
// stops the counters before it drops the lease). Concurrency: every method is thread-safe.
// The fast path is lock-free; slow-path state (waiting charges, the draw in flight, store
// health, indicator) sits behind one mutex, never held while calling the store or a callback.
// Callbacks run on the store's thread (Redis worker), on the lease thread (watchdog), or on the
// caller's thread (embedded store answering inline) and must not block.

#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace starling::ratelimit {

enum class quota_verdict : std::uint8_t {
    admitted,           // charged against the budget
    admitted_in_grace,  // the store is unreachable, within the grace: admitted uncounted
    refused,            // the budget is spent (raises the indicator)
    degraded,           // the store is unreachable past the grace: refused
};

inline bool is_admitted(quota_verdict v) {
    return v == quota_verdict::admitted || v == quota_verdict::admitted_in_grace;
}

struct quota_options {
    std::string key = "totalMsgsLimit::bucket";
    std::vector<bandwidth> limits;                 // valid (parse_bandwidths), not empty
    std::int64_t block_size = 0;                   // 0 = derived (derive_block_size)
    std::chrono::milliseconds lease_return{1000};  // 0 = never return
};

// What the REST API and the gauges show.
struct quota_state {
    std::int64_t balance = 0;  // tokens held by this node (negative: overdrawn)
    bool reached = false;
    std::int64_t reached_at_ms = 0;  // wall clock, when first raised (0 when not reached)
    bool degraded = false;           // the store is unreachable now
    std::int64_t degraded_since_ms = 0;
};

class quota_lease : public std::enable_shared_from_this<quota_lease> {
  public:
    using verdict_callback = std::function<void(quota_verdict)>;

    static constexpr std::chrono::seconds store_grace{30};
    static constexpr std::chrono::milliseconds answer_timeout{2000};
    static constexpr std::chrono::milliseconds probe_interval{1000};
    static constexpr std::chrono::minutes indicator_ttl{5};
    static constexpr std::chrono::milliseconds tick_interval{100};

    // max(1, sustainedRate / 10) when `configured` is 0, sustainedRate being the lowest
    // capacity/period of the windows; `configured` otherwise.
    static std::int64_t derive_block_size(const std::vector<bandwidth>& limits,
                                          std::int64_t configured);

    static std::shared_ptr<quota_lease> create(shared_counters& counters, const clock& clk,
                                               quota_options options);
    ~quota_lease();
    quota_lease(const quota_lease&) = delete;
    quota_lease& operator=(const quota_lease&) = delete;

    // Starts the lease thread (tick() every tick_interval) and draws a first block.
    void start();
    // Joins the lease thread. Charges keep working (without lease return or watchdog).
    void stop();

    // Charges `cost` tokens. Returns the verdict when it is decided now (then `later` is never
    // called); nullopt when the charge waits for the store, and then `later` runs exactly once.
    std::optional<quota_verdict> charge(std::int64_t cost, verdict_callback later);
    // Charges `cost` tokens without waiting (may overdraw up to overdraft_limit, see above).
    quota_verdict charge_now(std::int64_t cost);

    // Lease return, the draw watchdog and the recovery probe. Called by the lease thread; tests
    // call it with a manual clock instead of start().
    void tick();

    quota_state state();
    // Clears the indicator; false when it was not raised.
    bool acknowledge();

    std::int64_t balance() const { return balance_.load(std::memory_order_relaxed); }
    std::int64_t block_size() const { return block_size_; }
    std::int64_t overdraft_limit() const { return overdraft_limit_; }
    const quota_options& options() const { return options_; }
    std::chrono::milliseconds empty_backoff() const { return empty_backoff_; }

  private:
    struct waiter;
    struct draw_request {
        std::uint64_t id = 0;
        std::int64_t tokens = 0;
    };
    using decided = std::vector<std::pair<std::shared_ptr<waiter>, quota_verdict>>;

    quota_lease(shared_counters& counters, const clock& clk, quota_options options);

    bool take(std::int64_t cost);  // lock-free: balance -= cost when it covers it
    void maybe_refill();
    std::optional<draw_request> begin_draw_locked(clock::steady_point now);
    void issue(draw_request d);
    void on_draw(std::uint64_t id, std::int64_t requested, result<std::int64_t> r);
    void serve_locked(clock::steady_point now, bool bucket_short, decided& out,
                      std::optional<draw_request>& next);
    void store_lost_locked(clock::steady_point since, clock::steady_point now, decided& out);
    quota_verdict grace_verdict_locked(clock::steady_point now) const;
    void raise_locked(clock::steady_point now);
    static void settle(const std::shared_ptr<waiter>& w, quota_verdict v);
    void run();

    shared_counters& counters_;
    const clock& clock_;
    const quota_options options_;
    const std::int64_t block_size_;
    const std::int64_t overdraft_limit_;
    const std::chrono::milliseconds empty_backoff_;

    std::atomic<std::int64_t> balance_{0};
    // Lock-free hints for the fast path (authoritative copies live under mutex_).
    std::atomic<bool> drawing_{false};
    std::atomic<bool> store_down_{false};
    std::atomic<std::int64_t> empty_until_ns_{0};

    std::mutex mutex_;
    std::deque<std::shared_ptr<waiter>> waiters_;
    bool draw_in_flight_ = false;
    std::uint64_t draw_id_ = 0;
    clock::steady_point draw_started_{};
    clock::steady_point empty_until_{};
    std::optional<clock::steady_point> down_since_;
    std::int64_t down_since_ms_ = 0;
    clock::steady_point last_probe_{};
    clock::steady_point next_return_{};
    bool reached_ = false;
    clock::steady_point reached_at_{};
    std::int64_t reached_at_ms_ = 0;

    // The lease thread.
    std::mutex run_mutex_;
    std::condition_variable run_cv_;
    bool running_ = false;
    std::thread thread_;
};

}  // namespace starling::ratelimit
