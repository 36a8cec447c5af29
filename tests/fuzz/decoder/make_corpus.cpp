// Writes the seed corpus of fuzz_decoder: valid sessions at every version in both roles,
// encoded by the encoder, and hand-made malformed packets, each behind a mode byte (see
// fuzz_decoder.cpp). Usage: fuzz_decoder_make_corpus <corpus-dir>

#include "mqtt/encoder.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace starling::mqtt;

constexpr int server = 0x00;
constexpr int client = 0x01;

int version_bits(protocol_version v) {
    switch (v) {
        case protocol_version::v3_1:
            return 0 << 1;
        case protocol_version::v3_1_1:
            return 1 << 1;
        case protocol_version::v5:
            return 2 << 1;
    }
    return 0;
}

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int v : values) {
        out.push_back(static_cast<char>(v));
    }
    return out;
}

std::string connect_packet(protocol_version v, bool full) {
    connect c;
    c.protocol_version = v;
    c.client_id = "seed-client";
    c.keep_alive = 30;
    if (full) {
        c.clean_start = false;
        c.username = "user";
        c.password = "pass";
        c.will = will_message{"will/topic", "offline", qos::at_least_once, true, {}};
        if (is_v5(v)) {
            c.properties.session_expiry_interval = 3600;
            c.properties.receive_maximum = 10;
            c.properties.maximum_packet_size = 65536;
            c.properties.topic_alias_maximum = 8;
            c.properties.request_problem_information = 1;
            c.properties.user_properties = {{"k", "v"}};
            c.properties.authentication_method = "PLAIN";
            c.properties.authentication_data = "abc";
            c.will->properties.will_delay_interval = 5;
            c.will->properties.payload_format_indicator = 1;
            c.will->properties.content_type = "text/plain";
            c.will->properties.response_topic = "resp";
            c.will->properties.correlation_data = "cd";
            c.will->properties.message_expiry_interval = 60;
        }
    }
    std::string out;
    encode(c, v, out);
    return out;
}

publish sample_publish(protocol_version v, qos q, bool props) {
    publish p;
    p.topic = "sensors/1/temperature";
    p.payload = "21.5";
    p.qos = q;
    p.packet_id = q == qos::at_most_once ? 0 : 42;
    p.retain = q == qos::exactly_once;
    if (props && is_v5(v)) {
        p.properties.payload_format_indicator = 1;
        p.properties.message_expiry_interval = 10;
        p.properties.topic_alias = 1;
        p.properties.response_topic = "reply";
        p.properties.correlation_data = "x";
        p.properties.content_type = "text/plain";
        p.properties.user_properties = {{"a", "b"}, {"a", "c"}};
    }
    return p;
}

std::string client_session(protocol_version v) {
    std::string out = connect_packet(v, true);
    for (qos q : {qos::at_most_once, qos::at_least_once, qos::exactly_once}) {
        encode(sample_publish(v, q, true), v, out);
    }
    encode(puback{.packet_id = 1}, v, out);
    encode(pubrec{.packet_id = 2}, v, out);
    encode(pubrel{.packet_id = 3}, v, out);
    encode(pubcomp{.packet_id = 4}, v, out);
    subscribe s{.packet_id = 5};
    s.subscriptions = {{"a/+/c", {.qos = qos::at_least_once}},
                       {"$share/group/x/#", {.qos = qos::exactly_once}},
                       {"#", {}}};
    if (is_v5(v)) {
        s.subscriptions[0].options.no_local = true;
        s.subscriptions[0].options.retain_handling = retain_handling::do_not_send;
        s.properties.subscription_identifiers = {7};
    }
    encode(s, v, out);
    encode(unsubscribe{.packet_id = 6, .filters = {"a/+/c", "#"}}, v, out);
    encode(pingreq{}, v, out);
    if (is_v5(v)) {
        auth a{.reason_code = reason_code::continue_authentication};
        a.properties.authentication_method = "PLAIN";
        a.properties.authentication_data = "more";
        encode(a, v, out);
    }
    disconnect d;
    if (is_v5(v)) {
        d.reason_code = reason_code::disconnect_with_will_message;
        d.properties.reason_string = "bye";
        d.properties.session_expiry_interval = 0;
    }
    encode(d, v, out);
    return out;
}

