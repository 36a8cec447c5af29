"""Rate limits (mqtt.rate-limits.*, issue 7 §2): per-publisher incoming, per-subscriber outgoing
(QoS 0 copies) and the cluster-wide device-persisted-messages bucket, driven through the real
daemon with TBMQ's environment variables.

How the counts are made independent of the machine's speed:
- Most tests give the binding window a long period (a few tokens per hour), so nothing refills
  while the test runs: exactly `limit` messages pass, whatever the timing.
- The rate test (a short window) derives both bounds from the configured rate and the
  client-side timestamps that bracket when the broker handled each PUBLISH (sent ..
  acknowledged); a greedy bucket under continuous load grants limit + rate * elapsed.
Drops are read from droppedMsgs_total{reason=...} on /actuator/prometheus."""

from __future__ import annotations

import math
import socket
import time

import pytest

from starling_it import codec
from starling_it import rate as rate_run
from starling_it.brokers import BrokerError
from starling_it.cluster import REDIS, cluster_env, new_prefix, requires_services
from starling_it.prometheus import metric_sum
from starling_it.raw_client import persistent

pytestmark = pytest.mark.starlingd_only(reason="rate limits are starlingd's (TBMQ) configuration")

QUOTA_EXCEEDED = 0x97


def dropped(*brokers, reason: str) -> float:
    return sum(metric_sum(b.metrics(), "droppedMsgs_total", reason=reason) for b in brokers)


def wait_dropped(*brokers, reason: str, want: float, timeout: float = 20.0) -> float:
    """Polls droppedMsgs_total{reason} (it moves on consumer threads) until it reaches ``want``;
    returns the value, which may then be compared for equality."""
    deadline = time.monotonic() + timeout
    value = dropped(*brokers, reason=reason)
    while value < want and time.monotonic() < deadline:
        time.sleep(0.1)  # polling a condition with a deadline
        value = dropped(*brokers, reason=reason)
    return value


def receive_all(client, within: float = 0.7) -> list[bytes]:
    """Every PUBLISH the client gets until none arrives for ``within`` s, acknowledged."""
    got = []
    while True:
        try:
            pkt = client.recv(within)
        except TimeoutError:
            return got
        if pkt.type == codec.PUBLISH:
            client.ack(pkt)
            got.append(pkt.payload)


def incoming_env(config: str) -> dict[str, str]:
    return {
        "MQTT_INCOMING_RATE_LIMITS_ENABLED": "true",
        "MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG": config,
    }


def test_malformed_limit_fails_start_naming_the_key(broker_factory):
    broker = broker_factory(
        env={
            "MQTT_OUTGOING_RATE_LIMITS_ENABLED": "true",
            "MQTT_OUTGOING_RATE_LIMITS_CLIENT_CONFIG": "10:1,300",
        },
        start=False,
    )
    with pytest.raises(BrokerError):
        broker.start()
    log = broker.log_text()
    assert "mqtt.rate-limits.outgoing-publish.client-config" in log
    assert "MQTT_OUTGOING_RATE_LIMITS_CLIENT_CONFIG" in log


def test_v5_publishes_over_the_incoming_limit_get_0x97_and_are_dropped(
    broker_factory, raw_client, uid
):
    limit = 20  # per hour: nothing refills during the test
    broker = broker_factory(env=incoming_env(f"1000:1,{limit}:3600"))
    topic = f"rl/{uid}/in"
    sub = raw_client(broker)
    assert sub.connect(f"{uid}-sub").reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0

    codes = [pub.publish(topic, f"m{i}".encode(), qos=1).reason_code for i in range(50)]
    assert codes == [0] * limit + [QUOTA_EXCEEDED] * (50 - limit)
    # QoS 2 over the limit: PUBREC 0x97 ends the flow; QoS 0 is dropped without a word.
    pub.send(codec.publish(topic, b"q2", 2, False, False, 999, None, codec.MQTT5))
    rec = pub.expect(codec.PUBREC)
    assert rec.packet_id == 999 and rec.reason_code == QUOTA_EXCEEDED
    pub.publish(topic, b"q0", qos=0)

    assert receive_all(sub) == [f"m{i}".encode() for i in range(limit)]
    assert wait_dropped(broker, reason="incoming_rate", want=32) == 32
    # The limit is per publisher: another client has its own budget.
    other = raw_client(broker)
    assert other.connect(f"{uid}-other").reason_code == 0
    assert other.publish(topic, b"x", qos=1).reason_code == 0


def test_v3_publisher_over_the_incoming_limit_is_disconnected(broker_factory, raw_client, uid):
    broker = broker_factory(env=incoming_env("1000:1,3:3600"))
    pub = raw_client(broker, codec.MQTT311)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    for i in range(3):
        assert pub.publish(f"rl/{uid}/v3", b"ok", qos=1).packet_id == i + 1
    # v3 has no negative PUBACK: the broker closes rather than acknowledge a dropped message.
    pub.send(codec.publish(f"rl/{uid}/v3", b"over", 1, False, False, 4, None, codec.MQTT311))
    packets = pub.expect_closed()
    assert not [p for p in packets if p.type == codec.PUBACK], packets
    assert wait_dropped(broker, reason="incoming_rate", want=1) == 1


