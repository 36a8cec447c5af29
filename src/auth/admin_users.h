#pragma once

// admin_users: who may log in to the management API (POST /api/auth/login), and the check of a
// login attempt.
//
// Users live in the metadata store's admin_settings under the key "admin_users" as one JSON
// document ({"users":[{"id","username","authority","passwordHash","createdTime"}]}): a broker has
// a handful of admins, so one document read per login costs nothing, and both adapters (SQLite
// embedded, PostgreSQL in a cluster) already store settings — every node of a cluster sees the
// same users. Passwords are bcrypt hashes ($2b$, cost 10), checked on the authentication worker
// pool, never on an I/O thread.
//
// A login attempt is refused before any bcrypt when its source address used up its failed
// attempts (`failed_logins_per_address`, "limit:seconds" windows): a password guesser gets
// "throttled" at once and costs no CPU. An unknown user name costs as much as a wrong password
// (bcrypt against a fixed hash), so response times do not tell which names exist.
//
// The first admin: ensure_first_admin() creates a user only when the store has none, so the
// configured first password never overwrites one changed later.
//
// Concurrency: every method from any thread; callbacks run on the store's or the pool's
// threads and must not block. Lifecycle: owned by the daemon; must outlive the HTTP server
// (pending callbacks point at it) — the daemon stops the server first.

#include "auth/worker_pool.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"
#include "starling/shared_counters.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace starling::auth {

enum class login_outcome : std::uint8_t {
    ok,
    wrong_credentials,  // unknown user or wrong password (never said which)
    throttled,          // the address used up its failed attempts
    busy,               // the worker pool is full: try again
    store_error,        // the metadata store did not answer
};

std::string_view to_string(login_outcome outcome);

struct admin_user {
    std::string id;
    std::string username;
    std::string authority = "SYS_ADMIN";
    std::string password_hash;
    std::int64_t created_time_ms = 0;
};

class admin_users {
  public:
    // The settings key the users are stored under.
    static constexpr std::string_view settings_key = "admin_users";

    admin_users(metadata_store& store, worker_pool& pool,
                std::vector<bandwidth> failed_logins_per_address,
                const starling::clock& clock = starling::system_clock::instance());
    ~admin_users();

    admin_users(const admin_users&) = delete;
    admin_users& operator=(const admin_users&) = delete;

    // Creates `username` with `password` if the store holds no admin user yet; completes with
    // whether it did.
    void ensure_first_admin(std::string username, std::string password,
                            std::function<void(result<bool>)> done);

    // Checks a login; `address` is the caller's host (for the failed-attempt limit).
    void check_login(std::string address, std::string username, std::string password,
                     std::function<void(login_outcome)> done);

    // Whether `username` is still an admin user (a refresh token of a removed user is refused).
    void exists(std::string username, std::function<void(result<bool>)> done);

  private:
    struct failure_table;
    bool may_try(const std::string& address);
    void record_failure(const std::string& address);

    metadata_store& store_;
    worker_pool& pool_;
    const std::vector<bandwidth> failed_logins_per_address_;
    const starling::clock& clock_;
    std::mutex failures_mutex_;
    std::unique_ptr<failure_table> failures_;  // guarded by failures_mutex_
};

// The users in a stored "admin_users" document; an absent or unreadable document has none.
std::vector<admin_user> parse_admin_users(const std::optional<std::string>& document);
std::string serialize_admin_users(const std::vector<admin_user>& users);

}  // namespace starling::auth