std::string server_session(protocol_version v) {
    std::string out;
    connack ca{.session_present = v != protocol_version::v3_1};
    if (is_v5(v)) {
        ca.properties.assigned_client_identifier = "auto";
        ca.properties.server_keep_alive = 60;
        ca.properties.maximum_qos = 1;
        ca.properties.retain_available = 1;
        ca.properties.shared_subscription_available = 1;
        ca.properties.topic_alias_maximum = 10;
    }
    encode(ca, v, out);
    publish p = sample_publish(v, qos::at_least_once, true);
    if (is_v5(v)) {
        p.properties.subscription_identifiers = {7, 1000};
    }
    encode(p, v, out);
    encode(puback{.packet_id = 1, .reason_code = reason_code::no_matching_subscribers}, v, out);
    encode(suback{.packet_id = 5,
                  .reason_codes = {reason_code::granted_qos_1, reason_code::granted_qos_2,
                                   reason_code::not_authorized}},
           v, out);
    encode(unsuback{.packet_id = 6,
                    .reason_codes = {reason_code::success, reason_code::no_subscription_existed}},
           v, out);
    encode(pingresp{}, v, out);
    if (is_v5(v)) {
        disconnect d{.reason_code = reason_code::server_shutting_down};
        d.properties.server_reference = "other:1883";
        encode(d, v, out);
    }
    return out;
}

struct seed {
    std::string name;
    std::string data;
};

