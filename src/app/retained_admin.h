#pragma once

// The retained-message REST API (http/retained_msg_api.h) over the node's retained store and
// broker_core's msg.retained writes: the wiring between the http module, which knows no
// broker types, and the broker.

#include "broker/broker_core.h"
#include "http/retained_msg_api.h"

#include <string>

namespace starling::app {

// `core` must outlive the HTTP server the routes go into.
http::retained_msg_api retained_admin(broker::broker_core& core, http::api_access access);

}  // namespace starling::app
