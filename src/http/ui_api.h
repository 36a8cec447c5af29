#pragma once

// The admin web UI (ui/ at the repository root): static files compiled into the binary, so a
// node serves the UI that matches its API with nothing to install or find on disk.
//
// GET /            → ui/index.html
// GET /ui/<path>   → ui/<path>
// Served next to /api (same server, same port) and only where /api is: the UI is a client of
// the API and useless without it. The files are public; every call they make to /api carries
// the admin user's token. Responses carry an ETag (If-None-Match → 304), `Cache-Control:
// no-cache` (always revalidated, so a new build's files are used at once) and a
// Content-Security-Policy that allows only this origin's scripts, styles and API.

#include "http/api_support.h"
#include "http/router.h"

#include <span>
#include <string_view>

namespace starling::http {

struct ui_asset {
    std::string_view path;  // relative to ui/: "index.html", "pages/login.js"
    std::string_view body;
};

// Every file of ui/, from the generated table (src/http/CMakeLists.txt).
std::span<const ui_asset> ui_assets();

// The Content-Type for a file name by its extension; application/octet-stream when unknown.
std::string_view ui_content_type(std::string_view path);

void add_ui_routes(router& routes, const api_access& access);

}  // namespace starling::http
