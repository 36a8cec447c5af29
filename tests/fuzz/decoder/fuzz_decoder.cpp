// libFuzzer target for the MQTT decoder.
//
// Input: one mode byte, then a byte stream as a peer would send it.
//   bit 0     role: 0 server (the stream should start with CONNECT), 1 client
//   bits 1-2  version for the client role: 0 = 3.1, 1 = 3.1.1, 2 and 3 = 5.0
//   bits 3-6  chunk size - 1 for the incremental run (1..16 bytes per read)
//   bit 7     incremental run reads through prepare()/commit() instead of feed()
//
// Properties checked (an abort is a finding):
//   1. no crash, leak or sanitizer report on any input;
//   2. decoding the stream in one piece and in small chunks gives the same packets and the
//      same error;
//   3. every decoded packet re-encodes to exactly encoded_size() bytes and decodes back to
//      itself.

#include "mqtt/decoder.h"
#include "mqtt/encoder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace {

using namespace starling::mqtt;

constexpr std::uint32_t fuzz_max_packet_size = 1 << 20;

struct mode {
    decoder_role role = decoder_role::server;
    protocol_version version = protocol_version::v5;
    std::size_t chunk = 1;
    bool zero_copy = false;
};

mode parse_mode(std::uint8_t byte) {
    mode m;
    m.role = (byte & 0x01) != 0 ? decoder_role::client : decoder_role::server;
    switch ((byte >> 1) & 0x03) {
        case 0:
            m.version = protocol_version::v3_1;
            break;
        case 1:
            m.version = protocol_version::v3_1_1;
            break;
        default:
            m.version = protocol_version::v5;
            break;
    }
    m.chunk = static_cast<std::size_t>(((byte >> 3) & 0x0F) + 1);
    m.zero_copy = (byte & 0x80) != 0;
    return m;
}

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_decoder invariant violated: %s\n", what);
        std::abort();
    }
}

struct outcome {
    std::vector<packet> packets;
    std::optional<decode_error> error;
    std::optional<protocol_version> version;
};

decoder make_decoder(const mode& m) {
    decoder d(decoder_limits{.max_packet_size = fuzz_max_packet_size}, m.role);
    if (m.role == decoder_role::client) {
        d.set_protocol_version(m.version);
    }
    return d;
}

void drain(decoder& d, outcome& out) {
    for (;;) {
        decode_result r = d.next();
        if (std::holds_alternative<need_more>(r)) {
            return;
        }
        if (auto* e = std::get_if<decode_error>(&r)) {
            out.error = *e;
            return;
        }
        out.packets.push_back(std::get<packet>(std::move(r)));
    }
}

outcome run(const mode& m, std::span<const std::uint8_t> stream, std::size_t chunk,
            bool zero_copy) {
    decoder d = make_decoder(m);
    outcome out;
    for (std::size_t offset = 0; offset < stream.size() && !out.error; offset += chunk) {
        std::size_t n = std::min(chunk, stream.size() - offset);
        if (zero_copy) {
            std::span<std::uint8_t> region = d.prepare(n);
            check(region.size() >= n, "prepare() returned a short region");
            std::memcpy(region.data(), stream.data() + offset, n);
            d.commit(n);
        } else {
            d.feed(stream.subspan(offset, n));
        }
        drain(d, out);
    }
    if (out.error) {
        // Sticky: the same error again, whatever comes next.
        d.feed(std::string_view("\xC0\x00", 2));
        decode_result again = d.next();
        auto* e = std::get_if<decode_error>(&again);
        check(e != nullptr && e->code == out.error->code && e->detail == out.error->detail,
              "error is not sticky");
    }
    out.version = d.version();
    return out;
}

// What a packet looks like after an encode/decode cycle: the encoder never writes DUP on a
// QoS 0 PUBLISH (only 3.1 accepts one).
packet normalized(packet p) {
    if (auto* pub = std::get_if<publish>(&p); pub != nullptr && pub->qos == qos::at_most_once) {
        pub->dup = false;
    }
    return p;
}

void check_round_trip(const mode& m, const outcome& out) {
    if (!out.version) {
        return;
    }
    const protocol_version v = *out.version;
    for (const packet& p : out.packets) {
        std::string bytes;
        decoder d(decoder_limits{}, m.role);
        const bool is_connect = std::holds_alternative<connect>(p);
        if (m.role == decoder_role::client) {
            d.set_protocol_version(v);
        } else if (!is_connect) {
            connect c;
            c.protocol_version = v;
            c.client_id = "fuzz";
            encode(c, v, bytes);
        }
        const std::size_t prefix = bytes.size();
        encode(p, v, bytes);
        check(bytes.size() - prefix == encoded_size(p, v), "encoded_size() differs from encode()");
        d.feed(bytes);
        if (prefix != 0) {
            check(std::holds_alternative<packet>(d.next()), "CONNECT prefix did not decode");
        }
        decode_result r = d.next();
        auto* back = std::get_if<packet>(&r);
        if (back == nullptr) {
            auto* e = std::get_if<decode_error>(&r);
            std::fprintf(stderr, "re-decoding failed: %s\n", e != nullptr ? e->detail.c_str() : "");
        }
        check(back != nullptr, "re-encoded packet does not decode");
        check(*back == normalized(p), "re-encoded packet decodes to something else");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const mode m = parse_mode(data[0]);
    const std::span<const std::uint8_t> stream(data + 1, size - 1);

    const outcome whole = run(m, stream, std::max<std::size_t>(stream.size(), 1), false);
    const outcome chunked = run(m, stream, m.chunk, m.zero_copy);
    check(whole.packets == chunked.packets, "chunked decoding gives different packets");
    check(whole.error.has_value() == chunked.error.has_value(),
          "chunked decoding fails differently");
    if (whole.error) {
        check(whole.error->code == chunked.error->code &&
                  whole.error->detail == chunked.error->detail,
              "chunked decoding gives a different error");
    }
    check_round_trip(m, whole);
    return 0;
}
