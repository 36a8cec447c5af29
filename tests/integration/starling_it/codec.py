"""Minimal MQTT 3.1 / 3.1.1 / 5.0 packet builder and parser.

Used by the raw socket client to produce packets that paho refuses to produce (malformed
packets, protocol violations, step-by-step QoS flows) and to inspect every field the server
sends. Builders return ``bytes``; ``decode`` turns one complete packet into a dataclass.

Protocol levels: 3 = MQTT 3.1 ("MQIsdp"), 4 = MQTT 3.1.1, 5 = MQTT 5.0. Properties only
exist at level 5; they are plain dicts keyed by the snake_case names in ``PROPERTIES``.
``user_property`` is a list of (key, value) pairs and ``subscription_identifier`` a list of
ints (both may repeat); every other property holds one value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

MQTT31 = 3
MQTT311 = 4
MQTT5 = 5

# Packet types.
CONNECT = 1
CONNACK = 2
PUBLISH = 3
PUBACK = 4
PUBREC = 5
PUBREL = 6
PUBCOMP = 7
SUBSCRIBE = 8
SUBACK = 9
UNSUBSCRIBE = 10
UNSUBACK = 11
PINGREQ = 12
PINGRESP = 13
DISCONNECT = 14
AUTH = 15

PACKET_NAMES = {
    CONNECT: "CONNECT",
    CONNACK: "CONNACK",
    PUBLISH: "PUBLISH",
    PUBACK: "PUBACK",
    PUBREC: "PUBREC",
    PUBREL: "PUBREL",
    PUBCOMP: "PUBCOMP",
    SUBSCRIBE: "SUBSCRIBE",
    SUBACK: "SUBACK",
    UNSUBSCRIBE: "UNSUBSCRIBE",
    UNSUBACK: "UNSUBACK",
    PINGREQ: "PINGREQ",
    PINGRESP: "PINGRESP",
    DISCONNECT: "DISCONNECT",
    AUTH: "AUTH",
}

# Reason codes used by the tests (MQTT 5.0 section 2.4).
RC_SUCCESS = 0x00
RC_DISCONNECT_WITH_WILL = 0x04
RC_NO_SUBSCRIPTION_EXISTED = 0x11
RC_UNSPECIFIED = 0x80
RC_MALFORMED_PACKET = 0x81
RC_PROTOCOL_ERROR = 0x82
RC_UNSUPPORTED_PROTOCOL_VERSION = 0x84
RC_CLIENT_ID_NOT_VALID = 0x85
RC_SERVER_SHUTTING_DOWN = 0x8B
RC_BAD_AUTH_METHOD = 0x8C
RC_KEEP_ALIVE_TIMEOUT = 0x8D
RC_SESSION_TAKEN_OVER = 0x8E
RC_TOPIC_FILTER_INVALID = 0x8F
RC_TOPIC_NAME_INVALID = 0x90
RC_RECEIVE_MAXIMUM_EXCEEDED = 0x93
RC_TOPIC_ALIAS_INVALID = 0x94
RC_PACKET_TOO_LARGE = 0x95

# MQTT 3.1.1 CONNACK return codes.
V3_ACCEPTED = 0x00
V3_UNACCEPTABLE_PROTOCOL_VERSION = 0x01
V3_IDENTIFIER_REJECTED = 0x02

# Property id -> (name, type). Types: byte, u16, u32, varint, utf8, binary, pair.
PROPERTIES: dict[int, tuple[str, str]] = {
    0x01: ("payload_format_indicator", "byte"),
    0x02: ("message_expiry_interval", "u32"),
    0x03: ("content_type", "utf8"),
    0x08: ("response_topic", "utf8"),
    0x09: ("correlation_data", "binary"),
    0x0B: ("subscription_identifier", "varint"),
    0x11: ("session_expiry_interval", "u32"),
    0x12: ("assigned_client_identifier", "utf8"),
    0x13: ("server_keep_alive", "u16"),
    0x15: ("authentication_method", "utf8"),
    0x16: ("authentication_data", "binary"),
    0x17: ("request_problem_information", "byte"),
    0x18: ("will_delay_interval", "u32"),
    0x19: ("request_response_information", "byte"),
    0x1A: ("response_information", "utf8"),
    0x1C: ("server_reference", "utf8"),
    0x1F: ("reason_string", "utf8"),
    0x21: ("receive_maximum", "u16"),
    0x22: ("topic_alias_maximum", "u16"),
    0x23: ("topic_alias", "u16"),
    0x24: ("maximum_qos", "byte"),
    0x25: ("retain_available", "byte"),
    0x26: ("user_property", "pair"),
    0x27: ("maximum_packet_size", "u32"),
    0x28: ("wildcard_subscription_available", "byte"),
    0x29: ("subscription_identifier_available", "byte"),
    0x2A: ("shared_subscription_available", "byte"),
}
PROPERTY_IDS = {name: (pid, kind) for pid, (name, kind) in PROPERTIES.items()}
REPEATABLE = {"user_property", "subscription_identifier"}


class MalformedPacket(ValueError):
    """The server sent bytes that do not parse as an MQTT packet."""


# --------------------------------------------------------------------------- primitives


def encode_varint(value: int) -> bytes:
    if value < 0 or value > 268_435_455:
        raise ValueError(f"variable byte integer out of range: {value}")
    out = bytearray()
    while True:
        byte = value % 128
        value //= 128
        if value > 0:
            byte |= 0x80
        out.append(byte)
        if value == 0:
            return bytes(out)


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Returns (value, new position). Raises MalformedPacket on more than 4 bytes."""
    value = 0
    multiplier = 1
    for i in range(4):
        if pos >= len(data):
            raise MalformedPacket("truncated variable byte integer")
        byte = data[pos]
        pos += 1
        value += (byte & 0x7F) * multiplier
        if not byte & 0x80:
            return value, pos
        multiplier *= 128
        if i == 3:
            break
    raise MalformedPacket("variable byte integer longer than 4 bytes")


