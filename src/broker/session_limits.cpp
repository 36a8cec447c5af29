#include "broker/session_limits.h"

#include "broker/broker_core.h"
#include "broker/client_actor.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace starling::broker {
namespace {

void ignore(result<std::int64_t>) {}

}  // namespace

void session_limits::admit(bool application, std::function<void(admission)> done) {
    counters_->add(sessions_key, 1,
                   [this, application, done = std::move(done)](result<std::int64_t> r) mutable {
                       if (!r) {
                           store_failed(r.error());
                           done(admission::admitted_uncounted);
                           return;
                       }
                       store_answered();
                       const std::int64_t sessions = r.value();
                       if (sessions_limit_ > 0 && sessions > sessions_limit_) {
                           counters_->add(sessions_key, -1, ignore);
                           probe_.session_limit_refused(false);
                           seen(sessions - 1, -1);
                           done(admission::sessions_full);
                           return;
                       }
                       if (!application) {
                           seen(sessions, -1);
                           done(admission::admitted);
                           return;
                       }
                       counters_->add(
                           application_key, 1,
                           [this, sessions, done = std::move(done)](result<std::int64_t> a) {
                               if (!a) {
                                   // The session unit was reserved, the APPLICATION one not: give
                                   // the first back and let the client in uncounted, as for any
                                   // store failure.
                                   counters_->add(sessions_key, -1, ignore);
                                   store_failed(a.error());
                                   done(admission::admitted_uncounted);
                                   return;
                               }
                               if (application_limit_ > 0 && a.value() > application_limit_) {
                                   counters_->add(application_key, -1, ignore);
                                   counters_->add(sessions_key, -1, ignore);
                                   probe_.session_limit_refused(true);
                                   seen(sessions - 1, a.value() - 1);
                                   done(admission::application_full);
                                   return;
                               }
                               seen(sessions, a.value());
                               done(admission::admitted);
                           });
                   });
}

void session_limits::release(bool application) {
    counters_->add(sessions_key, -1, [this](result<std::int64_t> r) {
        if (r) {
            seen(r.value(), -1);
        }
    });
    if (application) {
        counters_->add(application_key, -1, [this](result<std::int64_t> r) {
            if (r) {
                seen(-1, r.value());
            }
        });
    }
}

void session_limits::type_changed(bool now_application) {
    counters_->add(application_key, now_application ? 1 : -1, [this](result<std::int64_t> r) {
        if (r) {
            seen(-1, r.value());
        }
    });
}

void session_limits::reconcile(std::int64_t sessions, std::int64_t application,
                               std::function<void()> done) {
    // get + add is not atomic: a CONNECT admitted between the two is counted twice or not at
    // all. Reconciling runs at start-up, before the node's listeners open, where that window is
    // only other nodes' traffic; the error it can leave is the drift this corrects, bounded by
    // the CONNECTs in flight during one round trip.
    auto remaining = std::make_shared<std::atomic<int>>(2);
    auto finish = [remaining, done = std::move(done)] {
        if (remaining->fetch_sub(1) == 1 && done) {
            done();
        }
    };
    const auto set_to = [this, finish](const char* key, std::int64_t want, bool is_app) {
        counters_->get(key, [this, key, want, is_app, finish](result<std::int64_t> r) {
            if (!r) {
                store_failed(r.error());
                finish();
                return;
            }
            const std::int64_t delta = want - r.value();
            if (delta != 0) {
                spdlog::info("session limits: {} corrected from {} to {} (client.session mirror)",
                             key, r.value(), want);
            }
            counters_->add(key, delta, [this, is_app, finish](result<std::int64_t> a) {
                if (a) {
                    is_app ? seen(-1, a.value()) : seen(a.value(), -1);
                }
                finish();
            });
        });
    };
    set_to(sessions_key, sessions, false);
    set_to(application_key, application, true);
}

void session_limits::store_failed(const std::error_code& ec) {
    if (!store_failure_logged_.exchange(true)) {
        spdlog::warn(
            "session limits: the shared counters do not answer ({}); CONNECTs are let in "
            "uncounted until they do (the counts are corrected at the next start-up)",
            ec.message());
    }
}

