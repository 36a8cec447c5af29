#pragma once

// The JWT authentication provider (TBMQ's JWT provider): the client puts a signed JWT in the
// CONNECT password.
//
// Checks, in order: the token is three base64url parts; its `alg` fits the configured key
// (HMAC secret → HS256/384/512; RSA PEM or JWK → RS256/384/512; EC → the ES algorithm of its
// curve — so a public key is never used as an HMAC secret and `none` is never accepted); the
// signature (OpenSSL EVP, key parsed once); `exp` (required unless `allow_tokens_without_exp`)
// and `nbf` with `clock_skew` leeway; every `authClaims` entry (claim → required value,
// `${clientId}` / `${username}` replaced from CONNECT). The client type is the opposite of
// `defaultClientType` when every `clientTypeClaims` entry matches (as in TBMQ), else the default.
// Topic rules come from the token when `pubAuthRuleClaim` / `subAuthRuleClaim` name a claim it
// carries (a list of regexes, or one string), else from `authRules`, per side.
//
// Outcomes: no password → not_applicable; malformed token, wrong algorithm, bad signature,
// no `exp` (by default), expired or not yet valid → deny, bad credentials; a claim mismatch or an
// invalid rule regex in the token → deny, not authorized; JWKS endpoint unreachable with no key
// known → deny with the `unavailable_prefix` reason (provider_support.h). An allow carries
// `valid_for` = the time left until the token's `exp`, so the authenticator's cache never outlives
// the token.
//
// Lifecycle: construct with valid options (the constructor throws std::invalid_argument naming
// the offending key: start-up only), start() (JWKS: first fetch and the refresh timer),
// authenticate() any number of times, stop() (also run by the destructor).
//
// Concurrency: authenticate() is thread-safe. Verification is CPU work done inline on the
// calling thread (an I/O thread). Measured per token, claims included (Debug build, shared
// 2-core machine): HS256 ~20 µs, RS256 (2048) ~50 µs, ES256 ~85 µs — acceptable inline at
// connection rates. With JWKS, a token whose kid is not cached waits for a fetch and is
// answered on the cache's strand of the executor.
//
// Why not libjwt (Debian's 1.10): it takes the key as PEM bytes on every call and OpenSSL 3
// re-decodes it each time (RS256 measured ~350 µs, ES256 ~430 µs per token); it picks the
// algorithm from the token header (an HS256 token "signed" with the public PEM passes unless
// the caller pins the algorithm first); and it has no leeway or JWK support. The tests use
// libjwt to sign tokens, an implementation independent of ours.

#include "auth/jwks_cache.h"
#include "auth/provider.h"
#include "auth/provider_support.h"
#include "starling/clock.h"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace starling::auth {

enum class jwt_verifier_type { algorithm_based, jwks };  // ALGORITHM_BASED, JWKS
enum class jwt_sign_algorithm { hmac_based, pem_key };   // HMAC_BASED, PEM_KEY

// The HMAC secret TBMQ (and Starling's config/starling.yml before) shipped as its example. Anyone
// can sign tokens with it, so validation_error() refuses it.
inline constexpr std::string_view jwt_example_secret = "please-change-this-32-char-jwt-secret";

// Field by field with the TBMQ name of the JWT provider configuration.
struct jwt_provider_options {
    client_type default_client_type = client_type::device;  // defaultClientType
    jwt_verifier_type verifier = jwt_verifier_type::algorithm_based;
    // ^ jwtVerifierConfiguration.jwtVerifierType
    jwt_sign_algorithm algorithm = jwt_sign_algorithm::hmac_based;
    // ^ jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.algorithm (ALGORITHM_BASED)
    std::string secret;
    // ^ ...jwtSignAlgorithmConfiguration.secret (HMAC_BASED): at least 32 bytes, not the
    //   example secret
    std::string public_pem_key;
    // ^ ...jwtSignAlgorithmConfiguration.publicPemKey (PEM_KEY): RSA (≥ 2048 bits) or EC
    jwks_options jwks;  // jwtVerifierConfiguration endpoint, headers, refreshInterval (JWKS)
    std::map<std::string, std::string> auth_claims;         // authClaims
    std::map<std::string, std::string> client_type_claims;  // clientTypeClaims
    auth_rules_options auth_rules;                          // authRules
    std::string pub_auth_rule_claim;                        // pubAuthRuleClaim (empty: none)
    std::string sub_auth_rule_claim;                        // subAuthRuleClaim (empty: none)
    std::chrono::seconds clock_skew{5};  // Starling addition: leeway on exp and nbf
    // Starling addition: accept a token without `exp` (it would never expire). Off: such a
    // token is denied.
    bool allow_tokens_without_exp = false;

    // The first invalid field as "<tbmqKey>: <reason>", or nullopt when valid.
    std::optional<std::string> validation_error() const;
};

class jwt_provider final : public auth_provider {
  public:
    // `executor` runs the JWKS fetches (unused with ALGORITHM_BASED); `clock` reads the time
    // for exp/nbf and the JWKS refetch limit.
    jwt_provider(jwt_provider_options options, boost::asio::any_io_executor executor,
                 const starling::clock& clock = starling::system_clock::instance());
    ~jwt_provider() override;

    jwt_provider(const jwt_provider&) = delete;
    jwt_provider& operator=(const jwt_provider&) = delete;

    void start();
    void stop();

    std::string_view name() const override { return "JWT"; }
    void authenticate(const auth_request& request, std::function<void(auth_result)> done) override;

    // JWKS only, else null (tests: fetch counts).
    const jwks_cache* jwks_for_test() const { return jwks_.get(); }

    // Immutable verification state, shared with callbacks that wait for a JWKS fetch (they may
    // run after the provider is gone).
    struct core;

  private:
    std::shared_ptr<const core> core_;
    std::shared_ptr<const verification_key> static_key_;  // ALGORITHM_BASED
    std::unique_ptr<jwks_cache> jwks_;                    // JWKS
};

}  // namespace starling::auth
