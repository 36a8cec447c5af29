#pragma once

// admin_tokens: the JSON Web Tokens of the management API's admin users (POST /api/auth/login,
// POST /api/auth/token). HS256 with one key from config (security.jwt.token-signing-key), so
// every node of a cluster accepts a token any node issued without asking anyone.
//
// Two kinds, told apart by the `scopes` claim as TBMQ does: an access token (["SYS_ADMIN"],
// short-lived, sent with every /api call) and a refresh token (["REFRESH_TOKEN"], long-lived,
// good only for getting a new pair). A refresh token is never accepted where an access token is
// needed, nor the reverse.
//
// verify() accepts only what issue() makes: header alg HS256 (no "none", no RSA/HMAC key
// confusion), this key's signature (compared in constant time), this issuer, an `exp` in the
// future and a non-empty `sub`.
//
// Concurrency: immutable after construction; issue() and verify() from any thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace starling::auth {

struct admin_token_options {
    std::string signing_key;  // the HMAC key's bytes; at least 32 (checked by the config loader)
    std::string issuer = "starling";
    std::chrono::seconds access_ttl{9000};     // TBMQ's JWT_TOKEN_EXPIRATION_TIME default
    std::chrono::seconds refresh_ttl{604800};  // JWT_REFRESH_TOKEN_EXPIRATION_TIME
};

enum class admin_token_kind : std::uint8_t { access, refresh };

struct admin_claims {
    std::string subject;  // the admin user's name (TBMQ: the e-mail)
    admin_token_kind kind = admin_token_kind::access;
    std::int64_t issued_at_s = 0;
    std::int64_t expires_at_s = 0;
};

class admin_tokens {
  public:
    explicit admin_tokens(admin_token_options options);

    std::string issue(std::string_view subject, admin_token_kind kind, std::int64_t now_s) const;

    // The claims of a token this key signed, of `kind`, unexpired at `now_s`; nullopt otherwise.
    std::optional<admin_claims> verify(std::string_view token, admin_token_kind kind,
                                       std::int64_t now_s) const;

    const admin_token_options& options() const { return options_; }

  private:
    std::string sign(std::string_view input) const;

    const admin_token_options options_;
};

}  // namespace starling::auth
