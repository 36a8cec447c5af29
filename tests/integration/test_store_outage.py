"""Redis taken away under a running two-node cluster (issue 18, item 1): a store outage must not
restart anything. Liveness is the process's own and stays UP the whole time (so Kubernetes
restarts no pod), the processes keep running, clients on non-persistent sessions keep exchanging
messages across the nodes (and new ones connect), readiness reports the device inbox DOWN while
Redis is away and recovers by itself, and what was acknowledged meanwhile for an offline
persistent DEVICE session reaches it afterwards.

The outage lasts STARLING_REDIS_OUTAGE_SECONDS (20 by default, to keep CI short; the behaviour
does not change with the length: the inbox workers retry with a backoff capped at 5 s)."""

from __future__ import annotations

import os
import time

import pytest

from starling_it import codec
from starling_it.cluster import requires_services
from starling_it.private_redis import PrivateRedis
from test_cluster_kafka import get_json
from test_cluster_persistence import (
    offline_device_session,
    resume_and_receive_all,
    start_nodes,
    wait_routed_on_topic,
)
from test_hostile_connections import wait_for

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]

OUTAGE_SECONDS = float(os.environ.get("STARLING_REDIS_OUTAGE_SECONDS", "20"))


def inbox_status(node) -> tuple[int, str]:
    """(readiness HTTP status, the deviceInbox component's status)."""
    status, body = get_json(node.http_port, "/actuator/health/readiness")
    return status, body.get("components", {}).get("deviceInbox", {}).get("status", "")


def assert_alive(nodes) -> None:
    for node in nodes:
        assert node.running, f"a node exited during the outage:\n{node.log_text()[-3000:]}"
        status, body = get_json(node.http_port, "/actuator/health/liveness")
        assert status == 200 and body["status"] == "UP", body


def exchange(pub, sub, topic: str, payload: bytes) -> None:
    """One QoS 1 message from pub (one node) to sub (the other): PUBACK and delivery."""
    assert pub.publish(topic, payload, qos=1).reason_code == 0
    got = sub.expect_publish(timeout=30)
    assert got.payload == payload, got
    sub.ack(got)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_redis_outage_restarts_nothing_and_readiness_recovers(
    broker_factory, raw_client, uid, tmp_path
):
    redis = PrivateRedis(tmp_path / "redis",
                         ["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
    redis.start()
    try:
        a, b = start_nodes(broker_factory, 2, REDIS_PORT=str(redis.port))
        nodes = (a, b)
        for node in nodes:
            assert inbox_status(node) == (200, "UP")

        live_topic = f"so/{uid}/live"
        sub = raw_client(a, codec.MQTT5, timeout=30)
        assert sub.connect(f"{uid}-sub").reason_code == 0
        assert sub.subscribe(live_topic, 1).reason_codes == [1]
        pub = raw_client(b, codec.MQTT5, timeout=30)
        assert pub.connect(f"{uid}-live-pub").reason_code == 0
        wait_routed_on_topic(pub, sub, live_topic)

        device_topic = f"so/{uid}/device"
        device_pub = offline_device_session(b, raw_client, uid, device_topic)
        total = 60
        for seq in range(20):
            assert device_pub.publish(device_topic, str(seq).encode(), qos=1).reason_code == 0

        redis.kill()
        went_away = time.monotonic()
        for node in nodes:
            wait_for(lambda node=node: inbox_status(node) == (503, "DOWN"), timeout=30,
                     what="readiness to report the device inbox DOWN")

        # While Redis is away: liveness stays UP, live traffic flows both ways, a new
        # non-persistent client connects, and publishes for the offline device are still
        # acknowledged (their copies wait in Kafka).
        seq = 20
        rounds = 0
        while time.monotonic() - went_away < OUTAGE_SECONDS or rounds < 3:
            assert_alive(nodes)
            exchange(pub, sub, live_topic, f"during-{rounds}".encode())
            fresh = raw_client(a, codec.MQTT5, timeout=30)
            assert fresh.connect(f"{uid}-fresh-{rounds}").reason_code == 0
            fresh.disconnect_and_wait()
            if seq < 40:
                assert device_pub.publish(device_topic, str(seq).encode(), qos=1).reason_code == 0
                seq += 1
            assert inbox_status(a)[0] == 503 and inbox_status(b)[0] == 503
            rounds += 1
            time.sleep(0.5)  # paces the rounds over the outage; every check above waits itself
        for s in range(seq, 40):
            assert device_pub.publish(device_topic, str(s).encode(), qos=1).reason_code == 0

        redis.start()
        for node in nodes:
            wait_for(lambda node=node: inbox_status(node) == (200, "UP"), timeout=60,
                     what="readiness to recover once Redis is back")
        assert_alive(nodes)
        exchange(pub, sub, live_topic, b"after")
        for s in range(40, total):
            assert device_pub.publish(device_topic, str(s).encode(), qos=1).reason_code == 0
        resume_and_receive_all(a, raw_client, uid, total, timeout=90)
        assert_alive(nodes)
    finally:
        redis.close()
