#pragma once

// x509_provider: X_509 authentication (TBMQ's SslMqttClientAuthProvider). Uses the client
// certificate chain the TLS listener recorded in auth_request::certificate:
//   1. verifies the chain against the configured CA files (security.mqtt.ssl.trust-store),
//      optionally without the validity period (skip-validity-check-for-client-cert); with no
//      trust store configured, the listener's own verification must have succeeded;
//   2. finds credentials `ssl|<CN>` for the CN of each certificate of the *verified* chain
//      (the path X509_verify_cert built, or the listener's SSL_get0_verified_chain), leaf
//      first, then its issuers up to the trust anchor; an exact match wins, else a credential
//      whose certCnPattern is a regex (certCnIsRegex) matching that CN. Certificates the
//      client sent that are not on the verified path are ignored: appending a self-signed
//      certificate with a privileged CN gains nothing;
//   3. turns the credential's authRulesMapping (regex on the leaf CN → rules) into the
//      client's topic rules: the patterns of every mapping whose key matches, merged.
// No certificate, or no credential for any CN → not_applicable (another provider may know the
// client). Chain rejected, or no authRulesMapping entry for the leaf CN → deny (not
// authorized).
//
// Lifecycle: built by the daemon; CA files are loaded in create() (start-up errors name the
// file). Concurrency: authenticate() from any thread; chain verification runs on the worker
// pool; the regex-credentials cache is behind a mutex.

#include "auth/provider.h"
#include "auth/worker_pool.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace starling::auth {

struct x509_options {
    std::vector<std::filesystem::path> trust_store;  // PEM files of trusted CAs
    bool skip_validity_check = false;
    std::chrono::milliseconds regex_cache_ttl = std::chrono::minutes(1);
};

class x509_provider final : public auth_provider {
  public:
    // Throws std::runtime_error naming the file when a CA file cannot be read (start-up).
    x509_provider(x509_options options, metadata_store& store, worker_pool& pool,
                  const starling::clock& clock);
    ~x509_provider() override;

    std::string_view name() const override { return "X_509"; }
    void authenticate(const auth_request& request, std::function<void(auth_result)> done) override;

    // CN of each certificate of a DER chain, leaf first ("" where a certificate has none);
    // nullopt when a certificate does not parse.
    static std::optional<std::vector<std::string>> chain_common_names(
        const std::vector<std::string>& der_chain);

  private:
    struct trust;
    struct regex_credential;

    // The CNs of a verified chain, leaf first, then each issuer up to the trust anchor ("" for
    // a certificate without one); or why the chain was not accepted.
    struct verified_names {
        std::vector<std::string> cns;
        std::string error;  // empty = verified
    };
    // Runs on the pool: verifies the chain (own trust store, else the listener's verdict) and
    // returns the CNs of the certificates on the verified path only, never of extra
    // certificates the client sent.
    verified_names verify_chain(const peer_certificate& cert) const;
    // `client_id`: as the client sent it, for credentials bound to a clientIdPattern.
    void lookup(std::vector<std::string> cns, std::string client_id,
                std::function<void(auth_result)> done);
    void decide(const std::vector<std::string>& cns, const std::string& client_id,
                std::vector<client_credentials> exact, std::vector<client_credentials> regex_rows,
                const std::function<void(auth_result)>& done);

    const x509_options options_;
    metadata_store& store_;
    worker_pool& pool_;
    const starling::clock& clock_;
    std::unique_ptr<trust> trust_;

    std::mutex cache_mutex_;
    std::vector<client_credentials> regex_rows_;
    starling::clock::steady_point regex_rows_expire_{};
};

}  // namespace starling::auth
