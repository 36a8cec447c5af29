"""Server-initiated closes for protocol errors and malformed packets.

v5: the server sends DISCONNECT with the reason code (starlingd always does; Mosquitto may
just close — see ``assert_closed_for_error``). 3.1.1: the server closes the connection.
"""

from __future__ import annotations

import struct

import pytest

from starling_it import codec
from starling_it.expect import assert_closed_for_error

PROTOCOL_OR_MALFORMED = {codec.RC_PROTOCOL_ERROR, codec.RC_MALFORMED_PACKET}


def _connected(broker, raw_client, protocol, client_id):
    conn = raw_client(broker, protocol)
    assert conn.connect(client_id).reason_code == 0
    return conn


def test_second_connect_is_protocol_error(module_broker, raw_client, protocol, uid):
    conn = _connected(module_broker, raw_client, protocol, uid)
    conn.send(codec.connect(uid, protocol=protocol))
    assert_closed_for_error(conn, module_broker.kind, {codec.RC_PROTOCOL_ERROR})


def test_first_packet_not_connect_closes(module_broker, raw_client, protocol, uid):
    """Anything but CONNECT first: closed without CONNACK [MQTT-3.1.0-1]."""
    conn = raw_client(module_broker, protocol)
    conn.send(codec.publish(f"it/{uid}/x", b"too early", protocol=protocol))
    packets = conn.expect_closed()
    assert [p for p in packets if p.type != codec.DISCONNECT] == [], packets


def _publish_with_topic_len_past_end() -> bytes:
    # Topic length says 200 bytes but the packet holds 3.
    body = struct.pack("!H", 200) + b"a/b"
    return codec.packet(codec.PUBLISH, 0, body)


def _publish_qos3() -> bytes:
    return codec.packet(codec.PUBLISH, 0x06, codec.encode_utf8("a/b") + b"\x00\x01x")


def _subscribe_bad_flags() -> bytes:
    # SUBSCRIBE fixed-header flags must be 0010 [MQTT-3.8.1-1].
    body = struct.pack("!H", 1) + b"\x00" + codec.encode_utf8("a/b") + b"\x00"
    return codec.packet(codec.SUBSCRIBE, 0x00, body)


def _subscribe_bad_flags_v3() -> bytes:
    body = struct.pack("!H", 1) + codec.encode_utf8("a/b") + b"\x00"
    return codec.packet(codec.SUBSCRIBE, 0x00, body)


def _remaining_length_five_bytes() -> bytes:
    return bytes([codec.PUBLISH << 4, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])


def _reserved_packet_type() -> bytes:
    return bytes([0x00, 0x00])


def _invalid_utf8_topic() -> bytes:
    return codec.packet(codec.PUBLISH, 0, struct.pack("!H", 3) + b"a\xff\xfe" + b"\x00")


def _invalid_utf8_topic_v3() -> bytes:
    return codec.packet(codec.PUBLISH, 0, struct.pack("!H", 3) + b"a\xff\xfe")


def _null_char_in_topic(protocol) -> bytes:
    return codec.publish("a/\x00/b", b"x", protocol=protocol)


def _subscribe_without_filters(protocol) -> bytes:
    body = struct.pack("!H", 1) + (b"\x00" if protocol == codec.MQTT5 else b"")
    return codec.packet(codec.SUBSCRIBE, 0x02, body)


def _subscribe_reserved_option_bits() -> bytes:
    # Bits 6-7 of the subscription options are reserved and must be 0 [MQTT-3.8.3-5].
    return codec.subscribe(1, [("a/b", 0xC1)])


def _pingreq_with_body() -> bytes:
    return bytes([codec.PINGREQ << 4, 1, 0])


