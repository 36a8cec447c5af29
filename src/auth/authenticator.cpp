#include "auth/authenticator.h"

#include "auth/password.h"
#include "ratelimit/token_bucket.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <list>

namespace starling::auth {

namespace {

// "ip:port" or "[v6]:port" → the host (failed attempts are counted per host).
std::string host_of(std::string_view address) {
    if (address.starts_with('[')) {
        const auto close = address.find(']');
        return std::string(
            address.substr(1, close == std::string_view::npos ? address.npos : close - 1));
    }
    const auto colon = address.rfind(':');
    if (colon != std::string_view::npos && address.find(':') == colon) {
        return std::string(address.substr(0, colon));
    }
    return std::string(address);
}

}  // namespace

// Failed attempts per source host: a token bucket each (one token per failure), in a list by
// last failure so the table stays bounded (the least recently failing host is forgotten). A
// bucket that refilled completely is dropped: it is the same as no entry.
struct authenticator::failure_table {
    struct entry {
        ratelimit::token_bucket bucket;
        std::list<std::string>::iterator position;
        starling::clock::steady_point last_failure;
    };
    std::unordered_map<std::string, entry> entries;
    std::list<std::string> order;  // least recently failing first
    std::int64_t full = 0;         // tokens of a full bucket (the smallest window's capacity)
    // How long an address stays suspect after its last failure: the longest window. Not "until
    // the bucket refills": with 60 attempts a minute that is one second after a single failure,
    // and a flood whose attempts are mostly shed (which spends no token) would then be back in
    // the normal lane, level with everyone else, within a second.
    std::chrono::seconds suspect_for{60};
};

// One provider and its circuit breaker.
struct authenticator::provider_slot {
    std::unique_ptr<auth_provider> provider;
    mutable std::mutex mutex;
    std::uint32_t consecutive_failures = 0;
    starling::clock::steady_point open_until{};  // breaker open while now < open_until
    bool trial_in_flight = false;
};

// One CONNECT's walk down the chain. Shared by the provider callback and its timeout timer;
// whichever comes first (answered flag) moves the chain on.
struct authenticator::chain {
    auth_request request;
    std::function<void(auth_decision)> done;
    std::string cache_key;
    starling::clock::steady_point started;
    std::size_t next = 0;
    std::optional<std::string> failure;  // the first provider failure, for the final refusal
    std::string failed_provider;
    bool shed = false;    // a provider shed the request (its queue was full or too slow)
    std::string address;  // the source host, for the failed-attempts limit
};

authenticator::authenticator(authenticator_options options,
                             std::vector<std::unique_ptr<auth_provider>> providers,
                             actor::timer_service& timers, metrics::auth_probe& probe,
                             const starling::clock& clock)
    : options_(options),
      timers_(timers),
      probe_(probe),
      clock_(clock),
      failures_(std::make_unique<failure_table>()) {
    failures_->full = std::numeric_limits<std::int64_t>::max();
    for (const auto& window : options_.failed_attempts_per_address) {
        failures_->full = std::min(failures_->full, window.capacity);
    }
    if (!options_.failed_attempts_per_address.empty()) {
        std::int64_t longest = 0;
        for (const auto& window : options_.failed_attempts_per_address) {
            longest = std::max(longest, window.period_seconds);
        }
        failures_->suspect_for = std::chrono::seconds(longest);
    }
    for (auto& p : providers) {
        auto slot = std::make_unique<provider_slot>();
        slot->provider = std::move(p);
        providers_.push_back(std::move(slot));
    }
}

authenticator::~authenticator() = default;

void authenticator::authenticate(auth_request request, std::function<void(auth_decision)> done) {
    auto c = std::make_shared<chain>();
    c->started = clock_.steady_now();
    c->cache_key = cache_key(request);
    c->request = std::move(request);
    c->done = std::move(done);
    auth_decision cached;
    if (lookup_cache(c->cache_key, cached)) {
        probe_.cache_hit();
        finish(c, std::move(cached));
        return;
    }
    if (!options_.failed_attempts_per_address.empty()) {
        c->address = host_of(c->request.remote_address);
        bool suspect = false;
        if (!may_try(c->address, suspect)) {
            finish(c, auth_decision{.result = auth_result{.outcome = verdict::deny,
                                                          .reason = "too many failed "
                                                                    "authentications from " +
                                                                    c->address + ", retry later",
                                                          .bad_credentials = false},
                                    .throttled = true});
            return;
        }
        c->request.suspect = suspect;
    }
    step(c);
}

void authenticator::step(const std::shared_ptr<chain>& c) {
    if (stopped_.load(std::memory_order_acquire)) {
        return;  // shutting down: the connection waiting for this verdict is going away
    }
    while (c->next < providers_.size()) {
        auto& slot = *providers_[c->next++];
        const auto name = slot.provider->name();
        {
            std::lock_guard lock(slot.mutex);
            const auto now = clock_.steady_now();
            if (slot.consecutive_failures >= options_.breaker_threshold) {
                // Open: skip until the cool-down ends, then let one trial call through.
                if (now < slot.open_until || slot.trial_in_flight) {
                    probe_.provider_skipped(name);
                    continue;
                }
                slot.trial_in_flight = true;
            }
        }
        // answered: set once by whichever of the callback and the timer runs first.
        auto answered = std::make_shared<std::atomic<bool>>(false);
        auto timer = std::make_shared<actor::timer_handle>();
        auto* slot_ptr = &slot;
        *timer = timers_.schedule_after(options_.provider_timeout, [this, c, slot_ptr, answered] {
            if (!answered->exchange(true)) {
                probe_.provider_timed_out(slot_ptr->provider->name());
                on_answer(c, *slot_ptr,
                          auth_result{.outcome = verdict::deny,
                                      .reason = "provider timed out",
                                      .bad_credentials = false,
                                      .failed = true},
                          true);
            }
        });
        slot.provider->authenticate(
            c->request, [this, c, slot_ptr, answered, timer](auth_result r) {
                if (answered->exchange(true)) {
                    return;  // the timeout already answered for this provider
                }
                // The timer may not have its handle stored yet when the provider answers inside
                // authenticate(); a missed cancel only leaves a no-op timer behind.
                timers_.cancel(*timer);
                on_answer(c, *slot_ptr, std::move(r), false);
            });
        return;
    }
    // Nobody decided.
    if (c->failure) {
        finish(c, auth_decision{.result = auth_result{.outcome = verdict::deny,
                                                      .reason = *c->failure,
                                                      .bad_credentials = false,
                                                      .failed = true},
                                .provider = c->failed_provider});
        return;
    }
    if (c->shed) {
        // Overloaded, not broken: fail closed (no anonymous fallback), but as Server busy.
        finish(c, auth_decision{.result = auth_result{.outcome = verdict::deny,
                                                      .reason = "authentication overloaded, "
                                                                "retry later",
                                                      .bad_credentials = false,
                                                      .shed = true}});
        return;
    }
    if (options_.allow_anonymous) {
        finish(c, auth_decision{.result = auth_result{.outcome = verdict::allow,
                                                      .rules = topic_rules::everything(),
                                                      .reason = "anonymous"}});
        return;
    }
    const bool offered = c->request.username.has_value() || c->request.password.has_value() ||
                         c->request.certificate.has_value();
    finish(c, auth_decision{
                  .result = auth_result{.outcome = verdict::deny,
                                        .reason = offered ? "no provider accepted the credentials"
                                                          : "anonymous access is disabled",
                                        .bad_credentials = offered}});
}

void authenticator::on_answer(const std::shared_ptr<chain>& c, provider_slot& slot, auth_result r,
                              bool timed_out) {
    const std::string name(slot.provider->name());
    if (r.shed && !timed_out) {
        // Load shedding says nothing about the provider's health: the breaker neither counts
        // it nor resets (a trial that was shed settles nothing; the next call tries again).
        {
            std::lock_guard lock(slot.mutex);
            slot.trial_in_flight = false;
        }
        probe_.provider_shed(name);
        c->shed = true;
        step(c);
        return;
    }
    {
        std::lock_guard lock(slot.mutex);
        slot.trial_in_flight = false;
        if (r.failed || timed_out) {
            ++slot.consecutive_failures;
            if (slot.consecutive_failures >= options_.breaker_threshold) {
                slot.open_until = clock_.steady_now() + options_.breaker_cooldown;
                if (slot.consecutive_failures == options_.breaker_threshold) {
                    spdlog::warn(
                        "auth provider {} failed {} times in a row ({}): skipped for {} ms", name,
                        slot.consecutive_failures, r.reason, options_.breaker_cooldown.count());
                }
            }
        } else {
            slot.consecutive_failures = 0;
        }
    }
    if (r.failed || timed_out) {
        if (!c->failure) {
            c->failure = name + ": " + r.reason;
            c->failed_provider = name;
        }
        step(c);
        return;
    }
    if (r.outcome == verdict::not_applicable) {
        step(c);
        return;
    }
    if (r.outcome == verdict::allow && !r.rules) {
        r.rules = topic_rules::everything();  // a provider without rules allows every topic
    }
    auth_decision d{.result = std::move(r), .provider = name};
    store_cache(c->cache_key, d);
    finish(c, std::move(d));
}

void authenticator::finish(const std::shared_ptr<chain>& c, auth_decision d) {
    if (stopped_.load(std::memory_order_acquire)) {
        return;
    }
    probe_.auth_latency(clock_.steady_now() - c->started);
    if (d.result.outcome == verdict::allow) {
        probe_.auth_succeeded(d.provider.empty() ? "anonymous" : d.provider);
    } else {
        const auto* reason = d.throttled                ? "throttled"
                             : d.result.shed            ? "shed"
                             : d.result.failed          ? "provider_failure"
                             : d.result.bad_credentials ? "bad_credentials"
                                                        : "not_authorized";
        probe_.auth_failed(d.provider.empty() ? "none" : d.provider, reason);
        if (!d.throttled && !d.result.shed && !d.result.failed && !c->address.empty()) {
            record_failure(c->address);  // a real refusal: one failed attempt for the address
        }
    }
    auto done = std::move(c->done);
    done(std::move(d));
}

std::string authenticator::cache_key(const auth_request& request) const {
    // Every field a provider may read; '\n' cannot occur in a client id's hash or fingerprint
    // and separates the free-form fields unambiguously together with the length prefixes.
    std::string key;
    key += std::to_string(request.client_id.size()) + ':' + request.client_id + '\n';
    key += request.username ? std::to_string(request.username->size()) + ':' + *request.username
                            : std::string("-");
    key += '\n';
    key += request.password ? sha256_hex(*request.password) : std::string("-");
    key += '\n';
    key += request.certificate && !request.certificate->der_chain.empty()
               ? sha256_hex(request.certificate->der_chain.front())
               : std::string("-");
    return key;
}

bool authenticator::lookup_cache(const std::string& key, auth_decision& out) {
    if (options_.cache_ttl.count() <= 0) {
        return false;
    }
    std::lock_guard lock(cache_mutex_);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
        return false;
    }
    if (clock_.steady_now() >= it->second.expires) {
        cache_.erase(it);
        return false;
    }
    out = it->second.decision;
    out.from_cache = true;
    return true;
}

