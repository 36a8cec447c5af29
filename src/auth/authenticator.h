#pragma once

// authenticator: the chain every CONNECT goes through (issue 6 §2). Providers are asked in the
// configured order (security.mqtt.auth-providers, enabled ones only); the first definitive
// answer (allow or deny) wins. When every provider passes (not_applicable), the client is
// refused unless anonymous access is allowed; when a provider *failed* (store error, timeout)
// and nobody else decided, the client is refused even then — an outage never opens the door.
//
// Around each provider call:
//   - a timeout (`provider_timeout`): a provider that never answers yields "provider timed
//     out" (a failure) and its late answer is ignored — a CONNECT never waits forever;
//   - a circuit breaker: `breaker_threshold` consecutive failures or timeouts open it, and the
//     provider is skipped (counted in authProviderSkipped_total) for `breaker_cooldown`; the
//     first call after the cool-down is a trial that closes it again on success.
// Before the chain: a source address that used up its failed attempts
// (`failed_attempts_per_address`) is refused at once (throttled, v5 0x9F) until its bucket
// refills — only verdicts already cached still apply to it — and one that failed within the
// longest window (60 s when unlimited) is marked `suspect`, which sends its bcrypt work to the
// worker pool's low lane. A provider that
// sheds load (auth_result::shed: its queue was full or too slow) is not failing: the breaker
// ignores it, and when nobody else decides the client is refused with Server busy.
// Definitive results are cached for `cache_ttl`, keyed by everything a provider reads: client
// id, username, a SHA-256 of the password, the certificate fingerprint (SHA-256 of the leaf
// DER). Failures and not_applicable are never cached; a result with `valid_for` (a JWT's exp)
// is cached no longer than that.
//
// Lifecycle: built by the daemon before the listeners open; owns its providers. It must
// outlive the timer service's thread (a pending timeout calls into it) and every connection
// still waiting for a verdict: the daemon stops the listeners and the timers first.
// Concurrency: authenticate() from any thread (I/O threads); `done` runs once, on the thread of
// whoever answered last (a provider's pool, the store, the timer thread, or the caller's own
// thread for cache hits and synchronous providers) and must not block.

#include "actor/timer_service.h"
#include "auth/provider.h"
#include "metrics/auth_probe.h"
#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace starling::auth {

struct authenticator_options {
    bool allow_anonymous = false;
    std::chrono::milliseconds provider_timeout{5000};
    std::chrono::milliseconds cache_ttl{60000};  // 0 disables the cache
    std::size_t cache_max_entries = 100000;
    std::uint32_t breaker_threshold = 5;
    std::chrono::milliseconds breaker_cooldown{30000};
    // Failed authentications allowed per source address (its host; "limit:seconds" windows,
    // TBMQ's rate-limit format); past them the address is refused at once (throttled) until the
    // bucket refills, except for verdicts already in the cache. Empty = unlimited.
    std::vector<bandwidth> failed_attempts_per_address;
    // Addresses whose failures are remembered; the least recently failing one is forgotten
    // beyond this (bounded memory).
    std::size_t max_tracked_addresses = 65536;
};

// The chain's verdict: the provider's result plus who gave it.
struct auth_decision {
    auth_result result;
    std::string provider;  // "" when no provider decided (anonymous or refused)
    bool from_cache = false;
    // Refused without asking any provider: the source address ran out of failed attempts
    // (authenticator_options::failed_attempts_per_address). v5 0x9F, v3 0x03.
    bool throttled = false;
};

class authenticator {
  public:
    authenticator(authenticator_options options,
                  std::vector<std::unique_ptr<auth_provider>> providers,
                  actor::timer_service& timers, metrics::auth_probe& probe,
                  const starling::clock& clock);
    ~authenticator();

    authenticator(const authenticator&) = delete;
    authenticator& operator=(const authenticator&) = delete;

    void authenticate(auth_request request, std::function<void(auth_decision)> done);

    // Shutdown: from now on no verdict is delivered and no timer is scheduled, so nothing calls
    // back into connections, the broker core or the timer service while they are torn down
    // (late provider answers are dropped). Call after the listeners stopped.
    void stop() { stopped_.store(true, std::memory_order_release); }

    // Forgets every cached verdict (credentials were changed or deleted).
    void clear_cache();

    const authenticator_options& options() const { return options_; }
    std::size_t provider_count() const { return providers_.size(); }
    bool breaker_open_for_test(std::string_view provider) const;

  private:
    struct chain;
    struct provider_slot;
    struct failure_table;

    void step(const std::shared_ptr<chain>& c);
    void on_answer(const std::shared_ptr<chain>& c, provider_slot& slot, auth_result r,
                   bool timed_out);
    void finish(const std::shared_ptr<chain>& c, auth_decision d);
    std::string cache_key(const auth_request& request) const;
    bool lookup_cache(const std::string& key, auth_decision& out);
    void store_cache(const std::string& key, const auth_decision& d);
    // Per-address failed attempts: whether `address` may try now (false = throttled), and
    // whether it failed recently (`suspect`); record_failure takes one attempt.
    bool may_try(const std::string& address, bool& suspect);
    void record_failure(const std::string& address);

    const authenticator_options options_;
    std::vector<std::unique_ptr<provider_slot>> providers_;
    actor::timer_service& timers_;
    metrics::auth_probe& probe_;
    const starling::clock& clock_;

    struct cache_entry {
        auth_decision decision;
        starling::clock::steady_point expires;
    };
    std::atomic<bool> stopped_{false};
    std::mutex cache_mutex_;
    std::unordered_map<std::string, cache_entry> cache_;
    std::mutex failures_mutex_;
    std::unique_ptr<failure_table> failures_;  // guarded by failures_mutex_
};

}  // namespace starling::auth
