"""Redis Sentinel in cluster mode (redis.connection.type: sentinel): the nodes find the master
through the sentinels and follow a failover. With redis.wait.replicas = 1 an inbox write counts
only once the replica has it, so killing the master mid-stream loses nothing acknowledged: every
QoS 1 message published (PUBACKed) for an offline persistent DEVICE session reaches it after the
replica was promoted and the failed master came back as its replica.

Needs the test services (Kafka, PostgreSQL) and redis-server / redis-cli; the master, replica
and sentinel are the test's own processes."""

from __future__ import annotations


import pytest

from starling_it.brokers import free_port
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.private_redis import PrivateSentinelGroup, redis_cli
from test_cluster_kafka import get_json
from test_hostile_connections import wait_for
from test_cluster_persistence import offline_device_session, resume_and_receive_all

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]


@pytest.fixture
def sentinel_group(tmp_path):
    group = PrivateSentinelGroup(tmp_path / "redis")
    group.start()
    yield group
    group.close()


def sentinel_env(group: PrivateSentinelGroup, **extra: str) -> dict[str, str]:
    return {
        "REDIS_CONNECTION_TYPE": "sentinel",
        "REDIS_MASTER": group.name,
        # A sentinel that is not there first: the node asks the next one.
        "REDIS_SENTINELS": f"127.0.0.1:1,127.0.0.1:{group.sentinel.port}",
        # Neither of these is used in sentinel mode (nothing listens there).
        "REDIS_HOST": "127.0.0.1",
        "REDIS_PORT": "1",
        "REDIS_CLIENT_CONNECT_TIMEOUT": "2000",
        "REDIS_CLIENT_READ_TIMEOUT": "5000",
        **extra,
    }


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_master_killed_mid_stream_loses_nothing(broker_factory, raw_client, uid, sentinel_group):
    prefix = new_prefix()
    node = broker_factory(env=cluster_env(prefix, "node-a",
                                          **sentinel_env(sentinel_group, REDIS_WAIT_REPLICAS="1")))
    assert f"redis.sentinel: master \"{sentinel_group.name}\"" in node.log_text()
    topic = f"ps/{uid}/data"
    pub = offline_device_session(node, raw_client, uid, topic)

    total = 150
    old_master = sentinel_group.master.port
    for seq in range(total):
        if seq == 50:
            sentinel_group.master.kill()  # the replica has every write the inbox counted
        # PUBACK depends on Kafka only: a Redis failover never refuses a publish.
        assert pub.publish(topic, str(seq).encode(), qos=1).reason_code == 0
    sentinel_group.wait_until(
        lambda: sentinel_group.master_port() == sentinel_group.replica.port,
        "the sentinel never promoted the replica", timeout=60)
    assert sentinel_group.master_port() != old_master
    # The promoted master has no replica, so with redis.wait.replicas = 1 no inbox write can
    # count as stored: the batch is read again from Kafka and retried, never committed. Each try
    # writes the copies before its WAIT falls short; the tries after the first must find them
    # there (their Kafka position) and not write them again.
    def inbox_size() -> int:
        return int(redis_cli(sentinel_group.replica.port, "ZCARD",
                             f"{prefix}:{{{uid}}}_messages") or 0)

    wait_for(lambda: inbox_size() >= total, timeout=60,
             what=f"all {total} copies written to the promoted master")
    not_replicated = "0 of 1 replicas acknowledged a write"
    seen = node.log_text().count(not_replicated)
    wait_for(lambda: node.log_text().count(not_replicated) >= seen + 3, timeout=60,
             what="three more retried writes on the promoted master")
    assert inbox_size() == total, "a retried batch wrote its copies again"
    # The failed master comes back; the sentinel turns it into the new master's replica.
    sentinel_group.master.start()
    sentinel_group.wait_until(
        lambda: "connected_slaves:1" in redis_cli(sentinel_group.replica.port, "INFO",
                                                  "replication"),
        "the old master never came back as a replica", timeout=60)

    resume_and_receive_all(node, raw_client, uid, total, timeout=120)
    # The node followed the failover to the promoted replica.
    assert f"127.0.0.1:{sentinel_group.replica.port}" in node.log_text()


@pytest.mark.timeout(120)
def test_unknown_master_name_waits_not_ready_naming_it(broker_factory, sentinel_group):
    """A master name no sentinel knows: the node waits (alive, not ready) and says why."""
    http_port = free_port()
    node = broker_factory(
        env=cluster_env(new_prefix(), "node-a", **sentinel_env(
            sentinel_group, REDIS_MASTER="nosuchmaster", HTTP_BIND_PORT=str(http_port))),
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
    assert "redis.sentinel" in error and "nosuchmaster" in error, error
    assert "does not know a master named" in error, error
