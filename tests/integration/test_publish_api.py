"""POST /api/mqtt/publish: an operator's message goes the way a client's PUBLISH goes — to every
matching subscriber (paho-mqtt here) with its properties, retained when asked, on every node of
a cluster — and bad input is refused with a 400 naming the field."""

from __future__ import annotations

import base64

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/mqtt/publish is starlingd's")

TOKEN = "pub1ish"
PATH = "/api/mqtt/publish"


def publish(broker, body) -> tuple[int, dict]:
    return rest.call(broker, "POST", PATH, TOKEN, body)


def test_published_to_subscribers_with_properties(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/cmd/#", qos=2)
    old = paho_client(broker, protocol=4)
    old.subscribe(f"{uid}/cmd/#", qos=1)

    status, body = publish(broker, {
        "topic": f"{uid}/cmd/7", "payload": "reboot", "qos": 1,
        "userProperties": [{"k": "by", "v": "ops"}, {"k": "by", "v": "twice"}],
        "contentType": "text/plain", "messageExpiryInterval": 600,
        "responseTopic": f"{uid}/reply", "correlationData": "c-1",
    })
    assert status == 200, body
    assert body == {"topic": f"{uid}/cmd/7", "qos": 1, "retain": False, "payloadBytes": 6}
    m = sub.expect_message(timeout=10)
    assert (m.topic, m.payload, m.qos) == (f"{uid}/cmd/7", b"reboot", 1)
    assert m.properties["user_property"] == [("by", "ops"), ("by", "twice")]
    assert m.properties["content_type"] == "text/plain"
    assert m.properties["response_topic"] == f"{uid}/reply"
    assert m.properties["correlation_data"] == b"c-1"
    assert 590 <= m.properties["message_expiry_interval"] <= 600
    assert old.expect_message(timeout=10).payload == b"reboot"

    raw = bytes(range(256))
    status, body = publish(broker, {"topic": f"{uid}/cmd/bin", "qos": 2,
                                    "payload": base64.b64encode(raw).decode(),
                                    "payloadEncoding": "base64"})
    assert status == 200 and body["payloadBytes"] == 256, body
    m = sub.expect_message(timeout=10)
    assert (m.payload, m.qos) == (raw, 2)


def test_retained_through_the_api(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    topic = f"{uid}/state"
    assert publish(broker, {"topic": topic, "payload": "on", "retain": True})[0] == 200
    late = paho_client(broker, protocol=5)
    late.subscribe(topic, qos=1)
    m = late.expect_message(timeout=10)
    assert (m.payload, m.retain) == (b"on", True)
    # An empty retained payload clears it, as from a client.
    assert publish(broker, {"topic": topic, "payload": "", "retain": True})[0] == 200
    wait_for(lambda: rest.call(broker, "GET", f"/api/retained-msg?topicName={uid}%2Fstate",
                               TOKEN)[0] == 404, what="the retained message to be cleared")


def test_bad_input_is_refused_naming_the_field(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "POST", PATH, None, {"topic": "a"})[0] == 401
    for body, field in (
        ("not json", "body"),
        ([], "body"),
        ({}, "topic"),
        ({"topic": ""}, "topic"),
        ({"topic": "a/+"}, "topic"),
        ({"topic": "a/#"}, "topic"),
        ({"topic": "a", "qos": 3}, "qos"),
        ({"topic": "a", "qos": "1"}, "qos"),
        ({"topic": "a", "retain": "yes"}, "retain"),
        ({"topic": "a", "payload": 5}, "payload"),
        ({"topic": "a", "payload": "!!", "payloadEncoding": "base64"}, "payload"),
        ({"topic": "a", "payloadEncoding": "hex"}, "payloadEncoding"),
        ({"topic": "a", "userProperties": [{"k": "x"}]}, "userProperties"),
        ({"topic": "a", "userProperties": [{"k": "x", "v": "\u0000"}]}, "userProperties"),
        ({"topic": "a", "messageExpiryInterval": 0}, "messageExpiryInterval"),
        ({"topic": "a", "responseTopic": "r/#"}, "responseTopic"),
        ({"topic": "a", "contentType": 7}, "contentType"),
        ({"topic": "a/" * 200 + "b"}, "topic"),
    ):
        status, answer = publish(broker, body)
        assert status == 400 and answer["message"].startswith(field), (body, answer)


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "POST", PATH, None, {"topic": "a"})[0] == 404


@pytest.mark.cluster
@requires_services
def test_published_through_one_node_reaches_subscribers_on_another(broker_factory, paho_client,
                                                                   uid):
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    sub = paho_client(b, protocol=5)
    sub.subscribe(f"{uid}/x", qos=1)
    # B's subscription reaches A's trie through client.subscriptions: publish until one lands.
    wait_for(lambda: publish(a, {"topic": f"{uid}/x", "payload": "probe", "qos": 1})[0] == 200
             and sub.collect_for(0.3) != [], timeout=20, what="A to route to B's subscriber")
    assert publish(a, {"topic": f"{uid}/x", "payload": "hello", "qos": 1})[0] == 200
    got = [m.payload for m in sub.collect_for(2.0)]
    assert b"hello" in got
