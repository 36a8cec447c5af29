#pragma once

// The HTTP route table: which handler answers which method and path.
//
// A path is matched exactly ("/actuator/health") or, when it ends in "/*", as a prefix
// ("/api/*" answers "/api/users/1"); an exact route beats a prefix one, a longer prefix a
// shorter one. The query string is not part of the match. A path nobody serves gets 404; a
// path served for other methods gets 405 with an Allow header.
//
// Handlers come in two forms. A plain handler returns its response and runs on the
// connection's I/O thread, so it must not block. An async handler receives a responder it
// must call exactly once, from any thread, possibly later: use it for anything that waits
// (a database, the message log).
//
// Lifecycle: filled by the composition root, then moved into http::server; from then on it
// is read-only and shared by all connections, so it needs no lock.

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::http {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;
using status_code = boost::beast::http::status;
using boost::beast::http::verb;

// Delivers the response; call exactly once, from any thread.
using responder = std::function<void(response)>;
using handler = std::function<response(const request&)>;
using async_handler = std::function<void(const request&, responder)>;

// A response with a body and its Content-Type; the server fills in version, keep-alive and
// Content-Length.
response make_response(status_code code, std::string_view content_type, std::string body);

// The body of an error response: {"status":404,"message":"..."} (the shape of TBMQ's REST
// errors).
response error_response(status_code code, std::string_view message);

class router {
  public:
    void add(verb method, std::string path, handler fn);
    void add_async(verb method, std::string path, async_handler fn);

    // Answers one request: runs the matching handler, or responds 404/405 itself. A handler
    // that throws gets a 500.
    void dispatch(const request& req, const responder& respond) const;

  private:
    struct route {
        verb method;
        std::string path;  // without the trailing "*" for prefix routes
        bool prefix;
        async_handler fn;
    };

    std::vector<route> routes_;
};

}  // namespace starling::http
