#pragma once

// basic_provider: MQTT_BASIC authentication (TBMQ's BasicMqttClientAuthProvider). Looks up the
// CONNECT's credentials ids (auth-strategy: BOTH / CLIENT_ID / USERNAME) in the metadata store
// and verifies the password against the stored bcrypt hash on the auth worker pool (the low
// lane for a suspect source address, see auth_request::suspect).
//
// Verdicts: no credentials row for any id → not_applicable (the next provider may know the
// client); a row whose password matches (or that requires none) → allow with its rules and
// client type; rows found but no password matches → deny, bad credentials; store error →
// failed; a full worker queue, or a verification that waited past the pool's queue timeout →
// shed (load shedding, not a failure: auth_result::shed).
//
// A successful bcrypt verification is cached for `verified_ttl` (TBMQ: 1 min), keyed by the
// stored hash and a SHA-256 of the offered password, so reconnect storms cost one bcrypt each.
// The cache is consulted before queueing: a client verified within that minute never waits
// behind the pool's queue.
//
// Lifecycle: built by the daemon, outlives every CONNECT (the authenticator owns it).
// Concurrency: authenticate() from any thread; callbacks run on the store's or the pool's
// threads; the verification cache is behind a mutex.

#include "auth/credentials.h"
#include "auth/provider.h"
#include "auth/worker_pool.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace starling::auth {

class basic_provider final : public auth_provider {
  public:
    basic_provider(metadata_store& store, worker_pool& pool, basic_auth_strategy strategy,
                   const starling::clock& clock,
                   std::chrono::milliseconds verified_ttl = std::chrono::minutes(1));

    std::string_view name() const override { return credentials_type_basic; }
    void authenticate(const auth_request& request, std::function<void(auth_result)> done) override;

  private:
    struct candidate {
        client_type type = client_type::device;
        std::string credentials_id;
        basic_credentials credentials;
    };
    void verify(std::vector<candidate> candidates, std::optional<std::string> password,
                std::string client_id, worker_pool::lane lane,
                std::function<void(auth_result)> done);
    // The verdict when no candidate before the deciding one needs bcrypt (no password hash,
    // or this password verified within verified_ttl); nullopt = the pool must decide.
    std::optional<auth_result> decided_without_bcrypt(const std::vector<candidate>& candidates,
                                                      const std::optional<std::string>& password,
                                                      const std::string& client_id);
    // The verdict for credentials whose password matched: allow, or deny (not authorized)
    // when they are bound to client ids that `client_id` is not one of.
    static auth_result accepted(const candidate& c, const std::string& client_id);
    bool verified_recently(const std::string& key);
    void remember_verified(std::string key);

    metadata_store& store_;
    worker_pool& pool_;
    const basic_auth_strategy strategy_;
    const starling::clock& clock_;
    const std::chrono::milliseconds verified_ttl_;

    std::mutex cache_mutex_;
    std::unordered_map<std::string, starling::clock::steady_point> verified_;  // key → expiry
};

}  // namespace starling::auth
