#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_proxy_protocol: valid v1 and v2 headers of every kind, each
followed by a few client bytes, and hand-made malformed ones, each behind a mode byte (see
fuzz_proxy_protocol.cpp). Usage: make_corpus.py <corpus-dir>"""

import os
import struct
import sys

SIG = b"\r\n\r\n\x00\r\nQUIT\n"
CONNECT = b"\x10\x0d\x00\x04MQTT\x04\x02\x00\x3c\x00\x01c"


def v2(ver_cmd: int, fam: int, body: bytes) -> bytes:
    return SIG + bytes([ver_cmd, fam]) + struct.pack(">H", len(body)) + body


def tlv(kind: int, value: bytes) -> bytes:
    return bytes([kind]) + struct.pack(">H", len(value)) + value


INET = bytes([192, 0, 2, 10, 198, 51, 100, 7]) + struct.pack(">HH", 51000, 1883)
INET6 = (
    bytes.fromhex("20010db8000000000000000000000001")
    + bytes.fromhex("20010db8000000000000ff0000428329")
    + struct.pack(">HH", 443, 8883)
)

# name -> (mode byte, stream)
SEEDS = {
    "v1_tcp4": (0x00, b"PROXY TCP4 192.0.2.10 198.51.100.7 51000 1883\r\n" + CONNECT),
    "v1_tcp4_chunk3": (0x02, b"PROXY TCP4 192.0.2.10 198.51.100.7 51000 1883\r\n" + CONNECT),
    "v1_tcp6": (0x00, b"PROXY TCP6 2001:db8::1 ::1 65535 0\r\n" + CONNECT),
    "v1_tcp6_mapped": (0x15, b"PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n"),
    "v1_unknown": (0x00, b"PROXY UNKNOWN\r\n" + CONNECT),
    "v1_unknown_rest": (0x03, b"PROXY UNKNOWN a b c d\r\n\x16\x03\x01"),
    "v1_max_line": (
        0x07,
        b"PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
        b"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n",
    ),
    "v1_bad_too_long": (0x0F, b"PROXY UNKNOWN " + b"a" * 120 + b"\r\n"),
    "v1_bad_lf_only": (0x00, b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"),
    "v1_bad_cr_only": (0x00, b"PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rx"),
    "v1_bad_fields": (0x00, b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"),
    "v1_bad_double_space": (0x00, b"PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n"),
    "v1_bad_address": (0x00, b"PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n"),
    "v1_bad_family_mix": (0x00, b"PROXY TCP4 1.2.3.4 ::1 1 2\r\n"),
    "v1_bad_port_range": (0x00, b"PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"),
    "v1_bad_port_zero": (0x00, b"PROXY TCP4 1.2.3.4 5.6.7.8 1 080\r\n"),
    "v1_bad_protocol": (0x00, b"PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"),
    "v1_truncated": (0x01, b"PROXY TCP4 1.2.3.4 5.6"),
    "not_proxy_mqtt": (0x00, CONNECT),
    "not_proxy_tls": (0x00, b"\x16\x03\x01\x02\x00\x01"),
    "not_proxy_prefix": (0x00, b"PROXX TCP4"),
    "v2_ipv4": (0x00, v2(0x21, 0x11, INET) + CONNECT),
    "v2_ipv4_chunk1": (0x10, v2(0x21, 0x11, INET) + CONNECT),
    "v2_ipv6": (0x04, v2(0x21, 0x21, INET6) + CONNECT),
    "v2_local": (0x00, v2(0x20, 0x00, b"") + CONNECT),
    "v2_local_with_block": (0x00, v2(0x20, 0x11, INET + tlv(4, b"  "))),
    "v2_tlvs": (
        0x06,
        v2(
            0x21,
            0x11,
            INET + tlv(1, b"h2") + tlv(2, b"example.com") + tlv(4, b"") + tlv(0xE0, b"x" * 100),
        )
        + CONNECT,
    ),
    "v2_tlv_cap": (0x0F, v2(0x21, 0x21, INET6 + tlv(0xE0, b"x" * (4096 - 3)))),
    "v2_unspec": (0x00, v2(0x21, 0x00, tlv(4, b"abc"))),
    "v2_unix": (0x0B, v2(0x21, 0x31, b"p" * 216)),
    "v2_dgram": (0x00, v2(0x21, 0x12, INET)),
    "v2_bad_too_long": (0x00, v2(0x21, 0x11, INET + tlv(0xE0, b"x" * 4096))),
    "v2_bad_tlv_overrun": (0x00, v2(0x21, 0x11, INET + bytes([1, 0, 4]) + b"abc")),
    "v2_bad_tlv_truncated": (0x00, v2(0x21, 0x11, INET + bytes([1, 0]))),
    "v2_bad_short_block": (0x00, v2(0x21, 0x11, INET[:11])),
    "v2_bad_version": (0x00, v2(0x11, 0x11, INET)),
    "v2_bad_command": (0x00, v2(0x22, 0x11, INET)),
    "v2_bad_family": (0x00, v2(0x21, 0x41, INET)),
    "v2_bad_transport": (0x00, v2(0x21, 0x13, INET)),
    "v2_truncated": (0x02, v2(0x21, 0x21, INET6)[:30]),
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, (mode, stream) in SEEDS.items():
        with open(os.path.join(sys.argv[1], "seed_" + name), "wb") as f:
            f.write(bytes([mode]) + stream)
    print(f"wrote {len(SEEDS)} seeds to {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
