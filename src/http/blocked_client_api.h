#pragma once

// TBMQ's blocked-client REST API (BlockedClientController) on Starling's router:
//   GET    /api/blockedClient?pageSize=&page=   rules not expired, as TBMQ's PageData
//          {"data":[...],"totalPages":n,"totalElements":n,"hasNext":b}; pageSize 1..1000,
//          default 100; page from 0
//   POST   /api/blockedClient                   body {"type":"CLIENT_ID|USERNAME|IP_ADDRESS|
//          REGEX","value":"...","expirationTime":ms (0 = never),"description":"...",
//          "regexMatchTarget":"BY_CLIENT_ID|BY_USERNAME|BY_IP_ADDRESS"} → 200 with the stored
//          rule (value in canonical form); 400 naming the bad field or the invalid regex
//   DELETE /api/blockedClient?type=&value=      200 when removed, 404 when there was none
//
// Writes go through `put` / `erase` (the client.blocked log, broker::blocked_clients_log) and
// answer once the log acknowledged them; reads come from the in-memory list. In a cluster the
// other nodes apply the record from client.blocked as their state follower reads it.
//
// Every route needs an admin bearer token (api_access) (401 otherwise); with the API disabled
// token the routes are not registered at all (as the other /api routes).

#include "auth/blocked_clients.h"
#include "base/result.h"
#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>
#include <string>

namespace starling::http {

struct blocked_client_api {
    auth::blocked_clients& list;
    std::function<void(auth::blocked_entry, std::function<void(status)>)> put;
    std::function<void(auth::block_type, std::string, std::function<void(result<bool>)>)> erase;
    std::function<std::int64_t()> now_ms;  // wall clock, ms since the epoch
    api_access access;                     // who may call these routes
};

// `api.list` and whatever put/erase reference must outlive the server the router goes into.
void add_blocked_client_routes(router& routes, blocked_client_api api);

}  // namespace starling::http
