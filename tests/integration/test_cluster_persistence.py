"""Persistent DEVICE sessions in cluster mode (issue 4): the inbox is Redis, shared by every node,
so what a device missed while offline reaches it on whichever node it reconnects to.

Same services and isolation as test_cluster.py (starling_it/cluster.py)."""

from __future__ import annotations

import time

import pytest

from starling_it import codec, credentials
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.private_redis import PrivateRedis
from starling_it.raw_client import persistent

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]


def start_nodes(broker_factory, count: int, **env: str):
    prefix = new_prefix()
    return [
        broker_factory(env=cluster_env(prefix, f"node-{chr(ord('a') + i)}", **env))
        for i in range(count)
    ]


def wait_routed_on_topic(publisher, subscriber, topic: str, timeout: float = 30.0) -> None:
    """QoS 0 probes on the data topic itself (same msg.all partition, so the same consumer
    routes the data later) until the subscriber gets one; then drains them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        publisher.publish(topic, b"probe", qos=0)
        try:
            pkt = subscriber.recv(0.3)
        except TimeoutError:
            continue
        assert pkt.type == codec.PUBLISH and pkt.payload == b"probe", pkt
        while True:
            try:
                pkt = subscriber.recv(0.5)
            except TimeoutError:
                return
            assert pkt.payload == b"probe", pkt
    raise AssertionError(f"no probe reached the subscriber within {timeout}s")


@pytest.mark.timeout(180)
def test_device_queue_is_delivered_after_reconnecting_to_another_node(
    broker_factory, raw_client, uid
):
    a, b = start_nodes(broker_factory, 2)
    topic = f"pd/{uid}/data"
    sub = raw_client(a, codec.MQTT5, timeout=30)
    assert sub.connect(uid, **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(b, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    wait_routed_on_topic(pub, sub, topic)
    sub.disconnect_and_wait()

    count = 50
    for i in range(count):
        assert pub.publish(topic, f"m{i}".encode(), qos=1).reason_code == 0

    back = raw_client(b, codec.MQTT5, timeout=30)
    ack = back.connect(uid, **persistent(codec.MQTT5, expiry=3600))
    assert ack.reason_code == 0 and ack.session_present
    got = []
    while len(got) < count:
        msg = back.expect_publish(timeout=30)
        back.ack(msg)
        got.append(msg.payload)
    assert got == [f"m{i}".encode() for i in range(count)], "queued messages in order"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sigkill_of_the_device_node_loses_nothing_after_reconnecting_elsewhere(
    broker_factory, raw_client, uid
):
    import threading

    a, b, c = start_nodes(broker_factory, 3, TB_MSG_ALL_CONSUMERS_COUNT="1")
    topic = f"pk/{uid}/data"
    sub = raw_client(c, codec.MQTT5, timeout=30)
    assert sub.connect(uid, **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(a, codec.MQTT5, timeout=60)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    wait_routed_on_topic(pub, sub, topic)

    received: set[str] = set()

    def read_until_closed() -> None:
        while True:
            try:
                pkt = sub.recv(60)
            except Exception:  # the node was killed: the connection is gone
                return
            if pkt.type == codec.PUBLISH:
                received.add(pkt.payload.decode())
                try:
                    sub.ack(pkt)
                except Exception:
                    return

    reader = threading.Thread(target=read_until_closed, daemon=True)
    reader.start()

    acked: set[str] = set()
    total, kill_at = 300, 100
    for seq in range(total):
        if seq == kill_at:
            c.kill()
        ack = pub.publish(topic, str(seq).encode(), qos=1, timeout=60)
        if ack.reason_code < 0x80:
            acked.add(str(seq))
    reader.join(70)
    assert len(acked) == total, "publishes go to node A, which stays up"

    back = raw_client(b, codec.MQTT5, timeout=60)
    ack = back.connect(uid, **persistent(codec.MQTT5, expiry=3600))
    assert ack.reason_code == 0 and ack.session_present
    deadline = time.monotonic() + 90
    while not acked <= received:
        assert time.monotonic() < deadline, (
            f"{len(acked - received)} PUBACKed messages never arrived: "
            f"{sorted(acked - received, key=int)[:20]}"
        )
        try:
            msg = back.expect_publish(timeout=5)
        except TimeoutError:
            # Waiting on a backend outage can outlast 1.5 x keep-alive: stay a live client.
            back.send(codec.pingreq())
            continue
        back.ack(msg)
        received.add(msg.payload.decode())


def offline_device_session(node, raw_client, uid: str, topic: str):
    """A persistent DEVICE session `uid` subscribed to `topic` at QoS 1 and then offline, once
    routing to it is known to work; returns a connected publisher."""
    sub = raw_client(node, codec.MQTT5, timeout=30)
    assert sub.connect(uid, **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(node, codec.MQTT5, timeout=60)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    wait_routed_on_topic(pub, sub, topic)
    sub.disconnect_and_wait()
    return pub


def resume_and_receive_all(node, raw_client, uid: str, total: int, timeout: float) -> None:
    """Resumes the session `uid` and acknowledges messages until payloads "0".."total-1" all
    arrived (duplicates allowed: QoS 1); fails naming the missing ones after `timeout`."""
    back = raw_client(node, codec.MQTT5, timeout=60)
    ack = back.connect(uid, **persistent(codec.MQTT5, expiry=3600))
    assert ack.reason_code == 0 and ack.session_present
    received: set[str] = set()
    deadline = time.monotonic() + timeout
    while len(received) < total:
        assert time.monotonic() < deadline, (
            f"missing {sorted(set(map(str, range(total))) - received, key=int)[:20]}"
        )
        try:
            msg = back.expect_publish(timeout=5)
        except TimeoutError:
            # Waiting on a backend outage can outlast 1.5 x keep-alive: stay a live client.
            back.send(codec.pingreq())
            continue
        back.ack(msg)
        received.add(msg.payload.decode())
    assert received == {str(i) for i in range(total)}


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of its own (append-only file, fsync always) that the test may kill and
    start again on the same port and data."""
    r = PrivateRedis(tmp_path / "redis", ["--appendonly", "yes", "--appendfsync", "always", "--save", ""])
    r.start()
    yield r
    r.close()


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_redis_restart_mid_stream_loses_nothing(broker_factory, raw_client, uid, private_redis):
    (node,) = start_nodes(broker_factory, 1, REDIS_PORT=str(private_redis.port))
    topic = f"pr/{uid}/data"
    pub = offline_device_session(node, raw_client, uid, topic)

    total = 150
    for seq in range(total):
        if seq == 50:
            private_redis.kill()  # copies now wait in msg.persisted (not committed)
        if seq == 100:
            private_redis.start()
        # PUBACK depends on Kafka only: Redis being down never refuses a publish.
        assert pub.publish(topic, str(seq).encode(), qos=1).reason_code == 0

    resume_and_receive_all(node, raw_client, uid, total, timeout=90)


