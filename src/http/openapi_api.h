#pragma once

// GET /api/openapi.json: the OpenAPI 3 document of the management API (docs/openapi.json,
// compiled into the binary at build time so the document always matches the handlers it was
// built with). Behind the admin bearer token like every /api route; absent without one.

#include "http/api_support.h"
#include "http/router.h"

#include <string>
#include <string_view>

namespace starling::http {

// The document's text as built in.
std::string_view openapi_document();

void add_openapi_routes(router& routes, const api_access& access);

}  // namespace starling::http
