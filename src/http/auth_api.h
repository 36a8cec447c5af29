#pragma once

// The admin login of the management API, TBMQ's paths and shapes:
//   POST /api/auth/login  {"username","password"}  → {"token","refreshToken"}
//   POST /api/auth/token  {"refreshToken"}          → {"token","refreshToken"} (a new pair)
//   GET  /api/auth/user                             → who the bearer is
// `token` goes in `X-Authorization: Bearer …` (or `Authorization`) on every other /api call.
//
// Login and refresh need no bearer token (they are how one gets it). Refusals:
//   401 wrong user name or password, or a refresh token that is bad, expired or whose user is
//       gone (the answer never says which);
//   429 the caller's address used up its failed logins (security.admin.failed-logins-per-address),
//       answered before any password check, with Retry-After;
//   503 the password-check pool is full or the metadata store is down (retry);
//   400 a body that is not {"username": text, "password": text} / {"refreshToken": text}.
// Every refusal is logged with the caller's address (rate-limited: log_refusal).
//
// Lifecycle: `users` and `tokens` must outlive the server the router goes into.
// Concurrency: handlers run on I/O threads; password checks on the auth worker pool.

#include "auth/admin_tokens.h"
#include "auth/admin_users.h"
#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>

namespace starling::http {

struct auth_api {
    auth::admin_users& users;
    const auth::admin_tokens& tokens;
    std::function<std::int64_t()> now_s;  // seconds since the epoch (tests inject)
    api_access access;                    // for GET /api/auth/user
};

void add_auth_routes(router& routes, auth_api api);

}  // namespace starling::http
