#pragma once

// Builds the management API's admin login (security.admin.*, security.jwt.*): the token signer,
// the admin users, the first admin, and the api_access every /api route checks.
//
// The signing key: security.jwt.token-signing-key when set (every node of a cluster must then
// have the same one — the chart and compose files pass it from one Secret); otherwise one is
// generated on the first start and kept in the metadata store's admin_settings ("jwt_signing_key"),
// so tokens survive a restart and, with a shared PostgreSQL, are accepted by every node. Two nodes
// starting together for the very first time may both generate one; each re-reads what is stored
// after writing, so they converge on the last write (a token issued in that instant by the other
// node's key fails once and the user logs in again).
//
// Blocking: build_admin_login() waits (bounded) for the metadata store; call it at start-up, not
// on an I/O thread. Lifecycle: the parts must outlive the HTTP server whose routes use them.

#include "auth/admin_tokens.h"
#include "auth/admin_users.h"
#include "auth/worker_pool.h"
#include "config/broker_config.h"
#include "http/api_support.h"
#include "starling/metadata_store.h"

#include <memory>

namespace starling::app {

struct admin_login_parts {
    std::unique_ptr<auth::admin_tokens> tokens;  // null when admin login is off
    std::unique_ptr<auth::admin_users> users;    // null when admin login is off
    http::api_access access;                     // static token and/or admin users' tokens
};

// Throws std::runtime_error naming what failed (the store could not give or keep a key).
admin_login_parts build_admin_login(const config::broker_config& cfg, metadata_store& store,
                                    auth::worker_pool& pool);

}  // namespace starling::app