MALFORMED_CASES = {
    "topic-length-past-end": lambda p: _publish_with_topic_len_past_end(),
    "publish-qos-3": lambda p: _publish_qos3(),
    "subscribe-flags-0000": lambda p: (
        _subscribe_bad_flags() if p == codec.MQTT5 else _subscribe_bad_flags_v3()
    ),
    "remaining-length-5-bytes": lambda p: _remaining_length_five_bytes(),
    "reserved-packet-type-0": lambda p: _reserved_packet_type(),
    "invalid-utf8-topic": lambda p: (
        _invalid_utf8_topic() if p == codec.MQTT5 else _invalid_utf8_topic_v3()
    ),
    "null-character-in-topic": _null_char_in_topic,
    "subscribe-without-filters": _subscribe_without_filters,
    "pingreq-with-payload": lambda p: _pingreq_with_body(),
}


MOSQUITTO_LENIENT = {
    "pingreq-with-payload": "2.0.11 answers a PINGREQ with Remaining Length 1 with PINGRESP",
}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.mosquitto_xfail(reason=MOSQUITTO_LENIENT[c]))
        if c in MOSQUITTO_LENIENT
        else c
        for c in sorted(MALFORMED_CASES)
    ],
)
def test_malformed_packet_closes_connection(module_broker, raw_client, protocol, uid, case):
    conn = _connected(module_broker, raw_client, protocol, uid)
    conn.try_send(MALFORMED_CASES[case](protocol))
    assert_closed_for_error(conn, module_broker.kind, PROTOCOL_OR_MALFORMED, timeout=5)


def test_v5_subscription_option_reserved_bits(module_broker, raw_client, uid):
    conn = _connected(module_broker, raw_client, codec.MQTT5, uid)
    conn.send(_subscribe_reserved_option_bits())
    assert_closed_for_error(conn, module_broker.kind, PROTOCOL_OR_MALFORMED)


@pytest.mark.parametrize("qos", [1, 2])
def test_packet_id_zero_is_protocol_error(module_broker, raw_client, protocol, uid, qos):
    conn = _connected(module_broker, raw_client, protocol, uid)
    conn.send(codec.publish(f"it/{uid}/x", b"x", qos=qos, packet_id=0, protocol=protocol))
    assert_closed_for_error(conn, module_broker.kind, PROTOCOL_OR_MALFORMED)


def test_subscribe_packet_id_zero_is_protocol_error(module_broker, raw_client, protocol, uid):
    conn = _connected(module_broker, raw_client, protocol, uid)
    conn.send(codec.subscribe(0, [(f"it/{uid}/x", 0)], protocol=protocol))
    assert_closed_for_error(conn, module_broker.kind, PROTOCOL_OR_MALFORMED)


@pytest.mark.parametrize("bad_topic", ["a/+", "a/#", "+"])
def test_wildcard_in_publish_topic(module_broker, raw_client, protocol, uid, bad_topic):
    conn = _connected(module_broker, raw_client, protocol, uid)
    conn.send(codec.publish(bad_topic, b"x", qos=1, packet_id=1, protocol=protocol))
    assert_closed_for_error(
        conn, module_broker.kind, PROTOCOL_OR_MALFORMED | {codec.RC_TOPIC_NAME_INVALID}
    )


def test_v5_client_disconnect_with_error_code_is_accepted(module_broker, raw_client, uid):
    """A client DISCONNECT with an error reason code is a normal close for the server (the
    will is published, the connection just ends)."""
    conn = _connected(module_broker, raw_client, codec.MQTT5, uid)
    conn.send(codec.disconnect(codec.RC_UNSPECIFIED, {"reason_string": "client gave up"}))
    assert conn.expect_closed() == []


def test_connection_healthy_after_errors_elsewhere(module_broker, raw_client, protocol, uid):
    """A protocol error on one connection does not disturb another."""
    healthy = _connected(module_broker, raw_client, protocol, f"{uid}-ok")
    healthy.subscribe(f"it/{uid}/ok", 1)
    bad = _connected(module_broker, raw_client, protocol, f"{uid}-bad")
    bad.try_send(_remaining_length_five_bytes())
    bad.expect_closed()
    healthy.publish(f"it/{uid}/ok", b"still fine", qos=1)
    assert healthy.expect_publish().payload == b"still fine"
