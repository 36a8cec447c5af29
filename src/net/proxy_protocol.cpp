#include "net/proxy_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace starling::net::proxy_protocol {
namespace {

class category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.net.proxy_protocol"; }
    std::string message(int value) const override {
        switch (static_cast<parse_error>(value)) {
            case parse_error::not_proxy_protocol:
                return "connection did not start with a PROXY protocol header";
            case parse_error::malformed:
                return "malformed PROXY protocol header";
            case parse_error::too_long:
                return "PROXY protocol header over its size limit";
            case parse_error::unsupported:
                return "unsupported PROXY protocol version, command, family or protocol";
        }
        return "unknown PROXY protocol error";
    }
};

constexpr std::string_view v1_prefix = "PROXY ";

// v2 fixed-part fields (spec section 2.2).
constexpr std::uint8_t command_local = 0x0;
constexpr std::uint8_t command_proxy = 0x1;
constexpr std::uint8_t family_unspec = 0x0;
constexpr std::uint8_t family_inet = 0x1;
constexpr std::uint8_t family_inet6 = 0x2;
constexpr std::uint8_t family_unix = 0x3;
constexpr std::uint8_t transport_unspec = 0x0;
constexpr std::uint8_t transport_stream = 0x1;
constexpr std::uint8_t transport_dgram = 0x2;

std::size_t address_block_size(std::uint8_t family) {
    switch (family) {
        case family_inet:
            return 12;
        case family_inet6:
            return 36;
        case family_unix:
            return 216;
        default:
            return 0;
    }
}

std::string format_v4(const void* address, std::uint16_t port) {
    std::array<char, INET_ADDRSTRLEN> text{};
    ::inet_ntop(AF_INET, address, text.data(), text.size());
    return std::string(text.data()) + ":" + std::to_string(port);
}

std::string format_v6(const void* address, std::uint16_t port) {
    std::array<char, INET6_ADDRSTRLEN> text{};
    ::inet_ntop(AF_INET6, address, text.data(), text.size());
    return "[" + std::string(text.data()) + "]:" + std::to_string(port);
}

std::uint16_t read_u16(const std::uint8_t* p) {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

// Splits on single spaces; an empty field (two spaces in a row, leading or trailing space)
// stays in the result as an empty string so the caller rejects it.
std::vector<std::string_view> split_fields(std::string_view line) {
    std::vector<std::string_view> fields;
    for (;;) {
        const std::size_t space = line.find(' ');
        fields.push_back(line.substr(0, space));
        if (space == std::string_view::npos) {
            return fields;
        }
        line.remove_prefix(space + 1);
    }
}

bool parse_port(std::string_view text, std::uint16_t& port) {
    if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) {
        return false;
    }
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size() || value > 65535) {
        return false;
    }
    port = static_cast<std::uint16_t>(value);
    return true;
}

}  // namespace

const std::error_category& proxy_protocol_category() {
    static const category instance;
    return instance;
}

std::error_code make_error_code(parse_error e) {
    return {static_cast<int>(e), proxy_protocol_category()};
}

parser::feed_result parser::fail(parse_error e, std::string detail) {
    state_ = state::failed;
    error_ = make_error_code(e);
    detail_ = std::move(detail);
    return error_;
}

parser::feed_result parser::finish(header h) {
    state_ = state::done;
    header_ = std::move(h);
    return header_;
}

