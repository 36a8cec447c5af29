"""starling.mode: cluster on a real Kafka (the message log is Kafka; inbox and metadata stay
local until issue 4). Needs STARLING_TEST_KAFKA=host:port (`scripts/services.sh up kafka`);
skipped without it. Every broker gets its own topic prefix and node id, so runs sharing the
Kafka never see each other's records."""

from __future__ import annotations

import itertools
import os
import time

import pytest

from starling_it import codec
from starling_it.brokers import BrokerError, free_port

KAFKA = os.environ.get("STARLING_TEST_KAFKA", "")

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is a starlingd feature"),
    pytest.mark.skipif(
        not KAFKA,
        reason="STARLING_TEST_KAFKA is not set: start Kafka with `scripts/services.sh up kafka` "
        "and run with STARLING_TEST_KAFKA=127.0.0.1:9092",
    ),
]

_runs = itertools.count()


def cluster_env(**extra: str) -> dict[str, str]:
    n = next(_runs)
    env = {
        "STARLING_MODE": "cluster",
        "TB_KAFKA_SERVERS": KAFKA,
        "TB_KAFKA_PREFIX": f"it-{os.getpid()}-{int(time.time() * 1000)}-{n}",
        "TB_SERVICE_ID": f"it-node-{n}",
        "TB_KAFKA_MSG_ALL_PARTITIONS": "4",
    }
    env.update(extra)
    return env


@pytest.mark.parametrize("protocol", [codec.MQTT311, codec.MQTT5], ids=["v311", "v5"])
def test_qos1_publish_goes_through_kafka_to_a_subscriber(
    broker_factory, raw_client, uid, protocol
):
    broker = broker_factory(env=cluster_env())
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
        env=cluster_env(
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
