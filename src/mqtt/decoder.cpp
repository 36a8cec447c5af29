#include "mqtt/decoder.h"

#include "base/assert.h"
#include "mqtt/packet/codec.h"

#include <algorithm>
#include <cstring>

namespace starling::mqtt {

namespace {

// The most User Properties in one property list of `p` (a CONNECT's will is its own list).
std::size_t user_property_count(const packet& p) {
    return std::visit(
        [](const auto& pk) -> std::size_t {
            using T = std::decay_t<decltype(pk)>;
            if constexpr (requires { pk.properties.user_properties; }) {
                std::size_t n = pk.properties.user_properties.size();
                if constexpr (std::is_same_v<T, connect>) {
                    if (pk.will) {
                        n = std::max(n, pk.will->properties.user_properties.size());
                    }
                }
                return n;
            } else {
                return 0;
            }
        },
        p);
}

constexpr std::size_t min_buffer = 512;
constexpr std::size_t max_prefetch = 1 << 20;

// Which packet types each side may receive (MQTT 5.0 section 2.1.2, "Direction of flow").
bool legal_direction(decoder_role role, packet_type type, protocol_version version) noexcept {
    switch (type) {
        case packet_type::connect:
        case packet_type::subscribe:
        case packet_type::unsubscribe:
        case packet_type::pingreq:
            return role == decoder_role::server;
        case packet_type::connack:
        case packet_type::suback:
        case packet_type::unsuback:
        case packet_type::pingresp:
            return role == decoder_role::client;
        case packet_type::disconnect:
            // Before v5 only the client sends DISCONNECT.
            return role == decoder_role::server || is_v5(version);
        default:
            return true;
    }
}

}  // namespace

struct decoder::state {
    decoder_limits limits;
    decoder_role role;
    std::optional<mqtt::protocol_version> version;
    bool connect_seen = false;
    bool failed = false;
    decode_error error;

    // Receive buffer: unconsumed bytes are [begin, end), free space [end, capacity).
    std::unique_ptr<std::uint8_t[]> buffer;
    std::size_t capacity = 0;
    std::size_t begin = 0;
    std::size_t end = 0;
    // Size of the packet being received when only part of it is buffered, so prepare() can
    // make room for all of it at once.
    std::size_t expected = 0;

    decode_result fail(reason_code code, std::string_view type_name, std::string_view detail) {
        failed = true;
        error.code = code;
        error.detail.clear();
        error.detail.reserve(type_name.size() + 2 + detail.size());
        error.detail.append(type_name).append(": ").append(detail);
        begin = end = 0;
        expected = 0;
        return error;
    }

    // Decodes the body as a T straight into the result (no move of the packet afterwards) and
    // consumes it, or turns the result into the error.
    template <class T, class Decode>
    decode_result finish(detail::reader& r, const detail::decode_context& ctx, std::size_t total,
                         std::string_view type_name, Decode&& decode) {
        decode_result result{std::in_place_type<packet>, std::in_place_type<T>};
        if (decode(r, ctx, std::get<T>(std::get<packet>(result)))) {
            consume(total);
        } else {
            result = fail(r.error_code(), type_name, r.error_detail());
        }
        return result;
    }

