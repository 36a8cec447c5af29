#pragma once

// The client-session REST API (http/client_session_api.h) over broker::session_admin: the
// wiring between the http module, which knows no broker types, and the broker.

#include "broker/session_admin.h"
#include "http/client_session_api.h"

#include <string>

namespace starling::app {

// `sessions` must outlive the HTTP server the routes go into.
http::client_session_api client_session_admin(broker::session_admin& sessions,
                                              std::string admin_token);

}  // namespace starling::app
