#pragma once

// The daemon's authentication wiring: turns security.mqtt.* into the authenticator (providers
// in the configured order), the blocked-clients list, and the bcrypt worker pool, and upserts
// the configured credentials into the metadata store before any listener opens. The JWT (JWKS)
// and HTTP providers run their requests on `io_executor` (the daemon's I/O pool).
//
// Lifecycle: build_security() runs once at start-up, before the broker node that is handed the
// authenticator (throws std::runtime_error naming the config key on bad input); the parts live
// until the daemon stops: stop the authenticator and then its timers after the listeners, and
// the pool after them.

#include "actor/timer_service.h"
#include "auth/authenticator.h"
#include "auth/blocked_clients.h"
#include "auth/http_provider.h"
#include "auth/jwt_provider.h"
#include "auth/worker_pool.h"
#include "config/broker_config.h"
#include "metrics/auth_probe.h"
#include "starling/metadata_store.h"

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <optional>
#include <string>

namespace starling::app {

struct security_parts {
    std::unique_ptr<auth::worker_pool> pool;
    std::unique_ptr<auth::authenticator> authenticator;
    // The authenticator's provider timeouts. Its own thread rather than the broker's timers:
    // security is built before the node, which is handed the authenticator at construction.
    // Declared after the authenticator, so it stops (and drops their callbacks) before the
    // authenticator they call is destroyed.
    std::unique_ptr<actor::timer_service> timers;
    std::unique_ptr<auth::blocked_clients> blocked;
    // Owned by the authenticator (null when not configured): the daemon calls start() after
    // build_security() and stop() at shutdown, before the I/O pool that runs their requests.
    auth::jwt_provider* jwt = nullptr;
    auth::http_provider* http = nullptr;
};

// The first invalid JWT/HTTP provider setting (enabled and listed providers only) as
// "<key>: <reason>", or nullopt. build_security() fails with it; --validate-config prints it.
std::optional<std::string> provider_config_error(const config::broker_config& cfg);

// The timers are started; the JWT provider is not (the caller starts it).
security_parts build_security(const config::broker_config& cfg, metadata_store& metadata,
                              metrics::auth_probe& probe, boost::asio::any_io_executor io_executor);

}  // namespace starling::app