    void consume(std::size_t size) noexcept {
        begin += size;
        if (begin == end) {
            begin = end = 0;
        }
    }
};

decoder::decoder(decoder_limits limits, decoder_role role) : state_(std::make_unique<state>()) {
    state_->limits = limits;
    state_->role = role;
}

decoder::~decoder() = default;
decoder::decoder(decoder&&) noexcept = default;
decoder& decoder::operator=(decoder&&) noexcept = default;

std::span<std::uint8_t> decoder::prepare(std::size_t min_size) {
    state& s = *state_;
    const std::size_t used = s.end - s.begin;
    std::size_t required = min_size;
    if (s.expected > used) {
        // Room for the rest of the pending packet, but never more than max_prefetch ahead of
        // the bytes that actually arrived: a peer announcing a huge packet must send it before
        // it gets the memory.
        required = std::max(required, std::min(s.expected - used, max_prefetch));
    }
    if (s.capacity - s.end < required && s.begin > 0) {
        std::memmove(s.buffer.get(), s.buffer.get() + s.begin, used);
        s.begin = 0;
        s.end = used;
    }
    if (s.capacity - s.end < required) {
        std::size_t capacity = std::max({s.capacity * 2, used + required, min_buffer});
        auto buffer = std::make_unique_for_overwrite<std::uint8_t[]>(capacity);
        if (used > 0) {
            std::memcpy(buffer.get(), s.buffer.get() + s.begin, used);
        }
        s.buffer = std::move(buffer);
        s.capacity = capacity;
        s.begin = 0;
        s.end = used;
    }
    return {s.buffer.get() + s.end, s.capacity - s.end};
}

void decoder::commit(std::size_t size) {
    state& s = *state_;
    STARLING_ASSERT(size <= s.capacity - s.end);
    if (s.failed) {
        return;  // bytes after an error are discarded
    }
    s.end += size;
}

void decoder::feed(std::span<const std::uint8_t> bytes) {
    if (state_->failed || bytes.empty()) {
        return;
    }
    std::span<std::uint8_t> region = prepare(bytes.size());
    std::memcpy(region.data(), bytes.data(), bytes.size());
    commit(bytes.size());
}

void decoder::feed(std::string_view bytes) {
    feed(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                       bytes.size()));
}

