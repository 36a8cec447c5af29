"""Session limits (issue 7 §2): mqtt.sessions-limit and mqtt.application-clients-limit,
cluster-wide through the shared counters (in process when embedded, Redis in cluster mode).
A CONNECT that would create a session beyond a limit gets CONNACK 0x97 (v5) / return code 3
(v3); a reconnect of an existing session never does.

The counters move on actor threads after the connection closed; tests wait for the
clusterSessionsCount gauge (polled with a deadline) instead of sleeping."""

from __future__ import annotations

import time

import pytest

from starling_it import codec, credentials
from starling_it.brokers import BrokerError
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.prometheus import metric_sum
from starling_it.raw_client import persistent

pytestmark = pytest.mark.starlingd_only(
    reason="session limits are starlingd's (TBMQ) configuration"
)

QUOTA_EXCEEDED = 0x97
V3_SERVER_UNAVAILABLE = 3


def gauge(broker, name: str) -> float:
    return metric_sum(broker.metrics(), name)


def wait_gauge(broker, name: str, want: float, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while gauge(broker, name) != want:
        assert time.monotonic() < deadline, f"{name} stayed {gauge(broker, name)}, want {want}"
        time.sleep(0.05)  # polling a condition with a deadline


def refusals(broker, limit: str) -> float:
    return metric_sum(broker.metrics(), "sessionLimitRefusals_total", limit=limit)


def test_bad_limit_fails_start_naming_the_key(broker_factory):
    broker = broker_factory(env={"MQTT_SESSIONS_LIMIT": "-5"}, start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "mqtt.sessions-limit" in broker.log_text()
    assert "MQTT_SESSIONS_LIMIT" in broker.log_text()


def test_sessions_limit_refuses_new_sessions_only(broker_factory, raw_client, uid):
    broker = broker_factory(env={"MQTT_SESSIONS_LIMIT": "3"})
    # Three sessions: two live, one persistent and offline (it still counts).
    a = raw_client(broker)
    assert a.connect(f"{uid}-a").reason_code == 0
    b = raw_client(broker)
    assert b.connect(f"{uid}-b").reason_code == 0
    p = raw_client(broker)
    assert p.connect(f"{uid}-p", **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    p.disconnect_and_wait()
    wait_gauge(broker, "clusterSessionsCount", 3)

    over = raw_client(broker)
    ack = over.connect(f"{uid}-new")
    assert ack.reason_code == QUOTA_EXCEEDED
    over.expect_closed()
    v3 = raw_client(broker, codec.MQTT311)
    assert v3.connect(f"{uid}-new-v3").reason_code == V3_SERVER_UNAVAILABLE
    assert refusals(broker, "sessions") == 2
    assert "mqtt.sessions-limit reached" in broker.log_text()

    # Existing sessions are never refused: the offline persistent one resumes, a live one is
    # taken over by a new connection with the same client id.
    p2 = raw_client(broker)
    ack = p2.connect(f"{uid}-p", **persistent(codec.MQTT5, expiry=3600))
    assert ack.reason_code == 0 and ack.session_present
    a2 = raw_client(broker)
    assert a2.connect(f"{uid}-a").reason_code == 0
    wait_gauge(broker, "clusterSessionsCount", 3)

    # A non-persistent session leaves: its place is free for a new one.
    b.disconnect_and_wait()
    wait_gauge(broker, "clusterSessionsCount", 2)
    c = raw_client(broker)
    assert c.connect(f"{uid}-new").reason_code == 0
    assert raw_client(broker).connect(f"{uid}-one-too-many").reason_code == QUOTA_EXCEEDED


def test_counts_are_rebuilt_from_the_restored_sessions_at_start(broker_factory, raw_client, uid):
    broker = broker_factory(env={"MQTT_SESSIONS_LIMIT": "2"})
    for name in ("p1", "p2"):
        c = raw_client(broker)
        assert c.connect(f"{uid}-{name}", **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
        c.disconnect_and_wait()
    broker.stop()
    broker.start()
    wait_gauge(broker, "clusterSessionsCount", 2)
    assert raw_client(broker).connect(f"{uid}-new").reason_code == QUOTA_EXCEEDED
    assert raw_client(broker).connect(
        f"{uid}-p1", **persistent(codec.MQTT5, expiry=3600)
    ).session_present


APP = credentials.APPLICATION
DEV = credentials.DEVICE


def test_application_clients_limit(broker_factory, raw_client, uid):
    broker = broker_factory(
        env=credentials.env(MQTT_APPLICATION_CLIENTS_LIMIT="2"),
        config_text=credentials.config_text(),
    )
    apps = []
    for i in range(2):
        c = raw_client(broker)
        assert c.connect(f"{uid}-app{i}", **persistent(codec.MQTT5, 3600), **APP).reason_code == 0
        apps.append(c)
    wait_gauge(broker, "clusterApplicationClientsCount", 2)
    over = raw_client(broker)
    assert over.connect(f"{uid}-app2", **persistent(codec.MQTT5, 3600), **APP).reason_code == (
        QUOTA_EXCEEDED
    )
    assert refusals(broker, "application_clients") == 1
    assert "mqtt.application-clients-limit reached" in broker.log_text()
    # DEVICE clients are not limited by it.
    for i in range(3):
        assert raw_client(broker).connect(f"{uid}-dev{i}", **DEV).reason_code == 0
    # An APPLICATION session that ends (clean start, expiry 0) frees its place.
    apps[0].disconnect_and_wait()
    gone = raw_client(broker)
    assert gone.connect(f"{uid}-app0", **APP).reason_code == 0  # clean start, expiry 0
    gone.disconnect_and_wait()
    wait_gauge(broker, "clusterApplicationClientsCount", 1)
    assert raw_client(broker).connect(f"{uid}-app2", **APP).reason_code == 0


@pytest.mark.cluster
@requires_services
@pytest.mark.timeout(240)
def test_two_nodes_share_the_sessions_limit_through_redis(broker_factory, raw_client, uid):
    prefix = new_prefix()
    env = {"MQTT_SESSIONS_LIMIT": "3"}
    a = broker_factory(env=cluster_env(prefix, "node-a", **env))
    b = broker_factory(env=cluster_env(prefix, "node-b", **env))
    clients = []
    for i, node in enumerate((a, b, a)):
        c = raw_client(node, codec.MQTT5, timeout=30)
        assert c.connect(f"{uid}-c{i}").reason_code == 0
        clients.append(c)
    # Node-local counting would let b take two more.
    for node in (b, a):
        assert raw_client(node, codec.MQTT5, timeout=30).connect(f"{uid}-x").reason_code == (
            QUOTA_EXCEEDED
        )
    # A session moving to the other node is a reconnect, never refused.
    moved = raw_client(b, codec.MQTT5, timeout=30)
    assert moved.connect(f"{uid}-c0").reason_code == 0
    # One leaves (on a): the other node may admit a new one.
    clients[2].disconnect_and_wait()
    deadline = time.monotonic() + 30
    while True:
        code = raw_client(b, codec.MQTT5, timeout=30).connect(f"{uid}-late").reason_code
        if code == 0:
            break
        assert code == QUOTA_EXCEEDED
        assert time.monotonic() < deadline, "the freed session was never given back"
        time.sleep(0.2)  # polling a condition with a deadline
