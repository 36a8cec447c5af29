#pragma once

// The authentication-provider seam shared by every provider (MQTT_BASIC, X_509, JWT, HTTP).
// The authenticator (authenticator.h) asks its providers in the configured order; the first
// definitive answer (allow or deny) wins, `not_applicable` passes to the next one.
//
// Concurrency: authenticate() may be called from any thread (usually an I/O thread) and must
// return at once; blocking work (bcrypt, HTTP, database) runs elsewhere. `done` is called
// exactly once, on any thread, and must not block.

#include "auth/pattern.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::auth {

// The client's TLS identity as the listener saw it.
struct peer_certificate {
    // Leaf first, DER bytes. When verified_by_listener, the chain the listener verified (leaf
    // to trust anchor); otherwise what the client sent, to be verified before any use.
    std::vector<std::string> der_chain;
    std::string subject_cn;             // CN of the leaf
    bool verified_by_listener = false;  // chain verified against the listener's trust store
};

struct auth_request {
    std::string client_id;
    std::optional<std::string> username;
    std::optional<std::string> password;  // raw bytes of the CONNECT password
    std::string remote_address;           // "ip:port", after any PROXY protocol header
    bool tls = false;
    std::optional<peer_certificate> certificate;
    // Set by the authenticator: this source address failed authentication recently. Providers
    // queue its expensive work (bcrypt) behind everyone else's (worker_pool's low lane), so a
    // wrong-password flood cannot delay other clients' verifications.
    bool suspect = false;
};

// Per-credential topic rules (TBMQ's authRules: pubAuthRulePatterns / subAuthRulePatterns).
// A topic (or topic filter) is allowed when one pattern matches it whole (RE2, linear time in
// the topic's length whatever the pattern; see pattern.h for the syntax).
struct topic_rules {
    std::vector<pattern> publish;
    std::vector<pattern> subscribe;
    bool allow_all = false;  // anonymous access / providers without rules

    bool may_publish(std::string_view topic) const;
    bool may_subscribe(std::string_view topic_filter) const;
    static std::shared_ptr<const topic_rules> everything();
};

enum class verdict : std::uint8_t { allow, deny, not_applicable };

struct auth_result {
    verdict outcome = verdict::not_applicable;
    client_type type = client_type::device;
    std::shared_ptr<const topic_rules> rules;  // set when outcome == allow
    std::string reason;                        // for logs and the unauthorized-client log
    // deny only: true when the credentials were wrong (v5 0x86 / v3 0x04), false when the
    // client is simply not authorized (v5 0x87 / v3 0x05).
    bool bad_credentials = true;
    // The provider could not decide (store or endpoint error). The authenticator counts it
    // toward the provider's circuit breaker and asks the next provider; when nobody decides,
    // the CONNECT is refused even if anonymous access is allowed (fail closed).
    bool failed = false;
    // Load shedding: the provider did not run because its bounded work queue was full or the
    // request waited there past the queue timeout. Not a provider failure — it never counts
    // toward the circuit breaker, which would otherwise lock every client out because of a
    // flood — but it still fails closed: unless another provider decides, the CONNECT is refused
    // with Server busy (v5 0x89, v3 0x03) and no anonymous fallback.
    bool shed = false;
    // allow only: how much longer the verdict holds (the JWT provider: until the token's exp).
    // The authenticator caches it no longer than this (0 = not at all); nullopt = no limit of
    // the provider's own.
    std::optional<std::chrono::milliseconds> valid_for;
};

class auth_provider {
  public:
    virtual ~auth_provider() = default;
    virtual std::string_view name() const = 0;  // "MQTT_BASIC", "X_509", "JWT", "HTTP"
    virtual void authenticate(const auth_request& request,
                              std::function<void(auth_result)> done) = 0;
};

}  // namespace starling::auth
