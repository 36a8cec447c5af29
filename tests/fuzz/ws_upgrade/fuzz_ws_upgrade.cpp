// libFuzzer target for the WebSocket upgrade request the ws/wss listeners judge before any MQTT
// byte (net/ws_transport.h, judge_upgrade_request): Beast's request parser with the handshake's
// header limit, then the upgrade, path and subprotocol checks.
//
// Input: the bytes a client sends after connecting (and after TLS, for wss).
//
// Properties checked (an abort is a finding):
//   1. no crash, leak, hang or sanitizer report on any input (the header limit bounds the work);
//   2. an accepted request echoes a subprotocol that is configured and that the client offered;
//   3. a refusal carries 400 or 404 and a reason;
//   4. judging is deterministic (the same bytes twice give the same verdict).

#include "net/ws_transport.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_ws_upgrade invariant violated: %s\n", what);
        std::abort();
    }
}

const starling::net::ws_options& options() {
    static const starling::net::ws_options o = [] {
        starling::net::ws_options x;
        x.sub_protocols = {"mqttv3.1", "mqtt"};
        return x;
    }();
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const auto verdict = starling::net::judge_upgrade_request(bytes, options());
    const auto again = starling::net::judge_upgrade_request(bytes, options());
    check(verdict.has_value() == again.has_value(), "deterministic: parsed");
    if (!verdict) {
        return 0;
    }
    check(verdict->accepted == again->accepted && verdict->status == again->status &&
              verdict->protocol == again->protocol,
          "deterministic: verdict");
    if (verdict->accepted) {
        check(verdict->status == 101, "accepted is 101");
        check(verdict->protocol == "mqtt" || verdict->protocol == "mqttv3.1",
              "echoed subprotocol is configured");
        check(bytes.find(verdict->protocol) != std::string_view::npos,
              "echoed subprotocol was offered");
    } else {
        check(verdict->status == 400 || verdict->status == 404, "refusal status");
        check(!verdict->why.empty(), "refusal has a reason");
    }
    return 0;
}