void authenticator::store_cache(const std::string& key, const auth_decision& d) {
    auto ttl = options_.cache_ttl;
    if (d.result.valid_for) {
        // The provider bounds its verdict (a JWT's exp): a cached allow never outlives it.
        ttl = std::min(ttl, *d.result.valid_for);
    }
    if (ttl.count() <= 0) {
        return;
    }
    const auto now = clock_.steady_now();
    std::lock_guard lock(cache_mutex_);
    if (cache_.size() >= options_.cache_max_entries) {
        std::erase_if(cache_, [now](const auto& e) { return now >= e.second.expires; });
        if (cache_.size() >= options_.cache_max_entries) {
            cache_.clear();  // bounded: a flood of distinct credentials must not grow memory
        }
    }
    cache_[key] = cache_entry{d, now + ttl};
}

bool authenticator::may_try(const std::string& address, bool& suspect) {
    const auto now = clock_.steady_now();
    std::lock_guard lock(failures_mutex_);
    auto& table = *failures_;
    auto it = table.entries.find(address);
    if (it == table.entries.end()) {
        suspect = false;
        return true;
    }
    const auto available = it->second.bucket.available(now);
    if (available >= table.full && now - it->second.last_failure >= table.suspect_for) {
        // Refilled and quiet for a whole window: the same as never having failed.
        table.order.erase(it->second.position);
        table.entries.erase(it);
        suspect = false;
        return true;
    }
    suspect = true;
    return available > 0;
}

