#pragma once

// REST control of this node's log level, changed at runtime without a restart:
//   GET /api/app/log-level → {"level": "info", "levels": ["trace", …, "off"]}
//   PUT /api/app/log-level   {"level": "debug"} → {"level": "debug", "previous": "info"}
// An unknown level or a body that is not {"level": <string>} is a 400 naming the member; the
// level in force is unchanged. Every change is logged (at warn, so it shows at any level but
// error) with the old and new level. The level is the node's own: it lasts until the next
// change or restart (the configured `log-level` applies again at start-up).
//
// Every call needs `Authorization: Bearer <security.admin-token>` (or `X-Authorization`); the
// routes are not registered when the token is empty. Concurrency: handlers run on I/O threads;
// spdlog's level is atomic per logger.

#include "http/api_support.h"
#include "http/router.h"

#include <string>

namespace starling::http {

void add_log_level_routes(router& routes, api_access access);

}  // namespace starling::http