std::vector<seed> seeds() {
    std::vector<seed> out;
    auto add = [&](std::string name, int mode, const std::string& stream) {
        out.push_back({std::move(name), std::string(1, static_cast<char>(mode)) + stream});
    };
    const std::pair<protocol_version, const char*> versions[] = {
        {protocol_version::v3_1, "v3_1"},
        {protocol_version::v3_1_1, "v3_1_1"},
        {protocol_version::v5, "v5"}};
    for (auto [v, tag] : versions) {
        std::string t = tag;
        add(t + "_client_session", server, client_session(v));
        add(t + "_client_session_chunk3", server | (2 << 3), client_session(v));
        add(t + "_client_session_zero_copy", server | (15 << 3) | 0x80, client_session(v));
        add(t + "_server_session", client | version_bits(v), server_session(v));
        add(t + "_server_session_chunk5", client | version_bits(v) | (4 << 3), server_session(v));
        add(t + "_connect_minimal", server, connect_packet(v, false));
        std::string pub = connect_packet(v, false);
        encode(sample_publish(v, qos::exactly_once, false), v, pub);
        add(t + "_publish_qos2", server, pub);
    }

    // Malformed, each after a valid CONNECT (server role) unless noted.
    const std::string c311 = connect_packet(protocol_version::v3_1_1, false);
    const std::string c5 = connect_packet(protocol_version::v5, false);
    add("bad_first_packet_not_connect", server, bytes({0xC0, 0x00}));
    add("bad_second_connect", server, c5 + c5);
    add("bad_protocol_name", server,
        bytes({0x10, 0x0D, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 0, 0, 1, 'c'}));
    add("bad_protocol_level", server,
        bytes({0x10, 0x0D, 0, 4, 'M', 'Q', 'T', 'T', 9, 2, 0, 0, 0, 1, 'c'}));
    add("bad_connect_reserved_flag", server,
        bytes({0x10, 0x0D, 0, 4, 'M', 'Q', 'T', 'T', 4, 3, 0, 0, 0, 1, 'c'}));
    add("bad_will_qos3", server,
        bytes({0x10, 0x0D, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x1E, 0, 0, 0, 1, 'c'}));
    add("bad_password_without_username", server,
        bytes({0x10, 0x0F, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x42, 0, 0, 0, 1, 'c', 0, 0}));
    add("bad_empty_client_id_persistent", server,
        bytes({0x10, 0x0C, 0, 4, 'M', 'Q', 'T', 'T', 4, 0, 0, 0, 0, 0}));
    add("bad_pubrel_flags", server, c311 + bytes({0x60, 0x02, 0x00, 0x01}));
    add("bad_publish_qos3", server, c311 + bytes({0x36, 0x05, 0, 1, 't', 0, 1}));
    add("bad_remaining_length_5_bytes", server, c311 + bytes({0x30, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}));
    add("bad_remaining_length_non_minimal_v5", server, c5 + bytes({0xC0, 0x80, 0x00}));
    add("bad_packet_type_0", server, c311 + bytes({0x00, 0x00}));
    add("bad_auth_in_v3", server, c311 + bytes({0xF0, 0x00}));
    add("bad_packet_id_0", server, c311 + bytes({0x40, 0x02, 0x00, 0x00}));
    add("bad_topic_wildcard", server, c311 + bytes({0x30, 0x05, 0, 3, 'a', '/', '#'}));
    add("bad_topic_utf8", server, c311 + bytes({0x30, 0x04, 0, 2, 0xC0, 0x80}));
    add("bad_topic_nul", server, c311 + bytes({0x30, 0x04, 0, 2, 'a', 0x00}));
    add("bad_duplicate_property", server,
        c5 + bytes({0x30, 0x0E, 0, 1, 't', 0x0A, 0x02, 0, 0, 0, 1, 0x02, 0, 0, 0, 2}));
    add("bad_topic_alias_0", server, c5 + bytes({0x30, 0x07, 0, 1, 't', 0x03, 0x23, 0, 0}));
    add("bad_unknown_property", server, c5 + bytes({0x30, 0x06, 0, 1, 't', 0x02, 0x05, 0}));
    add("bad_property_length", server, c5 + bytes({0x30, 0x05, 0, 1, 't', 0x09, 0x01}));
    add("bad_empty_subscribe", server, c311 + bytes({0x82, 0x02, 0, 1}));
    add("bad_subscribe_options", server, c311 + bytes({0x82, 0x06, 0, 1, 0, 1, 'a', 0x04}));
    add("bad_retain_handling_3", server, c5 + bytes({0x82, 0x07, 0, 1, 0, 0, 1, 'a', 0x30}));
    add("bad_filter_syntax", server, c311 + bytes({0x82, 0x08, 0, 1, 0, 3, 'a', '#', 'b', 0}));
    add("bad_shared_no_local", server,
        c5 + bytes({0x82, 0x10, 0, 1, 0, 0, 10, '$', 's', 'h', 'a', 'r', 'e', '/', 'g', '/', 'a',
                    0x04}));
    add("bad_empty_unsubscribe", server, c5 + bytes({0xA2, 0x03, 0, 1, 0}));
    add("bad_pingreq_body", server, c311 + bytes({0xC0, 0x01, 0x00}));
    add("bad_oversize_header", server, c311 + bytes({0x30, 0xFF, 0xFF, 0x7F}));
    add("bad_connack_flags", client | version_bits(protocol_version::v3_1_1),
        bytes({0x20, 0x02, 0x02, 0x00}));
    add("bad_suback_code", client | version_bits(protocol_version::v5),
        bytes({0x90, 0x04, 0, 1, 0, 0x05}));
    add("bad_disconnect_session_expiry_from_server", client | version_bits(protocol_version::v5),
        bytes({0xE0, 0x07, 0x00, 0x05, 0x11, 0, 0, 0, 1}));
    add("truncated_stream", server, c5.substr(0, c5.size() - 3));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
        return 2;
    }
    std::filesystem::path dir(argv[1]);
    std::filesystem::create_directories(dir);
    int count = 0;
    for (const seed& s : seeds()) {
        std::ofstream out(dir / ("seed_" + s.name), std::ios::binary);
        out.write(s.data.data(), static_cast<std::streamsize>(s.data.size()));
        ++count;
    }
    std::printf("wrote %d seeds to %s\n", count, dir.c_str());
    return 0;
}
