"""starling.mode: cluster with one node on the real services (Kafka log, Redis inboxes,
PostgreSQL metadata; starling_it/cluster.py). Skipped without them."""

from __future__ import annotations

import time

import pytest

from starling_it import codec
from starling_it.brokers import BrokerError, free_port
from starling_it.cluster import cluster_env, new_prefix, requires_services

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


def test_unreachable_kafka_fails_start_up_naming_the_key(broker_factory):
    # free_port(): a loopback port nothing listens on.
    broker = broker_factory(
        env=node_env(
            TB_KAFKA_SERVERS=f"127.0.0.1:{free_port()}",
            TB_KAFKA_ADMIN_COMMAND_TIMEOUT_SEC="2",
        ),
        start=False,
    )
    started = time.monotonic()
    with pytest.raises(BrokerError):
        broker.start()
    assert time.monotonic() - started < 25
    log = broker.log_text()
    assert "queue.kafka.bootstrap.servers" in log
    assert "did not answer within 2 s" in log
