#pragma once

// PROXY protocol v1 (text) and v2 (binary) header parser, as specified by HAProxy
// (https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt). A load balancer in front of
// the broker writes one header at the start of each TCP connection naming the real client;
// the listener parses it before any MQTT, TLS or WebSocket byte.
//
// Sans-I/O (docs/style.md rule 3): no sockets, no Asio. The listener feeds bytes as they arrive and
// gets `need_more`, the parsed `header`, or an error code; it closes the connection on error.
//
// Limits (the parser never buffers more than the header itself, and never more than these):
//   v1  107 bytes including CRLF (the spec's maximum line length);
//   v2  16-byte fixed part + address block (12 INET, 36 INET6, 216 UNIX) + at most
//       max_v2_tlv_bytes of TLVs. The spec allows up to 65535 bytes after the fixed part;
//       4 KiB of TLVs covers every TLV HAProxy, AWS NLB, GCP and Azure send (ALPN, authority,
//       CRC32C, unique id, SSL sub-TLVs, VPC endpoint id) with room to spare, and keeps a
//       hostile peer from making us hold 64 KiB per half-open connection.
//
// Decisions where the spec leaves room:
//   - v1 ports must be decimal 0..65535 without leading zeros; addresses must parse as the
//     family named (TCP4 → dotted quad, TCP6 → RFC 4291 text); fields are separated by exactly
//     one space. Anything else is `malformed`.
//   - v1 "UNKNOWN" ignores the rest of the line (as the spec requires) and yields empty
//     addresses: the listener keeps the socket's address.
//   - v2 LOCAL: the address block and TLVs are discarded unread; `header.local` is set.
//   - v2 PROXY with UNSPEC family, UNIX family, or a non-STREAM transport: the spec lets a
//     receiver fall back to UNSPEC, so these yield empty addresses (socket address kept).
//   - v2 version other than 2, a command other than LOCAL/PROXY, or a family/transport nibble
//     outside the spec's table: `unsupported` (the spec says to drop such connections).
//   - v2 TLVs are not interpreted, but each must fit inside the declared length (`malformed`
//     otherwise), as HAProxy checks.
//   - A byte that cannot start either signature ends parsing at once with `not_proxy_protocol`
//     (an MQTT CONNECT starts with 0x10, a TLS ClientHello with 0x16): the first byte decides.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

namespace starling::net::proxy_protocol {

inline constexpr std::size_t max_v1_header_size = 107;
inline constexpr std::size_t v2_fixed_size = 16;
inline constexpr std::size_t max_v2_tlv_bytes = 4096;
inline constexpr std::size_t max_v2_address_block = 216;  // AF_UNIX: two 108-byte paths
inline constexpr std::size_t max_v2_header_size =
    v2_fixed_size + max_v2_address_block + max_v2_tlv_bytes;

// The v2 signature: the 12 bytes every binary header starts with.
inline constexpr std::uint8_t v2_signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                                  0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

struct header {
    // v2 LOCAL command: the connection was opened by the proxy itself (health check); keep the
    // socket's addresses.
    bool local = false;
    // "ip:port", or "[ipv6]:port", formatted as net::transport::remote_address() formats a
    // socket's peer (IPv6 in inet_ntop's canonical lower-case form). Empty for LOCAL, v1
    // UNKNOWN and the v2 UNSPEC fallbacks: the listener keeps the socket's address then.
    std::string source_address;
    std::string destination_address;

    bool operator==(const header&) const = default;
};

enum class parse_error : int {
    // The first bytes match neither the v1 nor the v2 signature.
    not_proxy_protocol = 1,
    // A signature matched but the rest breaks the spec (see detail()).
    malformed,
    // Over the v1 line limit or the v2 TLV cap.
    too_long,
    // Well formed, but a version, command, family or protocol we do not (or may not) accept.
    unsupported,
};

const std::error_category& proxy_protocol_category();

std::error_code make_error_code(parse_error e);

// Lifecycle: one parser per accepted connection, fed until it returns a header or an error,
// then discarded. Once finished, further feed() calls consume nothing and return the same
// outcome again.
// Ownership: holds at most the header's own bytes (see the limits above), never the client's.
// Concurrency: none; use from the connection's strand.
class parser {
  public:
    struct need_more {};
    using feed_result = std::variant<need_more, header, std::error_code>;

    // Feed bytes as they arrive. On need_more every byte was taken. On a header, consumed()
    // tells how many bytes *of this call's span* belonged to the header: the rest
    // (bytes.subspan(consumed())) is the client's first MQTT/TLS bytes and must be kept.
    // On an error the connection should be closed; detail() says why, for the log line.
    feed_result feed(std::span<const std::uint8_t> bytes);

    // Bytes of the most recent feed() that the header used.
    std::size_t consumed() const { return consumed_; }

    // Total header size across every feed(), once complete (0 before).
    std::size_t header_size() const { return state_ == state::done ? buffer_.size() : 0; }

    // Human-readable reason for the error, naming the offending field ("" when none).
    const std::string& detail() const { return detail_; }

  private:
    enum class state : std::uint8_t { detect, v1, v2, done, failed };

    feed_result fail(parse_error e, std::string detail);
    feed_result finish(header h);
    feed_result parse_v1_line();
    // Called once the 16-byte fixed part is buffered: validates it and sets v2_total_.
    std::variant<need_more, std::error_code> check_v2_fixed();
    feed_result parse_v2_body();

    state state_ = state::detect;
    std::vector<std::uint8_t> buffer_;  // the header bytes seen so far
    std::size_t v2_total_ = 0;          // fixed part + declared length, once known
    std::size_t consumed_ = 0;
    header header_;
    std::error_code error_;
    std::string detail_;
};

}  // namespace starling::net::proxy_protocol

template <>
struct std::is_error_code_enum<starling::net::proxy_protocol::parse_error> : std::true_type {};
