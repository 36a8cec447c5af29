// libFuzzer target for the PROXY protocol v1/v2 parser (net/proxy_protocol.h).
//
// Input: one mode byte, then the first bytes of a connection as a peer would send them.
//   bits 0-3  chunk size - 1 for the incremental run (1..16 bytes per feed)
//   bit 4     feed an empty span between chunks (must change nothing)
//
// Properties checked (an abort is a finding):
//   1. no crash, leak or sanitizer report on any input;
//   2. feeding the stream whole and in small chunks gives the same outcome: the same header,
//      or the same error code and detail, or need_more, and the same header size;
//   3. consumed() never exceeds the span fed; on a header, whole-feed consumed() equals
//      header_size(), and the header is never larger than the spec's limits (v1 107 bytes,
//      v2 16 + address block + 4 KiB of TLVs);
//   4. a header is either LOCAL with no addresses, or has both addresses or neither, each in
//      "ip:port" / "[ipv6]:port" form.

#include "net/proxy_protocol.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <variant>

namespace {

using namespace starling::net::proxy_protocol;

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_proxy_protocol invariant violated: %s\n", what);
        std::abort();
    }
}

struct outcome {
    std::optional<header> parsed;
    std::error_code error;
    std::string detail;
    std::size_t header_size = 0;
    std::size_t consumed_total = 0;
};

outcome run(std::span<const std::uint8_t> stream, std::size_t chunk, bool empty_feeds) {
    parser p;
    outcome out;
    for (std::size_t offset = 0; offset < stream.size(); offset += chunk) {
        const std::size_t n = std::min(chunk, stream.size() - offset);
        if (empty_feeds) {
            auto r = p.feed({});
            check(std::holds_alternative<parser::need_more>(r), "empty feed changed the outcome");
            check(p.consumed() == 0, "empty feed consumed bytes");
        }
        auto r = p.feed(stream.subspan(offset, n));
        check(p.consumed() <= n, "consumed more than was fed");
        out.consumed_total += p.consumed();
        if (auto* h = std::get_if<header>(&r)) {
            out.parsed = *h;
            out.header_size = p.header_size();
            check(out.header_size == out.consumed_total, "header size differs from bytes consumed");
            break;
        }
        if (auto* e = std::get_if<std::error_code>(&r)) {
            out.error = *e;
            out.detail = p.detail();
            check(!out.detail.empty(), "an error without a detail");
            auto again = p.feed(stream);
            check(std::holds_alternative<std::error_code>(again) &&
                      std::get<std::error_code>(again) == *e && p.consumed() == 0,
                  "error is not sticky");
            break;
        }
        check(p.consumed() == n, "need_more without taking every byte");
    }
    return out;
}

bool well_formed_address(const std::string& a) {
    const std::size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon + 1 == a.size()) {
        return false;
    }
    if (a.front() == '[') {
        return colon >= 2 && a[colon - 1] == ']';
    }
    return a.find(':') == colon;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t chunk = static_cast<std::size_t>((data[0] & 0x0F) + 1);
    const bool empty_feeds = (data[0] & 0x10) != 0;
    const std::span<const std::uint8_t> stream(data + 1, size - 1);

    const outcome whole = run(stream, std::max<std::size_t>(stream.size(), 1), false);
    const outcome chunked = run(stream, chunk, empty_feeds);

    check(whole.parsed == chunked.parsed, "chunked feeding gives a different header");
    check(whole.error == chunked.error, "chunked feeding gives a different error");
    check(whole.detail == chunked.detail, "chunked feeding gives a different error detail");
    check(whole.header_size == chunked.header_size, "chunked feeding gives a different size");

    if (whole.parsed) {
        check(whole.header_size <= std::max(max_v1_header_size, max_v2_header_size),
              "header larger than the limits");
        if (stream[0] == 'P') {
            check(whole.header_size <= max_v1_header_size, "v1 header over 107 bytes");
        }
        const header& h = *whole.parsed;
        check(!h.local || (h.source_address.empty() && h.destination_address.empty()),
              "LOCAL header with addresses");
        check(h.source_address.empty() == h.destination_address.empty(),
              "only one of the two addresses");
        if (!h.source_address.empty()) {
            check(well_formed_address(h.source_address), "malformed source address text");
            check(well_formed_address(h.destination_address), "malformed destination address text");
        }
    }
    return 0;
}
