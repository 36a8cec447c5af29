#pragma once

// Recent drops by client or by topic — which limit fired for whom (docs/backpressure.md):
//   GET /api/drops?by=client|topic&reason=<r>&clientId=<id>&topic=<t>&limit=N
// `by` defaults to client (to topic when only `topic` is given); `reason` is one of
// droppedMsgs_total's reason labels; clientId / topic select one key (clientId needs
// by=client, topic by=topic: the log keeps the two views apart, not client × topic pairs);
// limit 1..1000, default 20. Answer:
//   {"by":"client","windowSeconds":300,"bucketSeconds":60,"total":n,"totals":{"<reason>":n,..},
//    "keys":n,"evictions":n,"matching":n,
//    "data":[{"clientId":"c","total":n,"reasons":{"incoming_rate":n,...}},...]}
// (`topic` instead of `clientId` for by=topic; `reasons` lists only non-zero counts; rows with
// the highest count — of `reason` when given — first). A bad parameter → 400 naming it.
// Every call needs `Authorization: Bearer <security.admin-token>` (or `X-Authorization`); the
// route is not registered when the token is empty.
//
// Lifecycle: added by the composition root; the drop log must outlive the HTTP server.
// Concurrency: the handler runs on an I/O thread; a query locks each drop-log shard briefly.

#include "http/api_support.h"
#include "http/router.h"
#include "metrics/drop_log.h"

#include <string>

namespace starling::http {

void add_drops_routes(router& routes, const metrics::drop_log& drops, api_access access);

}  // namespace starling::http
