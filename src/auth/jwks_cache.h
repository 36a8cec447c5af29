#pragma once

// JWKS support for the JWT provider: converting JSON Web Keys to OpenSSL public keys, and a
// cache of the keys published at a JWKS endpoint.
//
// jwks_cache keeps the endpoint's keys by `kid`. It fetches them at start(), again every
// `refresh_interval`, and when a token names a kid it does not know — at most once per
// `unknown_kid_min_interval`, so a flood of tokens with made-up kids cannot turn into a flood
// of requests to the identity provider. Lookups that need a fetch wait for it (their number is
// bounded); a failed fetch keeps the keys already known.
//
// Lifecycle: construct with valid options, start() once, stop() (also run by the destructor).
// Internals are shared with the in-flight fetch, so the cache may be destroyed first; pending
// lookups are answered `unavailable` by stop().
//
// Concurrency: find() is thread-safe. A known kid is answered inline on the caller's thread
// (one mutex-guarded map lookup); otherwise the answer comes on the cache's strand of the
// executor passed in. The periodic refresh and fetches run on that strand.

#include "auth/http_client.h"
#include "base/result.h"
#include "starling/clock.h"

#include <boost/asio/any_io_executor.hpp>
#include <nlohmann/json_fwd.hpp>
#include <openssl/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::auth {

enum class key_family { hmac, rsa, ec };

// One verification key and the token algorithms it may verify (so an RS256 key is never used
// as an HS256 secret). The OpenSSL key is parsed once and shared: EVP_PKEY is safe for
// concurrent verifications.
struct verification_key {
    std::string kid;
    key_family family = key_family::rsa;
    std::string secret;                    // hmac
    std::shared_ptr<EVP_PKEY> public_key;  // rsa, ec
    std::string pem;                       // rsa, ec: SubjectPublicKeyInfo PEM (for logs, tests)
    std::vector<std::string> algorithms;   // e.g. {"RS256", "RS384", "RS512"} or {"ES256"}
};

// A PEM public key (RSA or EC) checked with OpenSSL; the error text says why it is unusable.
result<verification_key> key_from_pem(std::string_view pem, std::string* why = nullptr);

// One JWK: RSA (n, e) or EC (crv P-256/P-384/P-521, x, y) converted with OpenSSL 3. Keys with
// "use" other than "sig" or another kty are errors (why says which).
result<verification_key> key_from_jwk(const nlohmann::json& jwk, std::string* why = nullptr);

// A JWKS document {"keys": [...]}: the usable keys; unusable ones are skipped and logged.
result<std::vector<verification_key>> keys_from_jwks(std::string_view body,
                                                     std::string* why = nullptr);

// Field by field with the TBMQ name (jwtVerifierConfiguration, type JWKS).
struct jwks_options {
    std::string endpoint;                        // endpoint (http:// or https://)
    http_headers headers;                        // headers
    std::chrono::seconds refresh_interval{300};  // refreshInterval (seconds, at least 300)
    // Starling additions: refetch on an unknown kid at most once per this interval; the fetch
    // timeout; the largest document accepted; TLS peer verification and trust store.
    std::chrono::seconds unknown_kid_min_interval{30};
    std::chrono::milliseconds fetch_timeout{5000};
    std::size_t max_document_kb = 256;
    bool verify_tls_peer = true;
    std::string ca_file;

    // The first invalid field as "<key>: <reason>", or nullopt when valid.
    std::optional<std::string> validation_error() const;
};

class jwks_cache {
  public:
    enum class lookup_status { found, unknown_kid, unavailable };
    struct lookup {
        lookup_status status = lookup_status::unknown_kid;
        std::shared_ptr<const verification_key> key;  // set when found
        std::string detail;                           // why, when not found
    };
    using lookup_done = std::function<void(lookup)>;

    jwks_cache(jwks_options options, boost::asio::any_io_executor executor,
               const starling::clock& clock = starling::system_clock::instance());
    ~jwks_cache();

    jwks_cache(const jwks_cache&) = delete;
    jwks_cache& operator=(const jwks_cache&) = delete;

    // First fetch and the periodic refresh.
    void start();
    void stop();

    // The key for `kid`; an empty kid finds the only key when the set has exactly one. Calls
    // `done` exactly once (inline when the key is known).
    void find(const std::string& kid, lookup_done done);

    std::size_t fetch_count() const;  // fetches started (tests: rotation, rate limit)
    std::size_t key_count() const;

    struct state;

  private:
    std::shared_ptr<state> state_;
};

}  // namespace starling::auth
