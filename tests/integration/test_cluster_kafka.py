"""starling.mode: cluster with one node on the real services (Kafka log, Redis inboxes,
PostgreSQL metadata; starling_it/cluster.py). Skipped without them."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest

from starling_it import codec
from starling_it.brokers import free_port
from starling_it.cluster import KAFKA, cluster_env, new_prefix, requires_services
from starling_it.tcp_forwarder import TcpForwarder
from test_hostile_connections import wait_for

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is a starlingd feature"),
    pytest.mark.cluster,
    requires_services,
]


def node_env(**extra: str) -> dict[str, str]:
    return cluster_env(new_prefix(), "it-node", **extra)


@pytest.mark.parametrize("protocol", [codec.MQTT311, codec.MQTT5], ids=["v311", "v5"])
def test_qos1_publish_goes_through_kafka_to_a_subscriber(
    broker_factory, raw_client, uid, protocol
):
    broker = broker_factory(env=node_env())
    sub = raw_client(broker, protocol)
    assert sub.connect(f"{uid}-sub").reason_code == 0
    assert sub.subscribe(f"{uid}/t", 1).reason_codes == [1]
    pub = raw_client(broker, protocol)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    for i in range(5):
        ack = pub.publish(f"{uid}/t", f"m{i}".encode(), qos=1)
        assert ack.reason_code == 0
    got = [sub.expect_publish(timeout=20) for _ in range(5)]
    assert [p.payload for p in got] == [f"m{i}".encode() for i in range(5)]
    status, health = broker.health()
    assert status == 200
    assert health["components"]["messageLog"]["status"] == "UP"


def get_json(port: int, path: str) -> tuple[int, dict]:
    """(status, body); (0, {}) while nothing listens yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
    except urllib.error.URLError:
        return 0, {}


def waiting_node(broker_factory, kafka_port: int) -> tuple[object, int]:
    """A node given a Kafka address nothing answers on, started without waiting for it to
    serve, and its HTTP port (fixed: the listeners file is written only once it serves)."""
    http_port = free_port()
    broker = broker_factory(
        env=node_env(
            TB_KAFKA_SERVERS=f"127.0.0.1:{kafka_port}",
            TB_KAFKA_ADMIN_COMMAND_TIMEOUT_SEC="2",
            HTTP_BIND_PORT=str(http_port),
        ),
        start=False,
    )
    broker.start(wait_ready=False)

    def reported_waiting() -> bool:
        status, body = get_json(http_port, "/actuator/health/readiness")
        startup = body.get("components", {}).get("startup", {})
        return status == 503 and startup.get("details", {}).get("waitingFor") == "Kafka"

    wait_for(reported_waiting, timeout=20, what="readiness to report the wait for Kafka")
    return broker, http_port


def test_a_node_waits_for_an_unreachable_kafka_alive_but_not_ready(broker_factory):
    """A Kafka outage at start-up must not crash-loop the node: it stays up, answers liveness
    (200) and readiness (503, naming the key and the cause), and starts once Kafka answers."""
    kafka_port = free_port()
    broker, http_port = waiting_node(broker_factory, kafka_port)
    status, live = get_json(http_port, "/actuator/health/liveness")
    assert status == 200 and live["status"] == "UP"
    status, ready = get_json(http_port, "/actuator/health/readiness")
    error = ready["components"]["startup"]["details"]["error"]
    assert "queue.kafka.bootstrap.servers" in error and "did not answer within 2 s" in error
    assert get_json(http_port, "/actuator/health")[0] == 503
    assert "queue.kafka.bootstrap.servers" in broker.log_text()

    host, _, port = KAFKA.partition(":")
    forwarder = TcpForwarder(kafka_port, (host, int(port)))
    try:
        broker.wait_until_ready(timeout=90)  # the retry pause grows to 30 s at most
        status, ready = get_json(http_port, "/actuator/health/readiness")
        assert status == 200 and "startup" not in ready["components"], ready
        status, live = get_json(http_port, "/actuator/health/liveness")
        assert status == 200 and live["components"]["eventLoops"]["status"] == "UP"
        assert broker.stop() == 0
    finally:
        forwarder.close()


def test_sigterm_while_waiting_for_kafka_exits_cleanly(broker_factory):
    broker, _ = waiting_node(broker_factory, free_port())
    started = time.monotonic()
    assert broker.stop() == 0
    assert time.monotonic() - started < 10
    assert "stopping before start-up finished" in broker.log_text()

