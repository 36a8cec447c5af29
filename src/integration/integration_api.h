#pragma once

// The integrations' REST API (TBMQ's IntegrationController paths):
//
//   GET    /api/integrations?pageSize=&page=&textSearch=   PageData of integrations ordered by
//          creation time; textSearch keeps names containing it (case-insensitive)
//   GET    /api/integration/{id}                          one; 404
//   POST   /api/integration    a definition (integration/definition.h); without "id" creates
//          one (new id), with an id updates it (404 when none has it; the type cannot change).
//          Answers the stored integration once this node routes by it. 400 naming the field.
//   POST   /api/integration/check   validates a definition and tries a TCP connection to its
//          target: 200 {} or 400 {"message": why}
//   DELETE /api/integration/{id}                          {}; 404. Its msg.ie topic is deleted.
//
// Every answer's integration carries "status", this node's view of its execution:
//   {"state": "ACTIVE" | "FAILING" | "STANDBY" (another node owns it) | "DISABLED" | "PENDING"
//    (not yet started here), "sent", "failed", "retried", "lag", "lastError",
//    "lastErrorTime"}.
// Needs the admin bearer token (401 otherwise); not registered without one.

#include "http/api_support.h"
#include "http/router.h"
#include "starling/metadata_store.h"

#include "integration/integration_service.h"

namespace starling::integration {

void add_integration_routes(http::router& routes, metadata_store& store,
                            integration_service& service, http::api_access access);

}  // namespace starling::integration
