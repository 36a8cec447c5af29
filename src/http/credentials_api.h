#pragma once

// REST management of MQTT client credentials (TBMQ's /api/mqtt/client/credentials, reduced):
//   GET    /api/mqtt/client/credentials?pageSize=N&page=P   → {"data":[...],"hasNext":bool}
//   POST   /api/mqtt/client/credentials   body {"name","clientType","credentialsType",
//          "credentialsValue"} (TBMQ's shape; a plain MQTT_BASIC password is bcrypt-hashed)
//   DELETE /api/mqtt/client/credentials/<credentialsId, URL-encoded>
// Every call needs `Authorization: Bearer <security.admin-token>` (or TBMQ's
// `X-Authorization`); the routes are not registered at all when the token is empty.
// A change clears the authentication cache, so it applies to the next CONNECT.
//
// Lifecycle: routes are added by the composition root; the store, pool and authenticator must
// outlive the HTTP server. Concurrency: handlers run on I/O threads and only post work: store
// calls are asynchronous and bcrypt runs on the auth worker pool.

#include "auth/authenticator.h"
#include "auth/worker_pool.h"
#include "http/api_support.h"
#include "http/router.h"
#include "starling/metadata_store.h"

#include <string>

namespace starling::http {

void add_credentials_routes(router& routes, metadata_store& store, auth::worker_pool& pool,
                            auth::authenticator* authenticator, api_access access);

}  // namespace starling::http
