#pragma once

// REST management of MQTT client credentials (TBMQ's /api/mqtt/client/credentials):
//   GET    /api/mqtt/client/credentials?pageSize=N&page=P   → PageData, oldest first
//   GET    /api/mqtt/client/credentials/<credentialsId>     → one (404 when absent)
//   POST   /api/mqtt/client/credentials   body {"name","clientType","credentialsType",
//          "credentialsValue"} (TBMQ's shape; a plain MQTT_BASIC password is bcrypt-hashed);
//          an existing credentialsId is updated; answers the row as stored
//   POST   /api/mqtt/client/credentials/<credentialsId>     {"newPassword"} → the row
//   POST   /api/mqtt/client/credentials/bulk_import  JSON array of POST bodies, or CSV
//          (Content-Type text/csv, header row) → {"total","saved","failed","errors"}
//   DELETE /api/mqtt/client/credentials/<credentialsId>     (404 when absent)
// <credentialsId> is percent-encoded; '+' is a plus sign. Every call needs an admin token
// (api_access); when the API is off the routes are not registered.
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