decode_result decoder::next() {
    state& s = *state_;
    if (s.failed) {
        return s.error;
    }
    const std::size_t available = s.end - s.begin;
    if (available < 2) {
        return need_more{};
    }
    const std::uint8_t* p = s.buffer.get() + s.begin;

    // Fixed header: type and flags, then Remaining Length in at most four bytes.
    std::uint32_t remaining = 0;
    std::size_t header_size = 0;
    bool non_minimal = false;
    for (std::size_t i = 1; i <= 4; ++i) {
        if (i >= available) {
            return need_more{};
        }
        const std::uint8_t byte = p[i];
        remaining |= std::uint32_t{byte & 0x7Fu} << (7 * (i - 1));
        if ((byte & 0x80) == 0) {
            header_size = i + 1;
            non_minimal = byte == 0 && i > 1;
            break;
        }
    }
    const auto raw_type = static_cast<std::uint8_t>(p[0] >> 4);
    const auto flags = static_cast<std::uint8_t>(p[0] & 0x0F);
    const auto type = static_cast<packet_type>(raw_type);
    const std::string_view type_name = raw_type == 0 ? "RESERVED" : to_string(type);
    if (header_size == 0) {
        return s.fail(reason_code::malformed_packet, type_name,
                      "remaining length longer than 4 bytes");
    }
    if (raw_type == 0) {
        return s.fail(reason_code::malformed_packet, type_name, "reserved packet type 0");
    }

    // Checks that need only the fixed header come before the body is buffered.
    if (s.role == decoder_role::server) {
        if (!s.connect_seen && type != packet_type::connect) {
            return s.fail(reason_code::protocol_error, type_name,
                          "first packet is not CONNECT");  // MQTT-3.1.0-1
        }
        if (s.connect_seen && type == packet_type::connect) {
            return s.fail(reason_code::protocol_error, type_name,
                          "second CONNECT");  // MQTT-3.1.0-2
        }
    } else if (!s.version) {
        return s.fail(reason_code::implementation_specific_error, type_name,
                      "client-role decoder used before set_protocol_version");
    }
    // Unknown (and unused) before CONNECT has been decoded.
    const protocol_version version = s.version.value_or(protocol_version::v5);
    if (type == packet_type::auth && !is_v5(version)) {
        return s.fail(reason_code::malformed_packet, type_name, "reserved packet type 15");
    }
    if (!legal_direction(s.role, type, version)) {
        return s.fail(reason_code::protocol_error, type_name,
                      s.role == decoder_role::server ? "packet type never sent by a client"
                                                     : "packet type never sent by a server");
    }
    if (type != packet_type::publish && type != packet_type::connect) {
        std::uint8_t actual = flags;
        if (version == protocol_version::v3_1 && detail::required_flags(type) != 0) {
            // 3.1 let PUBREL, SUBSCRIBE and UNSUBSCRIBE carry DUP on retransmission.
            actual &= 0x07;
        }
        if (actual != detail::required_flags(type)) {
            return s.fail(reason_code::malformed_packet, type_name, "reserved fixed-header flags");
        }
    }
    if (non_minimal && s.version && is_v5(*s.version)) {
        return s.fail(reason_code::malformed_packet, type_name,
                      "remaining length not minimally encoded");  // MQTT-1.5.5-1
    }
    const std::size_t total = header_size + remaining;
    if (total > s.limits.max_packet_size) {
        return s.fail(reason_code::packet_too_large, type_name,
                      "packet larger than the maximum packet size");
    }
    if (available < total) {
        s.expected = total;
        return need_more{};
    }
    s.expected = 0;

    detail::reader r(p + header_size, remaining);
    const detail::decode_context ctx{version, s.role, flags, s.limits.validate_payload_format};
    decode_result result = [&]() -> decode_result {
        switch (type) {
            case packet_type::connect:
                return s.finish<connect>(
                    r, ctx, total, type_name,
                    [&s, non_minimal](detail::reader& rd, const detail::decode_context& c,
                                      connect& out) {
                        std::optional<protocol_version> detected;
                        bool ok = detail::decode_connect(rd, c, out, detected);
                        if (detected) {
                            // Known even when the rest failed: the caller answers with a CONNACK
                            // of this version.
                            s.version = detected;
                            if (ok && non_minimal && is_v5(*detected)) {
                                ok = rd.fail(reason_code::malformed_packet,
                                             "remaining length not minimally encoded");
                            }
                        }
                        s.connect_seen = ok;
                        return ok;
                    });
            case packet_type::connack:
                return s.finish<connack>(r, ctx, total, type_name, detail::decode_connack);
            case packet_type::publish:
                return s.finish<publish>(r, ctx, total, type_name, detail::decode_publish);
            case packet_type::puback:
                return s.finish<puback>(r, ctx, total, type_name, detail::decode_puback);
            case packet_type::pubrec:
                return s.finish<pubrec>(r, ctx, total, type_name, detail::decode_pubrec);
            case packet_type::pubrel:
                return s.finish<pubrel>(r, ctx, total, type_name, detail::decode_pubrel);
            case packet_type::pubcomp:
                return s.finish<pubcomp>(r, ctx, total, type_name, detail::decode_pubcomp);
            case packet_type::subscribe:
                return s.finish<subscribe>(r, ctx, total, type_name, detail::decode_subscribe);
            case packet_type::suback:
                return s.finish<suback>(r, ctx, total, type_name, detail::decode_suback);
            case packet_type::unsubscribe:
                return s.finish<unsubscribe>(r, ctx, total, type_name, detail::decode_unsubscribe);
            case packet_type::unsuback:
                return s.finish<unsuback>(r, ctx, total, type_name, detail::decode_unsuback);
            case packet_type::pingreq:
                return s.finish<pingreq>(r, ctx, total, type_name, detail::decode_pingreq);
            case packet_type::pingresp:
                return s.finish<pingresp>(r, ctx, total, type_name, detail::decode_pingresp);
            case packet_type::disconnect:
                return s.finish<disconnect>(r, ctx, total, type_name, detail::decode_disconnect);
            case packet_type::auth:
                return s.finish<auth>(r, ctx, total, type_name, detail::decode_auth);
        }
        return s.fail(reason_code::malformed_packet, type_name, "unknown packet type");
    }();
    if (const auto* decoded = std::get_if<packet>(&result);
        decoded != nullptr && s.limits.max_user_properties != 0 &&
        user_property_count(*decoded) > s.limits.max_user_properties) {
        return s.fail(reason_code::implementation_specific_error, type_name,
                      "more user properties than this server accepts");
    }
    return result;
}

void decoder::set_protocol_version(mqtt::protocol_version version) noexcept {
    state_->version = version;
}

std::optional<mqtt::protocol_version> decoder::version() const noexcept { return state_->version; }

void decoder::set_max_packet_size(std::uint32_t size) noexcept {
    state_->limits.max_packet_size = size;
}

decoder_role decoder::role() const noexcept { return state_->role; }

bool decoder::failed() const noexcept { return state_->failed; }

std::size_t decoder::buffered() const noexcept { return state_->end - state_->begin; }

void decoder::shrink() noexcept {
    state& s = *state_;
    if (s.begin == s.end) {
        s.buffer.reset();
        s.capacity = 0;
        s.begin = s.end = 0;
    }
}

}  // namespace starling::mqtt
