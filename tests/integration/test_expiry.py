"""MQTT 5 message expiry (for messages queued to an offline session) and session expiry."""

from __future__ import annotations

import time

import pytest

from starling_it import codec
from starling_it.expect import let_time_pass

# Brokers check expiry with about a second of granularity: wait this much past an interval.
EXPIRY_SLACK_S = 1.5


def _offline_subscriber(broker, raw_client, client_id, topic_filter, expiry=300):
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(
        client_id, clean_start=False, properties={"session_expiry_interval": expiry}
    )
    assert ack.reason_code == 0
    conn.subscribe(topic_filter, 1)
    conn.disconnect()


def _resume(broker, raw_client, client_id, expiry=300):
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(
        client_id, clean_start=False, properties={"session_expiry_interval": expiry}
    )
    assert ack.reason_code == 0
    return conn, ack


@pytest.mark.slow
def test_message_expires_while_queued_for_offline_session(
    module_broker, raw_client, paho_client, topic
):
    cid = f"{topic}-sub"
    _offline_subscriber(module_broker, raw_client, cid, f"{topic}/#")
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/short", b"expires", qos=1,
                         properties={"message_expiry_interval": 1})
    pub.publish_and_wait(f"{topic}/long", b"survives", qos=1,
                         properties={"message_expiry_interval": 10})
    pub.publish_and_wait(f"{topic}/none", b"never expires", qos=1)
    published_at = time.monotonic()

    let_time_pass(1 + EXPIRY_SLACK_S)  # the 1 s expiry interval is what is under test
    sub, ack = _resume(module_broker, raw_client, cid)
    assert ack.session_present
    # Three topics, so three msg.all partitions: the order between them is not promised.
    got = {}
    for _ in range(2):
        msg = sub.expect_publish()
        got[msg.payload] = msg
        sub.ack(msg)
    waited = time.monotonic() - published_at
    assert set(got) == {b"survives", b"never expires"}, "the expired message must not be delivered"
    remaining = got[b"survives"].properties.get("message_expiry_interval")
    # The forwarded interval is the received one minus the time spent waiting [MQTT-3.3.2-6].
    assert remaining is not None, got[b"survives"].properties
    assert 1 <= remaining <= 10 - int(waited), f"remaining {remaining} after {waited:.1f}s"
    assert "message_expiry_interval" not in got[b"never expires"].properties
    sub.expect_nothing(0.3)


def test_message_expiry_forwarded_to_online_subscriber(module_broker, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/e", 1)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/e", b"x", qos=1, properties={"message_expiry_interval": 30})
    remaining = sub.expect_message().properties.get("message_expiry_interval")
    assert remaining is not None and 28 <= remaining <= 30


@pytest.mark.slow
def test_session_expires_after_interval(module_broker, raw_client, uid):
    expiry = 2
    _offline_subscriber(module_broker, raw_client, uid, f"it/{uid}/#", expiry=expiry)
    # Within the interval the session is still there (reconnecting restarts the interval).
    conn, ack = _resume(module_broker, raw_client, uid, expiry=expiry)
    assert ack.session_present
    conn.disconnect()

    let_time_pass(expiry + EXPIRY_SLACK_S)  # the expiry interval is what is under test
    conn, ack = _resume(module_broker, raw_client, uid, expiry=expiry)
    assert not ack.session_present, "the session should have expired"


def test_session_expiry_zero_ends_session_at_disconnect(module_broker, raw_client, uid):
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(uid, clean_start=False).reason_code == 0  # expiry absent = 0
    conn.subscribe(f"it/{uid}/x", 1)
    conn.disconnect()
    conn, ack = _resume(module_broker, raw_client, uid)
    assert not ack.session_present


def test_session_expiry_updated_on_disconnect(module_broker, raw_client, uid):
    """DISCONNECT may change a non-zero Session Expiry Interval; setting it to 0 ends the
    session right away."""
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(
        uid, clean_start=False, properties={"session_expiry_interval": 300}
    ).reason_code == 0
    conn.subscribe(f"it/{uid}/x", 1)
    conn.disconnect_and_wait(0, {"session_expiry_interval": 0})
    conn, ack = _resume(module_broker, raw_client, uid)
    assert not ack.session_present


def test_disconnect_cannot_set_expiry_when_connect_had_zero(module_broker, raw_client, uid):
    """Session Expiry 0 at CONNECT and non-zero at DISCONNECT is a protocol error
    [MQTT-3.14.2-2]: the server may answer with DISCONNECT 0x82; the session still ends."""
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(uid, clean_start=True).reason_code == 0
    conn.send(codec.disconnect(0, {"session_expiry_interval": 300}))
    packets = conn.expect_closed()
    for p in packets:
        assert p.type == codec.DISCONNECT and p.reason_code == codec.RC_PROTOCOL_ERROR, p
    conn, ack = _resume(module_broker, raw_client, uid)
    assert not ack.session_present
