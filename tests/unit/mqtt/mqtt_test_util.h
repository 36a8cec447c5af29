#pragma once

// Helpers for the codec tests: building wire bytes by hand and running them through a decoder
// in the right role and version.

#include "mqtt/decoder.h"
#include "mqtt/encoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

// GCC 12 warns about members left out of a designated initializer even when they have default
// member initializers (GCC bug 96868); the tests use designated initializers throughout.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace starling::mqtt::test {

inline const std::vector<protocol_version> all_versions = {
    protocol_version::v3_1, protocol_version::v3_1_1, protocol_version::v5};

// Bytes from integers: wire({0x30, 0x02, ...}).
inline std::string wire(std::initializer_list<int> values) {
    std::string out;
    for (int v : values) {
        out.push_back(static_cast<char>(v));
    }
    return out;
}

inline std::string u16(std::uint16_t v) { return wire({v >> 8, v & 0xFF}); }

inline std::string u32(std::uint32_t v) {
    return wire({static_cast<int>(v >> 24), static_cast<int>((v >> 16) & 0xFF),
                 static_cast<int>((v >> 8) & 0xFF), static_cast<int>(v & 0xFF)});
}

inline std::string varint(std::uint32_t v) {
    std::string out;
    do {
        auto byte = static_cast<std::uint8_t>(v & 0x7F);
        v >>= 7;
        if (v != 0) {
            byte |= 0x80;
        }
        out.push_back(static_cast<char>(byte));
    } while (v != 0);
    return out;
}

// A length-prefixed string.
inline std::string str(std::string_view s) {
    return u16(static_cast<std::uint16_t>(s.size())) + std::string(s);
}

// A property list with its length prefix.
inline std::string props(std::string_view encoded = {}) {
    return varint(static_cast<std::uint32_t>(encoded.size())) + std::string(encoded);
}

// A whole packet: first byte, remaining length, body.
inline std::string frame(int first_byte, std::string_view body) {
    return wire({first_byte}) + varint(static_cast<std::uint32_t>(body.size())) + std::string(body);
}

// A minimal valid CONNECT (client id "c", clean start) at the version.
inline std::string connect_bytes(protocol_version v) {
    std::string body = v == protocol_version::v3_1 ? str("MQIsdp") : str("MQTT");
    body += wire({static_cast<int>(v), 0x02});
    body += u16(60);
    if (v == protocol_version::v5) {
        body += props();
    }
    body += str("c");
    return frame(0x10, body);
}

// A server-role decoder that has already accepted a CONNECT at the version.
inline decoder server_after_connect(protocol_version v, decoder_limits limits = {}) {
    decoder d(limits, decoder_role::server);
    d.feed(connect_bytes(v));
    auto r = d.next();
    EXPECT_TRUE(std::holds_alternative<packet>(r)) << "setup CONNECT failed";
    return d;
}

inline decoder client_at(protocol_version v, decoder_limits limits = {}) {
    decoder d(limits, decoder_role::client);
    d.set_protocol_version(v);
    return d;
}

// Decodes exactly one packet (after CONNECT for a server).
inline decode_result decode_server(protocol_version v, std::string_view bytes) {
    decoder d = server_after_connect(v);
    d.feed(bytes);
    return d.next();
}

inline decode_result decode_client(protocol_version v, std::string_view bytes) {
    decoder d = client_at(v);
    d.feed(bytes);
    return d.next();
}

// Decodes a CONNECT as the first packet.
inline decode_result decode_first(std::string_view bytes) {
    decoder d;
    d.feed(bytes);
    return d.next();
}

// The error's reason code; success (and a test failure) when it is not an error.
inline reason_code error_code(const decode_result& r) {
    if (const auto* e = std::get_if<decode_error>(&r)) {
        return e->code;
    }
    ADD_FAILURE() << (std::holds_alternative<need_more>(r) ? "need_more" : "a packet")
                  << " instead of an error";
    return reason_code::success;
}

inline std::string error_detail(const decode_result& r) {
    if (const auto* e = std::get_if<decode_error>(&r)) {
        return e->detail;
    }
    return {};
}

template <class T>
const T* packet_as(const decode_result& r) {
    const auto* p = std::get_if<packet>(&r);
    if (p == nullptr) {
        ADD_FAILURE() << "no packet: " << error_detail(r);
        return nullptr;
    }
    const auto* t = std::get_if<T>(p);
    if (t == nullptr) {
        ADD_FAILURE() << "decoded " << to_string(type_of(*p)) << " instead";
    }
    return t;
}

template <class T>
std::string encoded(const T& p, protocol_version v) {
    std::string out;
    encode(p, v, out);
    return out;
}

enum class receiver { server, client };

// Encodes, checks encoded_size, decodes in the given role and returns the decoded packet.
template <class T>
T round_trip(const T& p, protocol_version v, receiver who) {
    std::string bytes;
    bytes.reserve(7);
    bytes += "abc";  // encode appends: prior content stays
    encode(p, v, bytes);
    EXPECT_EQ(bytes.substr(0, 3), "abc");
    bytes.erase(0, 3);
    EXPECT_EQ(bytes.size(), encoded_size(packet{p}, v));
    decode_result r = who == receiver::server ? decode_server(v, bytes) : decode_client(v, bytes);
    const T* out = packet_as<T>(r);
    return out != nullptr ? *out : T{};
}

}  // namespace starling::mqtt::test
