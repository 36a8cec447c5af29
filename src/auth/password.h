#pragma once

// Password hashing for MQTT_BASIC credentials: bcrypt ("$2b$", TBMQ's format, so credentials
// exported from TBMQ verify here) through libxcrypt, and SHA-256 for cache keys (a password
// never sits in memory longer than the CONNECT that carried it).
//
// Concurrency: pure functions, thread-safe (crypt_rn with a per-call buffer). bcrypt_verify
// and bcrypt_hash are deliberately slow: call them on auth::worker_pool, never on an I/O thread.

#include <optional>
#include <string>
#include <string_view>

namespace starling::auth {

// True when `hash` looks like a bcrypt hash ($2a$, $2b$ or $2y$).
bool is_bcrypt_hash(std::string_view hash);

// A fresh "$2b$<cost>$..." hash, or nullopt when libxcrypt refuses (bad cost, no entropy).
std::optional<std::string> bcrypt_hash(std::string_view password, unsigned cost = 10);

// Constant-time comparison of crypt(password, hash) with hash.
bool bcrypt_verify(std::string_view password, std::string_view hash);

// Lowercase hex SHA-256.
std::string sha256_hex(std::string_view data);

}  // namespace starling::auth
