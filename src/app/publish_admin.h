#pragma once

// POST /api/mqtt/publish (http/publish_api.h) over broker_core's publish path: the wiring
// between the http module, which knows no broker types, and the broker.

#include "broker/broker_core.h"
#include "http/publish_api.h"

#include <string>

namespace starling::app {

// `core` must outlive the HTTP server the routes go into.
http::publish_api publish_admin(broker::broker_core& core, http::api_access access);

}  // namespace starling::app