@pytest.mark.timeout(180)
def test_application_backlog_on_kafka_is_delivered_on_another_node(
    broker_factory, raw_client, uid
):
    config = credentials.config_text()
    prefix = new_prefix()
    a, b = (
        broker_factory(env=cluster_env(prefix, name), config_text=config)
        for name in ("node-a", "node-b")
    )
    app = credentials.APPLICATION
    topic = f"pa/{uid}/data"
    sub = raw_client(a, codec.MQTT5, timeout=30)
    assert sub.connect(uid, **persistent(codec.MQTT5, expiry=3600), **app).reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(b, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    wait_routed_on_topic(pub, sub, topic)
    sub.disconnect_and_wait()

    count = 500
    for i in range(count):
        assert pub.publish(topic, f"m{i}".encode(), qos=1).reason_code == 0

    back = raw_client(b, codec.MQTT5, timeout=30)
    ack = back.connect(uid, **persistent(codec.MQTT5, expiry=3600), **app)
    assert ack.reason_code == 0 and ack.session_present
    got = []
    while len(got) < count:
        msg = back.expect_publish(timeout=30)
        back.ack(msg)
        got.append(msg.payload)
    assert got == [f"m{i}".encode() for i in range(count)], "the backlog in order"


@pytest.mark.timeout(300)
def test_application_shared_subscription_splits_across_nodes_and_moves_on_leave(
    broker_factory, raw_client, uid
):
    """Two persistent APPLICATION members of one $share on two nodes read
    msg.app.shared.<filter> (2 partitions) as one Kafka consumer group: together they get every
    message once; when one leaves, the other gets its partition and everything after."""
    from starling_it import shared_app
    config = credentials.config_text()
    prefix = new_prefix()
    a, b = (
        broker_factory(
            env=cluster_env(prefix, name, TB_KAFKA_APP_PERSISTED_MSG_SHARED_TOPIC_PARTITIONS="2"),
            config_text=config,
        )
        for name in ("node-a", "node-b")
    )
    app = credentials.APPLICATION
    members = {}
    for name, node in (("m1", a), ("m2", b)):
        conn = raw_client(node, codec.MQTT5, timeout=30)
        ack = conn.connect(f"{uid}-{name}", **persistent(codec.MQTT5, expiry=3600), **app)
        assert ack.reason_code == 0
        assert conn.subscribe(f"$share/g/ps/{uid}/+", 1).reason_codes == [1]
        members[name] = conn
    pub = raw_client(a, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    topics = [f"ps/{uid}/{k}" for k in range(10)]
    shared_app.wait_every_member_serves(pub, members, topics)

    count = 200
    for i in range(count):
        assert pub.publish(topics[i % len(topics)], f"m{i}".encode(), qos=1).reason_code == 0
    got = shared_app.read_any(members, count)
    assert got["m1"] and got["m2"], f"both members served: {shared_app.summary(got)}"
    assert not shared_app.duplicates(got)
    assert sorted(p for pkts in got.values() for p in shared_app.payloads(pkts)) == sorted(
        f"m{i}".encode() for i in range(count)
    )
    assert all(shared_app.in_topic_order(pkts) for pkts in got.values())

    members["m1"].disconnect_and_wait()  # leaves the group: m2 gets both partitions
    more = 100
    for i in range(count, count + more):
        assert pub.publish(topics[i % len(topics)], f"m{i}".encode(), qos=1).reason_code == 0
    rest = shared_app.read_any({"m2": members["m2"]}, more)
    assert sorted(shared_app.payloads(rest["m2"])) == sorted(
        f"m{i}".encode() for i in range(count, count + more)
    )
    assert shared_app.in_topic_order(rest["m2"])
    members["m2"].expect_nothing(1.0)
