"""MQTT integrations (type MQTT, a bridge): messages published to starlingd by paho-mqtt clients
that match the integration's filters are published on to Mosquitto — a broker Starling did not
write — under the topic template, at the configured QoS, with their payload and MQTT 5
properties; each MQTT topic in order. While Mosquitto is down the integration shows FAILING
and keeps the messages; once it is back every one of them arrives."""

from __future__ import annotations

import pytest

from starling_it.brokers import MosquittoBroker, mosquitto_path
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for
from test_integrations import TOKEN, create, free_port, one_sender, status_of

pytestmark = pytest.mark.starlingd_only(reason="integrations are starlingd's")


@pytest.fixture
def mosquitto(tmp_path):
    if not mosquitto_path().exists():
        pytest.skip("mosquitto is not installed (scripts/install-deps.sh)")
    m = MosquittoBroker(tmp_path / "far-side")
    m.start()
    yield m
    m.close()


def mqtt_body(name: str, filters: list[str], far, **client) -> dict:
    return {"name": name, "type": "MQTT",
            "configuration": {"topicFilters": filters,
                              "clientConfiguration": {"host": "127.0.0.1", "port": far.port,
                                                      **client}}}


def test_messages_are_bridged_in_order_with_their_properties(broker_factory, paho_client, uid,
                                                             mosquitto):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    far_sub = paho_client(mosquitto, protocol=5)
    far_sub.subscribe(f"bridged/{uid}/#", qos=1)
    made = create(broker, mqtt_body("bridge", [f"{uid}/#"], mosquitto,
                                    topicName="bridged/${topic}", qos=1))
    pub = paho_client(broker, client_id=f"{uid}-pub", protocol=5)
    total = 30
    for i in range(total):
        pub.publish_and_wait(f"{uid}/t{i % 3}", f"m{i}".encode(), qos=1,
                             properties={"user_property": [("seq", str(i))],
                                         "content_type": "text/plain"})
    got = far_sub.expect_messages(total, timeout=30)
    by_topic: dict[str, list[bytes]] = {}
    for m in got:
        by_topic.setdefault(m.topic, []).append(m.payload)
        assert m.qos == 1
        assert m.properties.get("content_type") == "text/plain", m.properties
        assert ("seq", m.payload.decode()[1:]) in m.properties.get("user_property", []), m
    assert by_topic == {f"bridged/{uid}/t{t}": [f"m{i}".encode() for i in range(t, total, 3)]
                        for t in range(3)}
    wait_for(lambda: status_of(broker, made["id"])["sent"] == total, timeout=10, what="sent")
    assert status_of(broker, made["id"])["state"] == "ACTIVE"
    # SIGTERM with the bridge connected: a clean exit (the ASan build catches a callback after
    # the client is gone).
    assert broker.stop() == 0


def test_mqtt_3_1_1_bridge_with_a_fixed_topic(broker_factory, paho_client, uid, mosquitto):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    far_sub = paho_client(mosquitto, protocol=4)
    far_sub.subscribe(f"all-{uid}", qos=0)
    create(broker, mqtt_body("v311", [f"{uid}/#"], mosquitto, topicName=f"all-{uid}",
                             mqttVersion=4, qos=0))
    pub = paho_client(broker, protocol=4)
    for i in range(5):
        pub.publish_and_wait(f"{uid}/x/{i}", bytes([i, 0, 255]), qos=1)
    assert [m.payload for m in far_sub.expect_messages(5, timeout=30)] == [
        bytes([i, 0, 255]) for i in range(5)]