parser::feed_result parser::feed(std::span<const std::uint8_t> bytes) {
    consumed_ = 0;
    if (state_ == state::done) {
        return header_;
    }
    if (state_ == state::failed) {
        return error_;
    }
    std::size_t i = 0;
    while (i < bytes.size()) {
        switch (state_) {
            case state::detect: {
                // Byte by byte until one signature is complete or neither can match: both
                // prefixes differ at the first byte ('P' vs 0x0D), so at most one stays alive.
                buffer_.push_back(bytes[i++]);
                const std::size_t n = buffer_.size();
                const bool v1 = std::equal(
                    buffer_.begin(), buffer_.end(), v1_prefix.begin(),
                    v1_prefix.begin() + std::min(n, v1_prefix.size()),
                    [](std::uint8_t a, char b) { return a == static_cast<std::uint8_t>(b); });
                const bool v2 = n <= sizeof(v2_signature) &&
                                std::equal(buffer_.begin(), buffer_.end(), v2_signature);
                if (v1 && n == v1_prefix.size()) {
                    state_ = state::v1;
                } else if (v2 && n == sizeof(v2_signature)) {
                    state_ = state::v2;
                } else if (!v1 && !v2) {
                    consumed_ = i;
                    return fail(parse_error::not_proxy_protocol,
                                "first bytes match neither the v1 \"PROXY \" nor the v2 signature");
                }
                break;
            }
            case state::v1: {
                const std::uint8_t byte = bytes[i++];
                const bool after_cr = buffer_.back() == '\r';
                buffer_.push_back(byte);
                if (after_cr && byte != '\n') {
                    consumed_ = i;
                    return fail(parse_error::malformed, "v1: CR not followed by LF");
                }
                if (byte == '\n') {
                    consumed_ = i;
                    if (!after_cr) {
                        return fail(parse_error::malformed, "v1: line ends in LF without CR");
                    }
                    return parse_v1_line();
                }
                if (buffer_.size() >= max_v1_header_size) {
                    consumed_ = i;
                    return fail(
                        parse_error::too_long,
                        "v1: no CRLF within " + std::to_string(max_v1_header_size) + " bytes");
                }
                break;
            }
            case state::v2: {
                const std::size_t want = v2_total_ == 0 ? v2_fixed_size : v2_total_;
                const std::size_t take = std::min(want - buffer_.size(), bytes.size() - i);
                buffer_.insert(buffer_.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i),
                               bytes.begin() + static_cast<std::ptrdiff_t>(i + take));
                i += take;
                if (buffer_.size() < want) {
                    break;
                }
                if (v2_total_ == 0) {
                    auto checked = check_v2_fixed();
                    if (auto* ec = std::get_if<std::error_code>(&checked)) {
                        consumed_ = i;
                        return *ec;
                    }
                    if (buffer_.size() < v2_total_) {
                        break;
                    }
                }
                consumed_ = i;
                return parse_v2_body();
            }
            case state::done:
            case state::failed:
                break;  // unreachable: both return before the loop
        }
    }
    consumed_ = i;
    return need_more{};
}

parser::feed_result parser::parse_v1_line() {
    // The line without "PROXY " and without CRLF.
    const std::string_view line(reinterpret_cast<const char*>(buffer_.data()) + v1_prefix.size(),
                                buffer_.size() - v1_prefix.size() - 2);
    const std::size_t space = line.find(' ');
    const std::string_view protocol = line.substr(0, space);
    if (protocol == "UNKNOWN") {
        // The spec: the receiver must ignore anything presented before the CRLF.
        return finish(header{});
    }
    const bool v4 = protocol == "TCP4";
    if (!v4 && protocol != "TCP6") {
        return fail(parse_error::unsupported,
                    "v1: protocol '" + std::string(protocol) + "' (TCP4, TCP6 or UNKNOWN)");
    }
    const std::vector<std::string_view> fields = split_fields(line);
    if (fields.size() != 5) {
        return fail(parse_error::malformed, "v1: expected 5 single-space separated fields, got " +
                                                std::to_string(fields.size()));
    }
    const int family = v4 ? AF_INET : AF_INET6;
    std::array<std::uint8_t, sizeof(in6_addr)> source{};
    std::array<std::uint8_t, sizeof(in6_addr)> destination{};
    const char* names[] = {"source address", "destination address"};
    std::array<std::uint8_t, sizeof(in6_addr)>* targets[] = {&source, &destination};
    for (int k = 0; k < 2; ++k) {
        const std::string text(fields[1 + k]);
        if (::inet_pton(family, text.c_str(), targets[k]->data()) != 1) {
            return fail(parse_error::malformed, std::string("v1: ") + names[k] + " '" + text +
                                                    "' is not an " + (v4 ? "IPv4" : "IPv6") +
                                                    " address");
        }
    }
    std::uint16_t source_port = 0;
    std::uint16_t destination_port = 0;
    if (!parse_port(fields[3], source_port)) {
        return fail(parse_error::malformed,
                    "v1: source port '" + std::string(fields[3]) +
                        "' is not a decimal 0..65535 without leading zeros");
    }
    if (!parse_port(fields[4], destination_port)) {
        return fail(parse_error::malformed,
                    "v1: destination port '" + std::string(fields[4]) +
                        "' is not a decimal 0..65535 without leading zeros");
    }
    header h;
    h.source_address =
        v4 ? format_v4(source.data(), source_port) : format_v6(source.data(), source_port);
    h.destination_address = v4 ? format_v4(destination.data(), destination_port)
                               : format_v6(destination.data(), destination_port);
    return finish(std::move(h));
}