def test_incoming_limit_holds_its_rate(broker_factory, raw_client, uid):
    """10:1 = a burst of 10, then one token every 100 ms. A publisher that never pauses for a
    whole period gets limit + rate * elapsed PUBLISH packets through, elapsed being the span
    over which the broker handled them; the client's timestamps bound that span."""
    capacity, period, run_for = 10, 1.0, 3.0
    rate = capacity / period
    broker = broker_factory(env=incoming_env(f"{capacity}:{int(period)},1000000:3600"))
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    run = rate_run.publish_for(pub, f"rl/{uid}/rate", run_for, period)
    ok, total, inner, outer = run.accepted, run.offered, run.inner, run.outer
    low = capacity + math.floor(rate * inner) - 1
    high = capacity + math.floor(rate * outer) + 1
    ideal = capacity + rate * (inner + outer) / 2
    print(f"\nincoming {capacity}:{int(period)}: {ok} of {total} accepted over {outer:.2f} s; "
          f"bounds {low}..{high}, midpoint {ideal:.1f}")
    assert low <= ok <= high, f"{ok} accepted of {total}; expected {low}..{high}"
    assert total > high, "the publisher must offer more than the limit"
    assert wait_dropped(broker, reason="incoming_rate", want=total - ok) == total - ok


def test_outgoing_limit_drops_surplus_qos0_copies_only(broker_factory, raw_client, uid):
    limit = 10
    broker = broker_factory(
        env={
            "MQTT_OUTGOING_RATE_LIMITS_ENABLED": "true",
            "MQTT_OUTGOING_RATE_LIMITS_CLIENT_CONFIG": f"1000:1,{limit}:3600",
        }
    )
    topic = f"rl/{uid}/out"
    zero = raw_client(broker)
    assert zero.connect(f"{uid}-q0").reason_code == 0
    assert zero.subscribe(topic, 0).reason_codes == [0]
    one = raw_client(broker)
    assert one.connect(f"{uid}-q1").reason_code == 0
    assert one.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    count = 30
    for i in range(count):
        assert pub.publish(topic, f"m{i}".encode(), qos=1).reason_code == 0

    expected = [f"m{i}".encode() for i in range(count)]
    assert receive_all(one) == expected, "QoS 1 copies are never rate limited"
    assert wait_dropped(broker, reason="outgoing_rate", want=count - limit) == count - limit
    assert receive_all(zero) == expected[:limit]


def test_copies_over_the_device_persisted_limit_are_dropped(broker_factory, raw_client, uid):
    limit = 15
    broker = broker_factory(
        env={
            "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_ENABLED": "true",
            "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_CONFIG": f"1000:1,{limit}:3600",
        }
    )
    topic = f"rl/{uid}/dev"
    dev = raw_client(broker)
    assert dev.connect(uid, **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    assert dev.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    count = 40
    for i in range(count):
        # Admission is not this limit's business: every publish is accepted and stored.
        assert pub.publish(topic, f"m{i}".encode(), qos=1).reason_code == 0
    assert wait_dropped(broker, reason="device_persisted_limit", want=count - limit) == (
        count - limit
    )
    assert receive_all(dev) == [f"m{i}".encode() for i in range(limit)]


# ------------------------------------------------------------------------------ cluster mode


def redis_exists(key: str) -> bool:
    """EXISTS over a bare RESP exchange (no client library needed)."""
    host, _, port = REDIS.partition(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        k = key.encode()
        s.sendall(b"*2\r\n$6\r\nEXISTS\r\n$%d\r\n%s\r\n" % (len(k), k))
        return s.recv(64).startswith(b":1")


def wait_routed(publisher, subscribers, topic: str, timeout: float = 60.0) -> None:
    """QoS 0 probes on the data topic (same msg.all partition as the data; QoS 0 copies take
    the non-persistent path, so they cost no device-persisted token) until every subscriber
    got one; then drains them."""
    waiting = set(range(len(subscribers)))
    deadline = time.monotonic() + timeout
    while waiting:
        assert time.monotonic() < deadline, f"subscribers {waiting} never got a probe"
        publisher.publish(topic, b"probe", qos=0)
        for i in list(waiting):
            try:
                pkt = subscribers[i].recv(0.3)
            except TimeoutError:
                continue
            assert pkt.payload == b"probe", pkt
            waiting.discard(i)
    for s in subscribers:
        while True:
            try:
                pkt = s.recv(0.5)
            except TimeoutError:
                break
            assert pkt.payload == b"probe", pkt


@pytest.mark.cluster
@requires_services
@pytest.mark.timeout(240)
def test_device_persisted_limit_is_shared_by_the_cluster(broker_factory, raw_client, uid):
    """Two nodes, one Redis bucket: 4 persistent DEVICE subscribers (two per node, so both
    nodes' msg.persisted consumers likely own some of them) × 10 messages = 40 copies against a
    cluster-wide limit of 20. Node-local buckets would let up to 40 through."""
    limit = 20
    prefix = new_prefix()
    env = {
        "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_ENABLED": "true",
        "MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_CONFIG": f"100000:1,{limit}:3600",
    }
    a = broker_factory(env=cluster_env(prefix, "node-a", **env))
    b = broker_factory(env=cluster_env(prefix, "node-b", **env))
    topic = f"rl/{uid}/cluster"
    subs = []
    for i, node in enumerate((a, b, a, b)):
        s = raw_client(node, codec.MQTT5, timeout=30)
        assert s.connect(f"{uid}-d{i}", **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
        assert s.subscribe(topic, 1).reason_codes == [1]
        subs.append(s)
    pub = raw_client(a, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    wait_routed(pub, subs, topic)

    for i in range(10):
        assert pub.publish(topic, f"m{i}".encode(), qos=1).reason_code == 0
    copies = 10 * len(subs)
    assert wait_dropped(a, b, reason="device_persisted_limit", want=copies - limit, timeout=60) == (
        copies - limit
    )
    delivered = sum(len(receive_all(s, within=1.5)) for s in subs)
    assert delivered == limit
    assert redis_exists(f"{prefix}:devicePersistedMsgsLimit::bucket")