def test_far_broker_down_then_back_loses_nothing(broker_factory, paho_client, uid, mosquitto):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    # A persistent session on the far side, so what the bridge sends after the restart waits
    # there for this subscriber.
    far_id = f"{uid}-far"
    far_sub = paho_client(mosquitto, client_id=far_id, protocol=5, clean_start=False,
                          session_expiry=3600)
    far_sub.subscribe(f"{uid}/#", qos=1)
    far_sub.close()
    made = create(broker, mqtt_body("outage", [f"{uid}/#"], mosquitto, maxRetries=1000,
                                    retryBackoffMs=50, retryBackoffMaxMs=200,
                                    connectTimeoutMs=1000))
    assert mosquitto.stop() == 0  # saves its sessions
    pub = paho_client(broker, protocol=5)
    for i in range(20):
        pub.publish_and_wait(f"{uid}/o", f"{i}".encode(), qos=1)
    wait_for(lambda: status_of(broker, made["id"])["state"] == "FAILING", timeout=30,
             what="state FAILING")
    assert "not connected" in status_of(broker, made["id"])["lastError"]
    mosquitto.start()
    back = paho_client(mosquitto, client_id=far_id, protocol=5, clean_start=False,
                       session_expiry=3600)
    payloads = [m.payload for m in back.expect_messages(20, timeout=60)]
    firsts = list(dict.fromkeys(payloads))  # at least once: keep first arrivals
    assert firsts == [f"{i}".encode() for i in range(20)], payloads


def test_check_reaches_the_far_broker(broker_factory, mosquitto):
    from starling_it import rest

    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    status, got = rest.call(broker, "POST", "/api/integration/check", TOKEN,
                            mqtt_body("c", ["#"], mosquitto))
    assert status == 200, got

    class Dead:
        port = free_port()

    status, got = rest.call(broker, "POST", "/api/integration/check", TOKEN,
                            mqtt_body("c", ["#"], Dead))
    assert status == 400 and "target" in got["message"], got


@requires_services
def test_in_a_cluster_only_the_sending_node_connects(broker_factory, paho_client, uid, mosquitto):
    """Two nodes: the bridge's client id is the integration's, so only the node that sends
    (ACTIVE) connects to the far broker — Mosquitto never sees the session taken over. When that
    node stops, the other one connects and carries on."""
    nodes = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    far_sub = paho_client(mosquitto, protocol=5)
    far_sub.subscribe(f"{uid}/#", qos=1)
    made = create(nodes[0], mqtt_body("cluster-bridge", [f"{uid}/#"], mosquitto, maxRetries=1000,
                                      retryBackoffMs=50, retryBackoffMaxMs=200))
    client_id = f"starling-ie-{made['id']}"

    owner, survivor = one_sender(nodes, made["id"])
    pub = paho_client(survivor, protocol=5)
    for i in range(10):
        pub.publish_and_wait(f"{uid}/x", f"{i}".encode(), qos=1)
    assert [m.payload for m in far_sub.expect_messages(10, timeout=30)] == [
        f"{i}".encode() for i in range(10)]
    log = mosquitto.log_text()
    assert log.count(f" as {client_id} ") == 1, "one connection, from the sending node"
    assert "already connected" not in log

    assert owner.stop() == 0
    for i in range(10, 20):
        pub.publish_and_wait(f"{uid}/x", f"{i}".encode(), qos=1)
    payloads = [m.payload for m in far_sub.expect_messages(10, timeout=90)]
    assert list(dict.fromkeys(payloads)) == [f"{i}".encode() for i in range(10, 20)], payloads
    assert mosquitto.log_text().count(f" as {client_id} ") == 2, "the survivor connected"
    assert "already connected" not in mosquitto.log_text()


def test_lifecycle_events_are_published_to_the_event_topic(broker_factory, paho_client, uid,
                                                            mosquitto):
    import json

    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    far_sub = paho_client(mosquitto, protocol=5)
    far_sub.subscribe(f"events/{uid}/#", qos=1)
    body = mqtt_body("events", [], mosquitto, eventTopicName=f"events/{uid}/${{clientId}}")
    body["configuration"]["lifecycleEvents"] = ["SUBSCRIBED"]
    create(broker, body)
    c = paho_client(broker, client_id=f"{uid}-dev", protocol=5)
    c.subscribe(f"{uid}/cmd", qos=1)
    [event] = far_sub.expect_messages(1, timeout=30)
    assert event.topic == f"events/{uid}/{uid}-dev"
    doc = json.loads(event.payload)
    assert doc["event"] == "SUBSCRIBED" and doc["topicFilters"] == [f"{uid}/cmd"]
    assert event.properties.get("content_type") == "application/json"
