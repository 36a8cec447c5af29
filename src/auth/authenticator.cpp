#include "auth/authenticator.h"

#include "auth/password.h"

#include <spdlog/spdlog.h>

namespace starling::auth {

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
};

authenticator::authenticator(authenticator_options options,
                             std::vector<std::unique_ptr<auth_provider>> providers,
                             actor::timer_service& timers, metrics::auth_probe& probe,
                             const starling::clock& clock)
    : options_(options), timers_(timers), probe_(probe), clock_(clock) {
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
        const auto* reason = d.result.failed            ? "provider_failure"
                             : d.result.bad_credentials ? "bad_credentials"
                                                        : "not_authorized";
        probe_.auth_failed(d.provider.empty() ? "none" : d.provider, reason);
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
    if (options_.cache_ttl.count() <= 0) {
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
    cache_[key] = cache_entry{d, now + options_.cache_ttl};
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