std::variant<parser::need_more, std::error_code> parser::check_v2_fixed() {
    const std::uint8_t version = buffer_[12] >> 4;
    const std::uint8_t command = buffer_[12] & 0x0F;
    const std::uint8_t family = buffer_[13] >> 4;
    const std::uint8_t transport = buffer_[13] & 0x0F;
    const std::size_t length = read_u16(&buffer_[14]);
    if (version != 2) {
        fail(parse_error::unsupported, "v2: version " + std::to_string(version) + " (only 2)");
        return error_;
    }
    if (command != command_local && command != command_proxy) {
        fail(parse_error::unsupported,
             "v2: command " + std::to_string(command) + " (LOCAL 0 or PROXY 1)");
        return error_;
    }
    if (family > family_unix) {
        fail(parse_error::unsupported, "v2: address family " + std::to_string(family));
        return error_;
    }
    if (transport > transport_dgram) {
        fail(parse_error::unsupported, "v2: transport protocol " + std::to_string(transport));
        return error_;
    }
    const std::size_t address_size = address_block_size(family);
    if (length > address_size + max_v2_tlv_bytes) {
        fail(parse_error::too_long, "v2: length " + std::to_string(length) + " over " +
                                        std::to_string(address_size + max_v2_tlv_bytes) +
                                        " (address block + " + std::to_string(max_v2_tlv_bytes) +
                                        " bytes of TLVs)");
        return error_;
    }
    if (command == command_proxy && length < address_size) {
        fail(parse_error::malformed, "v2: length " + std::to_string(length) +
                                         " shorter than the address block (" +
                                         std::to_string(address_size) + ")");
        return error_;
    }
    v2_total_ = v2_fixed_size + length;
    return need_more{};
}

parser::feed_result parser::parse_v2_body() {
    const std::uint8_t command = buffer_[12] & 0x0F;
    const std::uint8_t family = buffer_[13] >> 4;
    const std::uint8_t transport = buffer_[13] & 0x0F;
    if (command == command_local) {
        // The spec: use the real connection endpoints and discard the protocol block.
        header h;
        h.local = true;
        return finish(std::move(h));
    }
    const std::uint8_t* body = buffer_.data() + v2_fixed_size;
    const std::size_t address_size = address_block_size(family);
    const std::size_t length = buffer_.size() - v2_fixed_size;
    for (std::size_t at = address_size; at < length;) {
        if (length - at < 3) {
            return fail(parse_error::malformed, "v2: truncated TLV header at offset " +
                                                    std::to_string(at) + " of the address block");
        }
        const std::size_t tlv_length = read_u16(body + at + 1);
        if (tlv_length > length - at - 3) {
            return fail(parse_error::malformed, "v2: TLV of type " + std::to_string(body[at]) +
                                                    " with length " + std::to_string(tlv_length) +
                                                    " runs past the header");
        }
        at += 3 + tlv_length;
    }
    header h;
    if (transport != transport_stream || family == family_unspec || family == family_unix) {
        // UNSPEC fallback the spec allows for combinations a receiver does not implement.
        return finish(std::move(h));
    }
    if (family == family_inet) {
        h.source_address = format_v4(body, read_u16(body + 8));
        h.destination_address = format_v4(body + 4, read_u16(body + 10));
    } else {
        h.source_address = format_v6(body, read_u16(body + 32));
        h.destination_address = format_v6(body + 16, read_u16(body + 34));
    }
    return finish(std::move(h));
}

}  // namespace starling::net::proxy_protocol
