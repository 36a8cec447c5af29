#pragma once

// TBMQ's unauthorized-client REST API (UnauthorizedClientController) on Starling's router: the
// log of refused CONNECTs that the metadata store keeps (include/starling/metadata_store.h,
// unauthorized_client — bounded in rows, rate and field sizes; rows expire after 3 days).
//
//   GET    /api/unauthorized/client?pageSize=&page=&textSearch=
//          newest first, as TBMQ's PageData {"data":[...],"totalPages","totalElements",
//          "hasNext"}; pageSize 1..1000 (default 100), page from 0; textSearch keeps rows whose
//          client id contains it (case-insensitive)
//   GET    /api/unauthorized/client/{clientId}      one row; 404 when there is none
//   DELETE /api/unauthorized/client/{clientId}      200 when removed; 404 when there was none
//   DELETE /api/unauthorized/client                 removes every row → {"deleted": n}
//
// A row is {"clientId","ipAddress","ts","username","passwordProvided","tlsUsed","reason"}
// (TBMQ's UnauthorizedClient). {clientId} is percent-encoded in the path ('+' is itself); the
// stored id is cut to 256 bytes, so a longer id is found by its first 256 bytes.
//
// The rows live in the metadata store (embedded: SQLite; cluster: PostgreSQL, shared by every
// node), so any node answers for the whole cluster. A store that fails answers 503.
//
// Every route needs an admin bearer token (api_access), 401 otherwise; when
// the API is disabled the routes are not registered (as the other /api routes).

#include "http/api_support.h"
#include "http/router.h"
#include "starling/metadata_store.h"

#include <string>

namespace starling::http {

// `store` must outlive the server the router goes into.
void add_unauthorized_client_routes(router& routes, metadata_store& store, api_access access);

}  // namespace starling::http
