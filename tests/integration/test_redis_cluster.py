"""Redis Cluster in cluster mode (redis.connection.type: cluster): two Starling nodes keep the
persistent DEVICE inboxes in a Redis Cluster of three masters with a replica each, the clients
paho's. Device keys spread over every master by their hash tag; a master SIGKILLed mid-stream
is replaced by its replica, and with redis.wait.replicas = 1 every QoS 1 message acknowledged to
the publisher still reaches its offline device after the failover.

Needs the test services (Kafka, PostgreSQL) and redis-server / redis-cli; the cluster is the
test's own six processes."""

from __future__ import annotations

import pytest

from starling_it.brokers import free_port
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.private_redis import PrivateRedisCluster, redis_cli
from test_cluster_kafka import get_json
from test_hostile_connections import wait_for

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]

DEVICES = 12
PER_DEVICE = 25


@pytest.fixture
def redis_cluster(tmp_path):
    cluster = PrivateRedisCluster(tmp_path / "redis-cluster", masters=3, replicas=1)
    cluster.start()
    yield cluster
    cluster.close()


def cluster_redis_env(cluster: PrivateRedisCluster, **extra: str) -> dict[str, str]:
    return {
        "REDIS_CONNECTION_TYPE": "cluster",
        # A seed that is not there first: the node asks the next one.
        "REDIS_NODES": f"127.0.0.1:1,{cluster.seeds()}",
        # Not used with a cluster (nothing listens there).
        "REDIS_HOST": "127.0.0.1",
        "REDIS_PORT": "1",
        "REDIS_CLIENT_CONNECT_TIMEOUT": "2000",
        "REDIS_CLIENT_READ_TIMEOUT": "5000",
        **extra,
    }


def keys_per_master(cluster: PrivateRedisCluster, prefix: str) -> dict[int, int]:
    return {port: len(redis_cli(port, "KEYS", f"{prefix}:*").split())
            for port in cluster.masters()}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_master_killed_mid_stream_loses_nothing(broker_factory, paho_client, uid,
                                                redis_cluster):
    prefix = new_prefix()
    env = cluster_redis_env(redis_cluster, REDIS_WAIT_REPLICAS="1")
    a = broker_factory(env=cluster_env(prefix, "node-a", **env))
    b = broker_factory(env=cluster_env(prefix, "node-b", **env))
    assert "redis.cluster: nodes 127.0.0.1:1," in a.log_text()

    devices = [f"{uid}-dev-{i}" for i in range(DEVICES)]
    for device in devices:
        c = paho_client(a, device, protocol=5, clean_start=False, session_expiry=3600)
        assert c.subscribe(f"rc/{device}/data", qos=1) == [1]
        c.disconnect()
    publisher = paho_client(b, f"{uid}-pub", protocol=5)

    def publish_round(seq: int) -> None:
        for device in devices:
            # PUBACK depends on Kafka only: a Redis failover never refuses a publish.
            assert publisher.publish_and_wait(f"rc/{device}/data", str(seq), qos=1,
                                              timeout=30) == 0

    # Routing to the offline sessions reaches Redis: wait until the first round is stored on
    # every master (the clients' keys spread by their hash tags).
    publish_round(0)
    wait_for(lambda: all(n > 0 for n in keys_per_master(redis_cluster, prefix).values()),
             timeout=60, what="inbox keys on every master")

    victim = redis_cluster.masters()[0]
    for seq in range(1, PER_DEVICE):
        if seq == PER_DEVICE // 3:
            redis_cluster.node(victim).kill()  # its replica has every write the nodes counted
        publish_round(seq)
    try:
        wait_for(lambda: victim not in redis_cluster.masters()
                 and len(redis_cluster.masters()) == 3,
                 timeout=60, what="a replica promoted in place of the killed master")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{redis_cluster.diagnostics()}") from None
    # The killed node comes back (as operators bring a failed one back): it rejoins as a
    # replica, so the promoted master has a replica to WAIT for again.
    redis_cluster.node(victim).start()
    redis_cluster.wait_healthy()

    # Every device resumes on either node and gets all it was sent (duplicates allowed: QoS 1).
    for i, device in enumerate(devices):
        node = a if i % 2 == 0 else b
        back = paho_client(node, device, protocol=5, clean_start=False, session_expiry=3600)
        assert back.session_present
        received: set[str] = set()
        while len(received) < PER_DEVICE:
            received.add(back.expect_message(timeout=60).payload.decode())
        assert received == {str(s) for s in range(PER_DEVICE)}, device
    # The nodes followed the failover to the promoted replica.
    assert "restored" in a.log_text() + b.log_text()


@pytest.mark.timeout(120)
def test_no_reachable_seed_waits_not_ready_naming_the_nodes(broker_factory):
    """Seeds where nothing listens: the node waits (alive, not ready) and says why."""
    http_port = free_port()
    node = broker_factory(
        env=cluster_env(new_prefix(), "node-a", REDIS_CONNECTION_TYPE="cluster",
                        REDIS_NODES="127.0.0.1:1,127.0.0.1:2",
                        REDIS_CLIENT_CONNECT_TIMEOUT="1000", HTTP_BIND_PORT=str(http_port)),
        start=False,
    )
    node.start(wait_ready=False)

    def reported_waiting() -> bool:
        status, body = get_json(http_port, "/actuator/health/readiness")
        startup = body.get("components", {}).get("startup", {})
        return status == 503 and startup.get("details", {}).get("waitingFor") == "Redis"

    wait_for(reported_waiting, timeout=30, what="readiness to report the wait for Redis")
    assert get_json(http_port, "/actuator/health/liveness")[0] == 200
    error = get_json(http_port, "/actuator/health/readiness")[1]["components"]["startup"][
        "details"]["error"]
    assert "redis.cluster" in error and "127.0.0.1:2" in error, error
    assert "no seed node gave the cluster's slot map" in error, error