void session_limits::store_answered() {
    if (store_failure_logged_.exchange(false)) {
        spdlog::info("session limits: the shared counters answer again");
    }
}

void session_limits::seen(std::int64_t sessions, std::int64_t application) {
    // A negative value = unchanged (that counter was not read).
    if (sessions >= 0) {
        sessions_seen_.store(sessions, std::memory_order_relaxed);
    }
    if (application >= 0) {
        application_seen_.store(application, std::memory_order_relaxed);
    }
    probe_.session_limit_counts(sessions_seen_.load(std::memory_order_relaxed),
                                application_seen_.load(std::memory_order_relaxed));
}

// --- The client actor's side (hooks called from client_actor.cpp; all on the actor's turns).

bool client_actor::limits_need_admission() const {
    // Only a CONNECT that creates a session: neither this actor nor the client.session mirror
    // (every node's, in cluster mode) knows one for the client id. Reconnects are never refused.
    return core_.session_limits().enabled() && !counted_ && !session_exists_ &&
           !core_.sessions().find_session(client_id_).has_value();
}

void client_actor::limits_admit(mqtt::connect&& p, std::uint32_t expiry, bool id_assigned) {
    const std::uint64_t channel_id = pending_connect_channel();
    auto packet = std::make_shared<const mqtt::connect>(std::move(p));
    core_.session_limits().admit(
        type_ == client_type::application,
        [self = shared_from_this(), channel_id, packet, expiry, id_assigned](admission verdict) {
            self->post([channel_id, packet, expiry, id_assigned, verdict](client_actor& a) {
                a.limits_on_admission(channel_id, verdict, *packet, expiry, id_assigned);
            });
        });
}

void client_actor::limits_on_admission(std::uint64_t channel_id, admission verdict,
                                       const mqtt::connect& p, std::uint32_t expiry,
                                       bool id_assigned) {
    const bool application = type_ == client_type::application;
    if (pending_connect_channel() != channel_id) {
        // The connection ended (or another replaced it) while the counters answered.
        if (verdict == admission::admitted) {
            core_.session_limits().release(application);
        }
        return;
    }
    if (verdict == admission::sessions_full || verdict == admission::application_full) {
        const bool app_limit = verdict == admission::application_full;
        const char* why =
            app_limit ? "mqtt.application-clients-limit reached" : "mqtt.sessions-limit reached";
        // v5: 0x97 Quota exceeded; the encoder sends v3 clients return code 3 (Server
        // unavailable), v3's only generic refusal.
        refuse_connect(mqtt::reason_code::quota_exceeded, why);
        return;
    }
    if (verdict == admission::admitted) {
        counted_ = true;
        counted_app_ = application;
    } else {
        uncounted_ = true;
    }
    connect_session(p, expiry, id_assigned);
}

void client_actor::limits_on_session_begun() {
    if (!core_.session_limits().enabled()) {
        return;
    }
    const bool application = type_ == client_type::application;
    if (uncounted_) {
        return;
    }
    if (!counted_) {
        // An existing session this actor did not count: restored, adopted from another node,
        // or created while the limits were off. Its unit is already in the counters (or put
        // there by the next reconcile), with the type it had.
        counted_ = true;
        counted_app_ = app_previous_type_ == client_type::application;
    }
    if (counted_app_ != application) {
        core_.session_limits().type_changed(application);
        counted_app_ = application;
    }
}

void client_actor::limits_on_restored() {
    if (!core_.session_limits().enabled()) {
        return;
    }
    auto record = core_.sessions().find_session(client_id_);
    counted_ = true;
    counted_app_ = record && record->type == client_type::application;
}

void client_actor::limits_release() {
    uncounted_ = false;
    if (!counted_) {
        return;
    }
    counted_ = false;
    core_.session_limits().release(counted_app_);
    counted_app_ = false;
}

}  // namespace starling::broker