def encode_utf8(text: str | bytes) -> bytes:
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return struct.pack("!H", len(raw)) + raw


def encode_binary(data: bytes) -> bytes:
    return struct.pack("!H", len(data)) + bytes(data)


def _to_bytes(payload: bytes | str | None) -> bytes:
    if payload is None:
        return b""
    if isinstance(payload, str):
        return payload.encode("utf-8")
    return bytes(payload)


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise MalformedPacket(f"need {n} bytes at {self.pos}, have {self.remaining()}")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return struct.unpack("!H", self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack("!I", self.take(4))[0]

    def varint(self) -> int:
        value, self.pos = decode_varint(self.data, self.pos)
        return value

    def binary(self) -> bytes:
        return self.take(self.u16())

    def utf8(self) -> str:
        raw = self.binary()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MalformedPacket(f"invalid UTF-8 string {raw!r}") from exc


# --------------------------------------------------------------------------- properties


def encode_properties(props: dict[str, Any] | None) -> bytes:
    """Encodes a property dict (with its length prefix)."""
    body = bytearray()
    for name, value in (props or {}).items():
        if name not in PROPERTY_IDS:
            raise KeyError(f"unknown MQTT property {name!r}")
        pid, kind = PROPERTY_IDS[name]
        values = value if name in REPEATABLE and isinstance(value, list) else [value]
        for v in values:
            body += encode_varint(pid)
            if kind == "byte":
                body += struct.pack("!B", v)
            elif kind == "u16":
                body += struct.pack("!H", v)
            elif kind == "u32":
                body += struct.pack("!I", v)
            elif kind == "varint":
                body += encode_varint(v)
            elif kind == "utf8":
                body += encode_utf8(v)
            elif kind == "binary":
                body += encode_binary(_to_bytes(v))
            elif kind == "pair":
                body += encode_utf8(v[0]) + encode_utf8(v[1])
    return encode_varint(len(body)) + bytes(body)


def _decode_properties(reader: _Reader) -> dict[str, Any]:
    length = reader.varint()
    end = reader.pos + length
    if end > len(reader.data):
        raise MalformedPacket("property length beyond packet end")
    props: dict[str, Any] = {}
    while reader.pos < end:
        pid = reader.varint()
        if pid not in PROPERTIES:
            raise MalformedPacket(f"unknown property id 0x{pid:02x}")
        name, kind = PROPERTIES[pid]
        if kind == "byte":
            value: Any = reader.byte()
        elif kind == "u16":
            value = reader.u16()
        elif kind == "u32":
            value = reader.u32()
        elif kind == "varint":
            value = reader.varint()
        elif kind == "utf8":
            value = reader.utf8()
        elif kind == "binary":
            value = reader.binary()
        else:
            value = (reader.utf8(), reader.utf8())
        if name in REPEATABLE:
            props.setdefault(name, []).append(value)
        elif name in props:
            raise MalformedPacket(f"property {name} included twice")
        else:
            props[name] = value
    if reader.pos != end:
        raise MalformedPacket("property list overran its length")
    return props


# --------------------------------------------------------------------------- builders


def fixed_header(packet_type: int, flags: int, body_len: int) -> bytes:
    return bytes([(packet_type << 4) | (flags & 0x0F)]) + encode_varint(body_len)


def packet(packet_type: int, flags: int, body: bytes) -> bytes:
    return fixed_header(packet_type, flags, len(body)) + body


@dataclass
class Will:
    topic: str
    payload: bytes | str = b""
    qos: int = 0
    retain: bool = False
    properties: dict[str, Any] | None = None


def connect(
    client_id: str | bytes = "",
    protocol: int = MQTT5,
    clean_start: bool = True,
    keep_alive: int = 60,
    username: str | None = None,
    password: bytes | str | None = None,
    will: Will | None = None,
    properties: dict[str, Any] | None = None,
) -> bytes:
    if protocol == MQTT31:
        proto_name = encode_utf8("MQIsdp")
    else:
        proto_name = encode_utf8("MQTT")
    flags = 0
    if clean_start:
        flags |= 0x02
    if will is not None:
        flags |= 0x04 | ((will.qos & 0x03) << 3)
        if will.retain:
            flags |= 0x20
    if password is not None:
        flags |= 0x40
    if username is not None:
        flags |= 0x80
    body = bytearray(proto_name)
    body += bytes([protocol, flags])
    body += struct.pack("!H", keep_alive)
    if protocol == MQTT5:
        body += encode_properties(properties)
    body += encode_utf8(client_id)
    if will is not None:
        if protocol == MQTT5:
            body += encode_properties(will.properties)
        body += encode_utf8(will.topic)
        body += encode_binary(_to_bytes(will.payload))
    if username is not None:
        body += encode_utf8(username)
    if password is not None:
        body += encode_binary(_to_bytes(password))
    return packet(CONNECT, 0, bytes(body))


def publish(
    topic: str | bytes,
    payload: bytes | str = b"",
    qos: int = 0,
    retain: bool = False,
    dup: bool = False,
    packet_id: int | None = None,
    properties: dict[str, Any] | None = None,
    protocol: int = MQTT5,
) -> bytes:
    flags = (0x08 if dup else 0) | ((qos & 0x03) << 1) | (0x01 if retain else 0)
    body = bytearray(encode_utf8(topic))
    if qos > 0:
        if packet_id is None:
            raise ValueError("QoS > 0 PUBLISH needs a packet id")
        body += struct.pack("!H", packet_id)
    if protocol == MQTT5:
        body += encode_properties(properties)
    body += _to_bytes(payload)
    return packet(PUBLISH, flags, bytes(body))


def _ack(
    packet_type: int,
    packet_id: int,
    reason_code: int | None,
    properties: dict[str, Any] | None,
    protocol: int,
) -> bytes:
    flags = 0x02 if packet_type == PUBREL else 0
    body = bytearray(struct.pack("!H", packet_id))
    if protocol == MQTT5 and (reason_code not in (None, 0) or properties):
        body.append(reason_code or 0)
        if properties:
            body += encode_properties(properties)
    return packet(packet_type, flags, bytes(body))


def puback(packet_id: int, reason_code: int | None = None, properties=None, protocol=MQTT5):
    return _ack(PUBACK, packet_id, reason_code, properties, protocol)


def pubrec(packet_id: int, reason_code: int | None = None, properties=None, protocol=MQTT5):
    return _ack(PUBREC, packet_id, reason_code, properties, protocol)


def pubrel(packet_id: int, reason_code: int | None = None, properties=None, protocol=MQTT5):
    return _ack(PUBREL, packet_id, reason_code, properties, protocol)


def pubcomp(packet_id: int, reason_code: int | None = None, properties=None, protocol=MQTT5):
    return _ack(PUBCOMP, packet_id, reason_code, properties, protocol)


def subscription_options(
    qos: int = 0, no_local: bool = False, retain_as_published: bool = False, retain_handling=0
) -> int:
    return (
        (qos & 0x03)
        | (0x04 if no_local else 0)
        | (0x08 if retain_as_published else 0)
        | ((retain_handling & 0x03) << 4)
    )


def subscribe(
    packet_id: int,
    filters: list[tuple[str, int]],
    properties: dict[str, Any] | None = None,
    protocol: int = MQTT5,
) -> bytes:
    """``filters`` pairs a topic filter with its options byte (just the QoS before v5)."""
    body = bytearray(struct.pack("!H", packet_id))
    if protocol == MQTT5:
        body += encode_properties(properties)
    for topic_filter, options in filters:
        body += encode_utf8(topic_filter) + bytes([options])
    return packet(SUBSCRIBE, 0x02, bytes(body))


def unsubscribe(
    packet_id: int,
    filters: list[str],
    properties: dict[str, Any] | None = None,
    protocol: int = MQTT5,
) -> bytes:
    body = bytearray(struct.pack("!H", packet_id))
    if protocol == MQTT5:
        body += encode_properties(properties)
    for topic_filter in filters:
        body += encode_utf8(topic_filter)
    return packet(UNSUBSCRIBE, 0x02, bytes(body))


def pingreq() -> bytes:
    return bytes([PINGREQ << 4, 0])


def disconnect(
    reason_code: int = 0, properties: dict[str, Any] | None = None, protocol: int = MQTT5
) -> bytes:
    if protocol != MQTT5 or (reason_code == 0 and not properties):
        return bytes([DISCONNECT << 4, 0])
    body = bytes([reason_code]) + encode_properties(properties)
    return packet(DISCONNECT, 0, body)


def auth(reason_code: int = 0x18, properties: dict[str, Any] | None = None) -> bytes:
    return packet(AUTH, 0, bytes([reason_code]) + encode_properties(properties))


# --------------------------------------------------------------------------- parsed packets


@dataclass
class Packet:
    """Common fields of every parsed packet."""

    type: int
    flags: int
    raw: bytes = field(repr=False)

    @property
    def name(self) -> str:
        return PACKET_NAMES.get(self.type, f"TYPE{self.type}")


@dataclass
class Connack(Packet):
    session_present: bool = False
    reason_code: int = 0
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Publish(Packet):
    topic: str = ""
    payload: bytes = b""
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Ack(Packet):
    """PUBACK, PUBREC, PUBREL, PUBCOMP, UNSUBACK (v3) share this shape."""

    packet_id: int = 0
    reason_code: int = 0
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Suback(Packet):
    """SUBACK and (v5) UNSUBACK: one reason code per filter."""

    packet_id: int = 0
    reason_codes: list[int] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Disconnect(Packet):
    reason_code: int = 0
    properties: dict[str, Any] = field(default_factory=dict)


@dataclass
class Auth(Packet):
    reason_code: int = 0
    properties: dict[str, Any] = field(default_factory=dict)


def decode(first_byte: int, body: bytes, protocol: int) -> Packet:
    """Parses one packet sent by a server (fixed header byte + remaining bytes)."""
    ptype = first_byte >> 4
    flags = first_byte & 0x0F
    raw = bytes([first_byte]) + encode_varint(len(body)) + body
    r = _Reader(body)
    v5 = protocol == MQTT5
    if ptype == CONNACK:
        ack_flags = r.byte()
        rc = r.byte()
        props = _decode_properties(r) if v5 and r.remaining() else {}
        return Connack(ptype, flags, raw, bool(ack_flags & 0x01), rc, props)
    if ptype == PUBLISH:
        qos = (flags >> 1) & 0x03
        if qos == 3:
            raise MalformedPacket("PUBLISH with QoS 3")
        topic = r.utf8()
        pid = r.u16() if qos > 0 else None
        props = _decode_properties(r) if v5 else {}
        payload = r.take(r.remaining())
        return Publish(
            ptype, flags, raw, topic, payload, qos, bool(flags & 0x01), bool(flags & 0x08),
            pid, props,
        )
    if ptype in (PUBACK, PUBREC, PUBREL, PUBCOMP) or (ptype == UNSUBACK and not v5):
        pid = r.u16()
        rc = r.byte() if r.remaining() else 0
        props = _decode_properties(r) if v5 and r.remaining() else {}
        return Ack(ptype, flags, raw, pid, rc, props)
    if ptype in (SUBACK, UNSUBACK):
        pid = r.u16()
        props = _decode_properties(r) if v5 else {}
        codes = list(r.take(r.remaining()))
        return Suback(ptype, flags, raw, pid, codes, props)
    if ptype in (PINGRESP, PINGREQ):
        return Packet(ptype, flags, raw)
    if ptype == DISCONNECT:
        rc = r.byte() if r.remaining() else 0
        props = _decode_properties(r) if r.remaining() else {}
        return Disconnect(ptype, flags, raw, rc, props)
    if ptype == AUTH:
        rc = r.byte() if r.remaining() else 0
        props = _decode_properties(r) if r.remaining() else {}
        return Auth(ptype, flags, raw, rc, props)
    raise MalformedPacket(f"unexpected packet type {ptype} from server")
