"""Will messages: published on abnormal close, not on a normal DISCONNECT, on DISCONNECT 0x04
(v5), delayed by the Will Delay Interval and cancelled by a reconnect within it, published on
takeover and at session end."""

from __future__ import annotations

import time

import pytest

from starling_it import codec


def _will_owner(broker, raw_client, protocol, client_id, will, clean_start=True, props=None):
    conn = raw_client(broker, protocol)
    ack = conn.connect(client_id, will=will, clean_start=clean_start, properties=props)
    assert ack.reason_code == 0
    return conn


def _observer(broker, paho_client, topic, qos=1):
    obs = paho_client(broker, protocol=5)
    obs.subscribe(f"{topic}/#", qos)
    return obs


def test_will_published_on_abnormal_close(module_broker, raw_client, paho_client, protocol, topic):
    obs = _observer(module_broker, paho_client, topic)
    will = codec.Will(f"{topic}/will", b"gone", qos=1)
    if protocol == codec.MQTT5:
        will.properties = {
            "content_type": "text/plain",
            "user_property": [("origin", "will")],
            "payload_format_indicator": 1,
        }
    owner = _will_owner(module_broker, raw_client, protocol, f"{topic}-owner", will)
    owner.close()  # TCP close without DISCONNECT
    msg = obs.expect_message()
    assert (msg.topic, msg.payload, msg.qos) == (f"{topic}/will", b"gone", 1)
    assert not msg.retain
    if protocol == codec.MQTT5:
        assert msg.properties.get("content_type") == "text/plain"
        assert msg.properties.get("user_property") == [("origin", "will")]
        assert msg.properties.get("payload_format_indicator") == 1
    obs.expect_no_message(0.3)  # exactly once


def test_will_published_on_connection_reset(module_broker, raw_client, paho_client, topic):
    obs = _observer(module_broker, paho_client, topic)
    owner = _will_owner(
        module_broker, raw_client, codec.MQTT5, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"reset"),
    )
    owner.abort()  # RST
    assert obs.expect_message().payload == b"reset"


def test_no_will_on_normal_disconnect(module_broker, raw_client, paho_client, protocol, topic):
    obs = _observer(module_broker, paho_client, topic)
    owner = _will_owner(
        module_broker, raw_client, protocol, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"should not appear"),
    )
    owner.disconnect()  # DISCONNECT 0x00 then close
    # Prove the observer is live, then that no will came before that marker.
    marker = paho_client(module_broker, protocol=protocol)
    marker.publish_and_wait(f"{topic}/marker", b"m", qos=1)
    assert obs.expect_message().topic == f"{topic}/marker"
    obs.expect_no_message(0.5)


def test_v5_disconnect_with_will_message_publishes_will(
    module_broker, raw_client, paho_client, topic
):
    obs = _observer(module_broker, paho_client, topic)
    owner = _will_owner(
        module_broker, raw_client, codec.MQTT5, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"asked for"),
    )
    owner.disconnect(codec.RC_DISCONNECT_WITH_WILL)
    assert obs.expect_message().payload == b"asked for"


def test_retained_will(module_broker, raw_client, paho_client, protocol, topic):
    owner = _will_owner(
        module_broker, raw_client, protocol, f"{topic}-owner",
        codec.Will(f"{topic}/status", b"offline", qos=1, retain=True),
    )
    live = _observer(module_broker, paho_client, topic)
    owner.close()
    assert live.expect_message().payload == b"offline"
    # A later subscriber gets it as a retained message.
    late = paho_client(module_broker, protocol=protocol)
    late.subscribe(f"{topic}/status", 1)
    msg = late.expect_message()
    assert (msg.payload, msg.retain) == (b"offline", True)


@pytest.mark.slow
def test_v5_will_delay_interval_delays_will(module_broker, raw_client, paho_client, topic):
    delay = 2
    obs = _observer(module_broker, paho_client, topic)
    owner = _will_owner(
        module_broker, raw_client, codec.MQTT5, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"late", properties={"will_delay_interval": delay}),
        props={"session_expiry_interval": 60},
    )
    owner.close()
    closed_at = time.monotonic()
    obs.expect_no_message(within=delay - 0.5)
    msg = obs.expect_message(timeout=delay + 5)
    elapsed = msg.received_at - closed_at
    assert msg.payload == b"late"
    assert elapsed >= delay - 0.3, f"will published after {elapsed:.2f}s, delay is {delay}s"


@pytest.mark.slow
def test_v5_reconnect_within_will_delay_cancels_will(
    module_broker, raw_client, paho_client, topic
):
    delay = 2
    obs = _observer(module_broker, paho_client, topic)
    will = codec.Will(
        f"{topic}/will", b"must not appear", properties={"will_delay_interval": delay}
    )
    owner = _will_owner(
        module_broker, raw_client, codec.MQTT5, f"{topic}-owner", will,
        clean_start=False, props={"session_expiry_interval": 60},
    )
    owner.close()
    again = raw_client(module_broker, codec.MQTT5)
    ack = again.connect(
        f"{topic}-owner", clean_start=False, properties={"session_expiry_interval": 60}
    )
    assert ack.reason_code == 0 and ack.session_present
    obs.expect_no_message(within=delay + 1.5)
    again.disconnect()


@pytest.mark.slow
def test_v5_will_sent_at_session_end_when_delay_is_longer(
    module_broker, raw_client, paho_client, topic
):
    """Will Delay 60 s but Session Expiry 1 s: the will goes out when the session ends."""
    obs = _observer(module_broker, paho_client, topic)
    owner = _will_owner(
        module_broker, raw_client, codec.MQTT5, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"session ended", properties={"will_delay_interval": 60}),
        props={"session_expiry_interval": 1},
    )
    owner.close()
    assert obs.expect_message(timeout=8).payload == b"session ended"


def test_will_on_takeover(module_broker, raw_client, paho_client, protocol, topic):
    """The old connection's will is published when a new connection takes its client id
    (v5: Will Delay 0; 3.1.1: the server closes the old connection without DISCONNECT)."""
    obs = _observer(module_broker, paho_client, topic)
    _will_owner(
        module_broker, raw_client, protocol, f"{topic}-owner",
        codec.Will(f"{topic}/will", b"taken over"),
    )
    new = raw_client(module_broker, protocol)
    assert new.connect(f"{topic}-owner").reason_code == 0
    assert obs.expect_message().payload == b"taken over"
    obs.expect_no_message(0.3)
