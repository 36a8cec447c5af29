"""MQTT 5 PUBLISH properties passed through to subscribers unchanged, the request/response
pattern, and Request Response Information."""

from __future__ import annotations

import pytest

from starling_it import codec


def test_publish_properties_passed_through(module_broker, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/p", 1)
    pub = paho_client(module_broker, protocol=5)
    user_props = [("b-key", "2"), ("a-key", "1"), ("b-key", "duplicate keys are allowed"),
                  ("unicode", "ünïcødé ✓")]
    pub.publish_and_wait(
        f"{topic}/p",
        "{\"v\": 1}",
        qos=1,
        properties={
            "user_property": user_props,
            "content_type": "application/json",
            "payload_format_indicator": 1,
            "response_topic": f"{topic}/reply",
            "correlation_data": b"\x00\x01corr\xff",
        },
    )
    msg = sub.expect_message()
    assert msg.payload == b'{"v": 1}'
    assert msg.properties.get("user_property") == user_props, "order and duplicates preserved"
    assert msg.properties.get("content_type") == "application/json"
    assert msg.properties.get("payload_format_indicator") == 1
    assert msg.properties.get("response_topic") == f"{topic}/reply"
    assert msg.properties.get("correlation_data") == b"\x00\x01corr\xff"


def test_properties_on_raw_publish_and_v311_subscriber(module_broker, raw_client, topic):
    """Properties survive a raw publish; a 3.1.1 subscriber simply gets the payload."""
    v5 = raw_client(module_broker, codec.MQTT5)
    assert v5.connect(f"{topic}-v5").reason_code == 0
    v5.subscribe(f"{topic}/p", 1)
    v3 = raw_client(module_broker, codec.MQTT311)
    assert v3.connect(f"{topic}-v3").reason_code == 0
    v3.subscribe(f"{topic}/p", 1)
    pub = raw_client(module_broker, codec.MQTT5)
    assert pub.connect(f"{topic}-pub").reason_code == 0
    pub.publish(
        f"{topic}/p", b"payload", qos=1,
        properties={"user_property": [("k", "v")], "content_type": "text/plain"},
    )
    got5 = v5.expect_publish()
    assert got5.properties.get("user_property") == [("k", "v")]
    assert got5.properties.get("content_type") == "text/plain"
    got3 = v3.expect_publish()
    assert (got3.payload, got3.qos) == (b"payload", 1)
    v5.ack(got5)
    v3.ack(got3)


def test_request_response_pattern(module_broker, paho_client, topic):
    responder = paho_client(module_broker, protocol=5)
    responder.subscribe(f"{topic}/request", 1)
    requester = paho_client(module_broker, protocol=5)
    requester.subscribe(f"{topic}/response/+", 1)

    for n in range(3):
        requester.publish_and_wait(
            f"{topic}/request", f"question {n}", qos=1,
            properties={"response_topic": f"{topic}/response/{n}",
                        "correlation_data": f"id-{n}".encode()},
        )
        req = responder.expect_message()
        responder.publish_and_wait(
            req.properties["response_topic"], req.payload.replace(b"question", b"answer"),
            qos=1, properties={"correlation_data": req.properties["correlation_data"]},
        )
        resp = requester.expect_message()
        assert resp.topic == f"{topic}/response/{n}"
        assert resp.payload == f"answer {n}".encode()
        assert resp.properties.get("correlation_data") == f"id-{n}".encode()


def test_no_response_information_unless_requested(module_broker, raw_client, uid):
    conn = raw_client(module_broker, codec.MQTT5)
    ack = conn.connect(uid)
    assert ack.reason_code == 0
    assert "response_information" not in ack.properties


@pytest.mark.starlingd_only(reason="Mosquitto 2.0 never returns Response Information")
def test_response_information_returned_when_requested(broker_factory, raw_client, uid):
    broker = broker_factory(env={"MQTT_RESPONSE_INFO": "responses/"})
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid, properties={"request_response_information": 1})
    assert ack.reason_code == 0
    info = ack.properties.get("response_information")
    assert info and info.startswith("responses/"), ack.properties
    # Without the request the server must not send it [MQTT-3.1.2-28 / 3.2.2.3.15].
    other = raw_client(broker, codec.MQTT5)
    ack2 = other.connect(f"{uid}-b", properties={"request_response_information": 0})
    assert "response_information" not in ack2.properties


def test_request_problem_information_zero_suppresses_reason_string(module_broker, raw_client, uid):
    """Request Problem Information 0: no Reason String / User Property on anything but
    PUBLISH, CONNACK and DISCONNECT [MQTT-3.1.2-29]."""
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(uid, properties={"request_problem_information": 0}).reason_code == 0
    unsuback = conn.unsubscribe(f"it/{uid}/never-subscribed")
    assert "reason_string" not in unsuback.properties
    assert "user_property" not in unsuback.properties