void authenticator::record_failure(const std::string& address) {
    const auto now = clock_.steady_now();
    std::lock_guard lock(failures_mutex_);
    auto& table = *failures_;
    auto it = table.entries.find(address);
    if (it == table.entries.end()) {
        table.order.push_back(address);
        it = table.entries
                 .emplace(address,
                          failure_table::entry{
                              ratelimit::token_bucket(options_.failed_attempts_per_address, now),
                              std::prev(table.order.end())})
                 .first;
        while (table.entries.size() > options_.max_tracked_addresses) {
            table.entries.erase(table.order.front());
            table.order.pop_front();
        }
        it = table.entries.find(address);
        if (it == table.entries.end()) {
            return;  // max_tracked_addresses 0: nothing is remembered
        }
    } else {
        table.order.splice(table.order.end(), table.order, it->second.position);
    }
    it->second.last_failure = now;
    (void)it->second.bucket.try_acquire(now);
}

void authenticator::clear_cache() {
    std::lock_guard lock(cache_mutex_);
    cache_.clear();
}

bool authenticator::breaker_open_for_test(std::string_view provider) const {
    for (const auto& slot : providers_) {
        if (slot->provider->name() == provider) {
            std::lock_guard lock(slot->mutex);
            return slot->consecutive_failures >= options_.breaker_threshold &&
                   clock_.steady_now() < slot->open_until;
        }
    }
    return false;
}

}  // namespace starling::auth
