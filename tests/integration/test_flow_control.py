"""MQTT 5 flow control and size limits, both directions: Receive Maximum and Maximum Packet
Size."""

from __future__ import annotations

import pytest

from starling_it import codec
from starling_it.expect import assert_closed_for_error
from starling_it.raw_client import ConnectionClosed


def _receive_max_subscriber(broker, raw_client, paho_client, topic, receive_max, total):
    sub = raw_client(broker, codec.MQTT5)
    ack = sub.connect(f"{topic}-sub", properties={"receive_maximum": receive_max})
    assert ack.reason_code == 0
    sub.subscribe(f"{topic}/rm", 1)
    pub = paho_client(broker, protocol=5)
    for i in range(total):
        pub.publish_and_wait(f"{topic}/rm", f"{i}", qos=1)
    return sub


def test_server_respects_client_receive_maximum(module_broker, raw_client, paho_client, topic):
    """The server sends no more unacknowledged QoS 1 PUBLISHes than the client's Receive
    Maximum; acknowledging all of them lets the rest through, in order."""
    receive_max, total = 3, 10
    sub = _receive_max_subscriber(module_broker, raw_client, paho_client, topic, receive_max, total)
    received = [sub.expect_publish() for _ in range(receive_max)]
    sub.expect_nothing(0.5)  # the window is full
    while len(received) < total:
        window = received[-receive_max:]
        for msg in window:
            sub.ack(msg)
        for _ in range(min(receive_max, total - len(received))):
            received.append(sub.expect_publish())
    for msg in received[-receive_max:]:
        sub.ack(msg)
    assert [int(m.payload) for m in received] == list(range(total))
    sub.expect_nothing(0.3)


@pytest.mark.mosquitto_xfail(
    reason="2.0.11 sends several PUBLISHes per PUBACK once the window is full, exceeding the "
    "client's Receive Maximum [MQTT-3.3.4-9]"
)
def test_each_puback_releases_exactly_one_message(module_broker, raw_client, paho_client, topic):
    """With the window full, each PUBACK lets exactly one more PUBLISH through."""
    receive_max, total = 3, 10
    sub = _receive_max_subscriber(module_broker, raw_client, paho_client, topic, receive_max, total)
    in_flight = [sub.expect_publish() for _ in range(receive_max)]
    sub.expect_nothing(0.5)
    received = list(in_flight)
    while len(received) < total:
        sub.ack(in_flight.pop(0))
        nxt = sub.expect_publish()
        in_flight.append(nxt)
        received.append(nxt)
        if len(received) < total:
            sub.expect_nothing(0.1)  # one ack released exactly one message
    for msg in in_flight:
        sub.ack(msg)
    assert [int(m.payload) for m in received] == list(range(total))


def test_server_respects_client_receive_maximum_for_qos2(
    module_broker, raw_client, paho_client, topic
):
    """QoS 2 messages count against Receive Maximum until PUBCOMP."""
    sub = raw_client(module_broker, codec.MQTT5)
    assert sub.connect(f"{topic}-sub", properties={"receive_maximum": 1}).reason_code == 0
    sub.subscribe(f"{topic}/rm", 2)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/rm", b"a", qos=2)
    pub.publish_and_wait(f"{topic}/rm", b"b", qos=2)
    first = sub.expect_publish()
    assert first.payload == b"a"
    sub.send(codec.pubrec(first.packet_id))
    sub.expect(codec.PUBREL)
    sub.expect_nothing(0.3)  # PUBREC alone does not free the slot
    sub.send(codec.pubcomp(first.packet_id))
    second = sub.expect_publish()
    assert second.payload == b"b"
    sub.ack(second)


@pytest.mark.mosquitto_xfail(
    reason="2.0 replies PUBREC 0x97 instead of DISCONNECT 0x93; enforcement came in 2.1"
)
def test_client_exceeding_server_receive_maximum_is_disconnected(broker_factory, raw_client, uid):
    """More unacknowledged QoS 2 PUBLISHes than the server's Receive Maximum: DISCONNECT 0x93.

    Mosquitto 2.0 answers the excess PUBLISH with PUBREC 0x97 (Quota exceeded) instead; its
    ChangeLog adds receive-maximum enforcement in 2.1, so it is xfail there.
    """
    # Mosquitto's default max_inflight_messages is 20 already.
    broker = broker_factory(env={"MQTT_MAX_IN_FLIGHT_MSGS": "20"})
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid)
    assert ack.reason_code == 0
    server_max = ack.properties.get("receive_maximum", 65535)
    # PUBREL is never sent, so every QoS 2 message stays in flight on the server.
    batch = bytearray()
    for pid in range(1, server_max + 2):
        batch += codec.publish(f"it/{uid}/flood", b"x", qos=2, packet_id=pid)
    conn.try_send(bytes(batch))
    recs = 0
    while True:
        try:
            pkt = conn.recv(timeout=10)
        except ConnectionClosed:
            raise AssertionError(f"closed after {recs} PUBRECs without DISCONNECT 0x93") from None
        if pkt.type == codec.PUBREC:
            assert pkt.reason_code == 0, (
                f"PUBREC 0x{pkt.reason_code:02x} for message {recs + 1}; expected DISCONNECT 0x93"
            )
            recs += 1
            assert recs <= server_max
            continue
        assert pkt.type == codec.DISCONNECT, pkt
        assert pkt.reason_code == codec.RC_RECEIVE_MAXIMUM_EXCEEDED
        break
    conn.expect_closed()


