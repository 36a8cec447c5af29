#include "http/ui_api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace starling::http {
namespace {

namespace fs = std::filesystem;

response get(const router& routes, std::string target, std::string if_none_match = "") {
    request req{verb::get, target, 11};
    if (!if_none_match.empty()) {
        req.set(boost::beast::http::field::if_none_match, if_none_match);
    }
    std::optional<response> out;
    routes.dispatch(req, [&](response res) { out = std::move(res); });
    EXPECT_TRUE(out.has_value());
    return out.value_or(response{});
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

router ui_routes() {
    router routes;
    add_ui_routes(routes, "secret");
    return routes;
}

TEST(ui_api, serves_every_file_of_the_console_byte_for_byte) {
    const fs::path root = STARLING_UI_DIR;
    const auto routes = ui_routes();
    std::vector<std::pair<std::string, fs::path>> files;  // served path, file on disk
    for (const auto& folder : {root, root / "pages"}) {
        for (const auto& entry : fs::directory_iterator(folder)) {
            const auto name = entry.path().filename().string();
            if (entry.is_regular_file() && name != "README.md" && !name.starts_with('.') &&
                !name.starts_with("package")) {
                files.emplace_back(fs::relative(entry.path(), root).generic_string(), entry.path());
            }
        }
    }
    // MQTT.js, from npm (scripts/install-deps.sh), for the WebSocket client page.
    files.emplace_back("vendor/mqtt.esm.js", root / "node_modules/mqtt/dist/mqtt.esm.js");
    for (const auto& [served, path] : files) {
        const auto res = get(routes, "/ui/" + served);
        ASSERT_EQ(res.result(), status_code::ok) << served;
        EXPECT_EQ(res.body(), read_file(path)) << served << " differs from " << path;
        EXPECT_EQ(res[boost::beast::http::field::content_type], ui_content_type(served));
    }
    EXPECT_EQ(files.size(), ui_assets().size()) << "a file is served that is not the console's";
}

TEST(ui_api, the_root_is_the_index_page_with_a_strict_policy) {
    const auto res = get(ui_routes(), "/");
    ASSERT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(res.body(), read_file(fs::path(STARLING_UI_DIR) / "index.html"));
    EXPECT_EQ(res[boost::beast::http::field::content_type], "text/html; charset=utf-8");
    const std::string policy{res["Content-Security-Policy"]};
    EXPECT_NE(policy.find("default-src 'self'"), std::string::npos) << policy;
    EXPECT_EQ(res["X-Content-Type-Options"], "nosniff");
    EXPECT_EQ(res[boost::beast::http::field::cache_control], "no-cache");
}

TEST(ui_api, an_unchanged_file_is_not_sent_again) {
    const auto routes = ui_routes();
    const auto first = get(routes, "/ui/app.js");
    ASSERT_EQ(first.result(), status_code::ok);
    const std::string etag{first[boost::beast::http::field::etag]};
    ASSERT_FALSE(etag.empty());
    const auto again = get(routes, "/ui/app.js", etag);
    EXPECT_EQ(again.result(), status_code::not_modified);
    EXPECT_TRUE(again.body().empty());
    EXPECT_EQ(get(routes, "/ui/app.js", "\"stale\"").result(), status_code::ok);
    EXPECT_NE(std::string(get(routes, "/ui/style.css")[boost::beast::http::field::etag]), etag)
        << "two different files share an ETag";
}

TEST(ui_api, nothing_outside_ui_is_reachable) {
    const auto routes = ui_routes();
    for (const char* target :
         {"/ui/../CMakeLists.txt", "/ui/%2e%2e/CMakeLists.txt", "/ui/", "/ui//index.html",
          "/ui/missing.js", "/ui/README.md", "/ui/package.json",
          "/ui/node_modules/mqtt/package.json", "/index.html"}) {
        EXPECT_EQ(get(routes, target).result(), status_code::not_found) << target;
    }
    EXPECT_EQ(get(routes, "/ui/app.js?v=1").result(), status_code::ok) << "a query string";
}

TEST(ui_api, not_served_where_the_api_is_not) {
    router routes;
    add_ui_routes(routes, "");
    EXPECT_EQ(get(routes, "/").result(), status_code::not_found);
    EXPECT_EQ(get(routes, "/ui/app.js").result(), status_code::not_found);
}

TEST(ui_api, content_types_by_extension) {
    EXPECT_EQ(ui_content_type("pages/login.js"), "text/javascript; charset=utf-8");
    EXPECT_EQ(ui_content_type("style.css"), "text/css; charset=utf-8");
    EXPECT_EQ(ui_content_type("logo.svg"), "image/svg+xml");
    EXPECT_EQ(ui_content_type("blob"), "application/octet-stream");
}

}  // namespace
}  // namespace starling::http
