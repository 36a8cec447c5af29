"""Kafka integrations (type KAFKA): messages published by paho-mqtt clients that match the
integration's filters are produced to a topic of the test Kafka (STARLING_TEST_KAFKA, standing
in for the user's cluster), read back here with confluent-kafka — each MQTT topic in order under
its own key, with the JSON envelope and the configured headers; an unreachable Kafka shows in
the integration's status without holding up MQTT subscribers; the check call tells a live
cluster from a dead address. The broker itself runs on its embedded backends: the executor is
the same code in both modes (test_integrations.py runs it in a cluster)."""

from __future__ import annotations

import base64
import json
import uuid

import pytest

from starling_it import rest
from starling_it.cluster import KAFKA
from test_hostile_connections import wait_for
from test_integrations import TOKEN, create, free_port, status_of

confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = [
    pytest.mark.starlingd_only(reason="integrations are starlingd's"),
    pytest.mark.skipif(not KAFKA, reason="needs STARLING_TEST_KAFKA (scripts/services.sh up)"),
]


@pytest.fixture
def kafka_topic():
    """A new topic of 3 partitions on the test Kafka, deleted afterwards."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": KAFKA})
    name = f"ie-it-{uuid.uuid4().hex[:12]}"
    admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


def consume(topic: str, count: int, timeout: float = 30.0) -> list:
    """The first `count` records of `topic`, read from the beginning."""
    import time

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": KAFKA, "group.id": f"reader-{uuid.uuid4().hex}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    records = []
    deadline = time.monotonic() + timeout
    try:
        while len(records) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            records.append(msg)
    finally:
        consumer.close()
    assert len(records) >= count, f"{len(records)} of {count} records in {topic}"
    return records


def kafka_body(name: str, filters: list[str], servers: str, topic: str, **client) -> dict:
    return {"name": name, "type": "KAFKA",
            "configuration": {"topicFilters": filters,
                              "clientConfiguration": {"bootstrapServers": servers,
                                                      "topic": topic, **client}}}


def test_messages_reach_the_kafka_topic_keyed_and_in_order(broker_factory, paho_client, uid,
                                                           kafka_topic):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    made = create(broker, kafka_body("to-kafka", [f"{uid}/telemetry/#"], KAFKA, kafka_topic,
                                     kafkaHeaders={"source": "starling-it"}))
    assert made["type"] == "KAFKA"
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)
    pub = paho_client(broker, client_id=f"{uid}-pub", protocol=5)
    total = 60
    for i in range(total):
        pub.publish_and_wait(f"{uid}/telemetry/t{i % 3}", f"m{i}".encode(), qos=1)
    pub.publish_and_wait(f"{uid}/other", b"not for the integration", qos=1)
    assert len(sub.expect_messages(total + 1, timeout=20)) == total + 1

    records = consume(kafka_topic, total)
    assert len(records) == total, "duplicated records"
    by_key: dict[str, list[int]] = {}
    for r in records:
        envelope = json.loads(r.value())
        assert r.key().decode() == envelope["topic"], "the default key is the MQTT topic"
        assert envelope["clientId"] == f"{uid}-pub" and envelope["qos"] == 1
        assert dict(r.headers() or []) == {"source": b"starling-it"}
        by_key.setdefault(envelope["topic"], []).append(
            int(base64.b64decode(envelope["payload"]).decode()[1:]))
    # One key per MQTT topic, so one partition each: Kafka keeps each topic's order.
    assert by_key == {f"{uid}/telemetry/t{t}": list(range(t, total, 3)) for t in range(3)}
    wait_for(lambda: status_of(broker, made["id"])["sent"] == total, timeout=10,
             what="status.sent")
    st = status_of(broker, made["id"])
    assert st["state"] == "ACTIVE" and st["failed"] == 0, st


def test_binary_payload_and_client_id_key(broker_factory, paho_client, uid, kafka_topic):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    create(broker, kafka_body("binary", [f"{uid}/+"], KAFKA, kafka_topic,
                              payloadContentType="BINARY", key="${clientId}",
                              compression="gzip", acks="1"))
    pub = paho_client(broker, client_id=f"{uid}-dev", protocol=4)
    pub.publish_and_wait(f"{uid}/raw", bytes(range(256)), qos=1)
    [record] = consume(kafka_topic, 1)
    assert record.value() == bytes(range(256))
    assert record.key() == f"{uid}-dev".encode()


def test_unreachable_kafka_fails_visibly_without_holding_up_subscribers(broker_factory,
                                                                        paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    dead = f"127.0.0.1:{free_port()}"
    made = create(broker, kafka_body("dead", [f"{uid}/#"], dead, "nowhere", maxRetries=1000,
                                     deliveryTimeoutMs=500, retryBackoffMs=50,
                                     retryBackoffMaxMs=200))
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)
    pub = paho_client(broker, protocol=5)
    for i in range(20):
        pub.publish_and_wait(f"{uid}/d", f"{i}".encode(), qos=1)
    assert [m.payload for m in sub.expect_messages(20, timeout=20)] == [
        f"{i}".encode() for i in range(20)]
    wait_for(lambda: status_of(broker, made["id"])["state"] == "FAILING", timeout=30,
             what="state FAILING")
    wait_for(lambda: status_of(broker, made["id"])["lag"] == 20, timeout=20, what="lag 20")
    st = status_of(broker, made["id"])
    assert "Kafka" in st["lastError"] and st["sent"] == 0, st


def test_check_tells_a_live_cluster_from_a_dead_address(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    live = kafka_body("c", ["#"], KAFKA, "any-topic")
    status, got = rest.call(broker, "POST", "/api/integration/check", TOKEN, live)
    assert status == 200, got
    dead = kafka_body("c", ["#"], f"127.0.0.1:{free_port()}", "any-topic")
    status, got = rest.call(broker, "POST", "/api/integration/check", TOKEN, dead)
    assert status == 400 and "target" in got["message"], got
    bad = kafka_body("c", ["#"], KAFKA, "any-topic", otherProperties={"no.such": "1"})
    status, got = rest.call(broker, "POST", "/api/integration", TOKEN, bad)
    assert status == 400, got
    assert "configuration.clientConfiguration.otherProperties.no.such" in got["message"], got


def test_lifecycle_events_become_records_keyed_by_client(broker_factory, paho_client, uid,
                                                         kafka_topic):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    body = kafka_body("events", [], KAFKA, kafka_topic)
    body["configuration"]["lifecycleEvents"] = ["CONNECTED", "DISCONNECTED"]
    create(broker, body)
    c = paho_client(broker, client_id=f"{uid}-dev", protocol=5)
    c.close()
    records = consume(kafka_topic, 2)
    assert [dict(r.headers())["ie-event"] for r in records] == [b"CONNECTED", b"DISCONNECTED"]
    for r in records:
        assert r.key() == f"{uid}-dev".encode()
        assert json.loads(r.value())["clientId"] == f"{uid}-dev"