def test_server_drops_message_larger_than_client_maximum_packet_size(
    module_broker, raw_client, paho_client, topic
):
    """A PUBLISH that would exceed the client's Maximum Packet Size is not sent (dropped), and
    the connection carries on with the next message."""
    sub = raw_client(module_broker, codec.MQTT5)
    ack = sub.connect(f"{topic}-sub", properties={"maximum_packet_size": 256})
    assert ack.reason_code == 0
    sub.subscribe(f"{topic}/#", 1)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/big", b"x" * 1000, qos=1)
    pub.publish_and_wait(f"{topic}/small", b"fits", qos=1)
    msg = sub.expect_publish()
    assert (msg.topic, msg.payload) == (f"{topic}/small", b"fits")
    assert len(msg.raw) <= 256
    sub.ack(msg)
    sub.expect_nothing(0.5)


def test_client_exceeding_server_maximum_packet_size_is_disconnected(
    broker_factory, raw_client, uid
):
    broker = broker_factory(
        env={"TCP_NETTY_MAX_PAYLOAD_SIZE": "4096"},  # else the 64 KiB default applies
        mosquitto_conf=["max_packet_size 4096"],
    )
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid)
    assert ack.reason_code == 0
    limit = ack.properties.get("maximum_packet_size")
    assert limit, f"the server advertises no Maximum Packet Size: {ack.properties}"
    conn.try_send(codec.publish(f"it/{uid}/big", b"x" * (limit + 100), qos=1, packet_id=1))
    assert_closed_for_error(conn, broker.kind, {codec.RC_PACKET_TOO_LARGE})


def test_packet_within_server_maximum_packet_size_is_accepted(module_broker, raw_client, uid):
    conn = raw_client(module_broker, codec.MQTT5)
    ack = conn.connect(uid)
    limit = ack.properties.get("maximum_packet_size", 64 * 1024)
    assert conn.subscribe(f"it/{uid}/fits", 1).reason_codes == [1]
    overhead = len(codec.publish(f"it/{uid}/fits", b"", qos=1, packet_id=1)) + 4
    payload = b"y" * (min(limit, 64 * 1024) - overhead)
    conn.publish(f"it/{uid}/fits", payload, qos=1)
    assert conn.expect_publish().payload == payload


def test_send_quota_resets_on_reconnect(module_broker, raw_client, paho_client, topic):
    """The send quota belongs to the network connection [MQTT-4.9.0-1]: a session that left
    with its window full (Receive Maximum 1, unacknowledged) gets the new connection's full
    window (Receive Maximum 4) on reconnect: the redelivery plus three queued messages."""
    cid = f"{topic}-sub"
    props = {"session_expiry_interval": 300}
    sub = raw_client(module_broker, codec.MQTT5)
    sub.connect(cid, clean_start=False, properties={**props, "receive_maximum": 1})
    sub.subscribe(f"{topic}/q", 1)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/q", b"0", qos=1)
    first = sub.expect_publish()
    assert first.payload == b"0"
    sub.close()  # leaves without PUBACK: the old window is exhausted
    for i in range(1, 4):
        pub.publish_and_wait(f"{topic}/q", f"{i}", qos=1)

    sub = raw_client(module_broker, codec.MQTT5)
    ack = sub.connect(cid, clean_start=False, properties={**props, "receive_maximum": 4})
    assert ack.session_present
    window = [sub.expect_publish() for _ in range(4)]  # all four without any PUBACK
    assert [m.payload for m in window] == [b"0", b"1", b"2", b"3"]
    assert window[0].dup and window[0].packet_id == first.packet_id
    for m in window:
        sub.ack(m)
    sub.expect_nothing(0.3)
