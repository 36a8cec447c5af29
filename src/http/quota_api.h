#pragma once

// REST view of the cluster-wide throughput quota (mqtt.rate-limits.total, docs/backpressure.md):
//   GET  /api/quota              → {"enabled","config","blockSize","leaseReturnMs",
//                                   "localBalance","reached","reachedAt","degraded",
//                                   "degradedSince","graceSeconds"} (times: ms since the epoch,
//                                   null when not set). localBalance is this node's lease.
//   POST /api/quota/acknowledge  → {"acknowledged": true|false}: clears the "throughput quota
//                                   reached" indicator (false when it was not raised)
// Every call needs `Authorization: Bearer <security.admin-token>` (or `X-Authorization`), as
// the credentials API; the routes are not registered when the token is empty.
//
// Lifecycle: routes added by the composition root; they share ownership of the lease (null
// when the quota is disabled). Concurrency: handlers run on I/O threads; the lease's state()
// and acknowledge() take its short internal lock and never block on the store.

#include "http/api_support.h"
#include "http/router.h"
#include "ratelimit/quota_lease.h"

#include <memory>
#include <string>

namespace starling::http {

void add_quota_routes(router& routes, std::shared_ptr<ratelimit::quota_lease> quota,
                      api_access access);

}  // namespace starling::http
