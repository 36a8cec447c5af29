"""Issue 12 in cluster mode: a backlog queued through one node drains on another, whole and in
order — DEVICE sessions from the Redis inbox, APPLICATION sessions from their Kafka topic — also
when the draining node is killed; an MQTT 5 resume with Session Expiry 0 gets its queue.

Same services and isolation as test_cluster.py (starling_it/cluster.py)."""

from __future__ import annotations

import time

import pytest

from starling_it import codec, credentials
from starling_it.client import persistent
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.prometheus import metric_sum
from starling_it.streams import publish_stream

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]

BACKLOG = 10_000


def start_nodes(broker_factory, count: int, application: bool = False, **env: str):
    prefix = new_prefix()
    nodes = []
    for i in range(count):
        node_env = cluster_env(prefix, f"node-{chr(ord('a') + i)}", **env)
        if application:
            nodes.append(
                broker_factory(env=credentials.env(**node_env), config_text=credentials.config_text())
            )
        else:
            nodes.append(broker_factory(env=node_env))
    return nodes


def login(application: bool, *, publisher: bool = False) -> dict:
    if not application:
        return {}
    creds = credentials.DEVICE if publisher else credentials.APPLICATION
    return {"username": creds["username"], "password": creds["password"]}


def subscribe_then_leave(paho_client, raw_client, node, uid, protocol, topic, application=False):
    """Subscribes the persistent session on `node` and leaves once the consumer that routes
    `topic` knows the subscription: QoS 0 probes on the topic itself (same msg.all partition,
    so the same consumer routes the backlog later) until one arrives."""
    sub = paho_client(node, client_id=uid, protocol=protocol, **persistent(protocol, 3600),
                      **_paho_login(application))
    assert sub.subscribe(topic, qos=1) == [1]
    pub = raw_client(node, codec.MQTT5, timeout=30.0)
    assert pub.connect(f"{uid}-probe", **login(application, publisher=True)).reason_code == 0
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "no probe reached the subscriber within 30 s"
        pub.publish(topic, "probe", qos=0)
        if sub.collect_for(0.3):
            break
    sub.collect_for(0.5)  # stragglers
    sub.disconnect()
    pub.disconnect()


def _paho_login(application: bool) -> dict:
    if not application:
        return {}
    return {"username": credentials.APPLICATION["username"],
            "password": credentials.APPLICATION["password"]}


def sessions_on(node) -> float:
    """Sessions the node knows of, its mirror of client.session included (allClientSessions)."""
    return metric_sum(node.metrics(), "allClientSessions")


def queue_through(node, raw_client, uid, topic, count, application=False) -> None:
    pub = raw_client(node, codec.MQTT5, timeout=60.0)
    assert pub.connect(f"{uid}-pub", **login(application, publisher=True)).reason_code == 0
    publish_stream(pub, topic, 0, count)
    pub.disconnect()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("application", [False, True], ids=["device-redis", "application-kafka"])
def test_backlog_queued_on_one_node_drains_on_another(
    broker_factory, paho_client, raw_client, protocol, uid, application
):
    a, b = start_nodes(broker_factory, 2, application=application)
    topic = f"cb/{uid}"
    subscribe_then_leave(paho_client, raw_client, a, uid, protocol, topic, application)
    queue_through(a, raw_client, uid, topic, BACKLOG, application)

    sub = paho_client(b, client_id=uid, protocol=protocol, **persistent(protocol, 3600),
                      **_paho_login(application))
    assert sub.session_present
    deadline = time.monotonic() + 180
    for expected in range(BACKLOG):
        msg = sub.expect_message(timeout=max(deadline - time.monotonic(), 0.1))
        assert msg.payload == str(expected).encode(), f"got {msg.payload!r}, want {expected}"
        assert not msg.dup
    sub.expect_no_message(0.5)


@pytest.mark.timeout(300)
def test_killing_the_draining_node_loses_nothing(broker_factory, paho_client, raw_client, uid):
    a, b = start_nodes(broker_factory, 2)
    topic = f"ck/{uid}"
    subscribe_then_leave(paho_client, raw_client, a, uid, 5, topic)
    queue_through(a, raw_client, uid, topic, BACKLOG)

    sub = paho_client(b, client_id=uid, protocol=5, **persistent(5, 3600))
    received = [sub.expect_message(timeout=60) for _ in range(3000)]
    b.kill()
    received += sub.drain()
    sub.close()

    # The session requests of the killed node's partitions of client.session.event.request
    # wait for Kafka to give them to node a: the consumer session timeout (10 s) and a
    # rebalance. A client with the usual 10 s connect timeout may give up once and retry;
    # this one waits.
    again = paho_client(a, client_id=uid, protocol=5, connect=False, **persistent(5, 3600))
    again.connect(timeout=60)
    assert again.session_present
    seen = {m.payload for m in received}
    deadline = time.monotonic() + 180
    while len(seen) < BACKLOG:
        msg = again.expect_message(timeout=max(deadline - time.monotonic(), 0.1))
        if msg.payload in seen:
            assert msg.dup, f"{msg.payload!r} delivered twice, the second time without DUP"
            continue
        seen.add(msg.payload)
    assert seen == {str(i).encode() for i in range(BACKLOG)}


@pytest.mark.timeout(180)
def test_v5_resume_with_expiry_0_on_another_node(broker_factory, paho_client, raw_client, uid):
    a, b = start_nodes(broker_factory, 2)
    topic = f"c0/{uid}"
    subscribe_then_leave(paho_client, raw_client, a, uid, 5, topic)
    queue_through(a, raw_client, uid, topic, 100)

    sub = paho_client(b, client_id=uid, protocol=5, clean_start=False)  # no expiry: 0
    assert sub.session_present
    got = [m.payload for m in sub.expect_messages(100, timeout=60)]
    assert got == [str(i).encode() for i in range(100)]
    before = sessions_on(a)
    sub.disconnect()
    # Nodes do not call each other: the end of the session reaches node a through the log.
    # Reconnecting before it did would race the session end (and resume the session).
    deadline = time.monotonic() + 30
    while sessions_on(a) >= before:
        assert time.monotonic() < deadline, "node a never learned that the session ended"
        time.sleep(0.1)
    again = paho_client(a, client_id=uid, protocol=5, **persistent(5, 3600))
    assert not again.session_present, "a session with expiry 0 ends with its connection"
