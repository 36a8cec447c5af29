#pragma once

// The client-session REST API (http/client_session_api.h) over broker::session_admin: the
// wiring between the http module, which knows no broker types, and the broker.

#include "broker/broker_core.h"
#include "broker/session_admin.h"
#include "http/client_session_api.h"
#include "http/subscription_api.h"

#include <string>

namespace starling::app {

// `sessions` must outlive the HTTP server the routes go into.
http::client_session_api client_session_admin(broker::session_admin& sessions,
                                              http::api_access access);

// /api/subscription over the same: the subscriptions a POST sets are checked here by the
// broker's rules for a SUBSCRIBE (valid filters, No Local not on a shared one, the root '#'
// and level limits, the per-client maximum; QoS granted up to the maximum QoS). `core` must
// outlive the server as well.
http::subscription_api subscription_admin(broker::session_admin& sessions,
                                          const broker::broker_core& core, http::api_access access);

}  // namespace starling::app
