"""The cluster-wide throughput quota (mqtt.rate-limits.total, issue 7 §2, docs/backpressure.md
"Throughput quota"), driven through the real daemon with TBMQ's environment variables.

What is charged: a PUBLISH at admission, 1 + its persistent subscribers and shared groups; a
non-persistent (or QoS 0) copy at send; a retained message on SUBSCRIBE. Tokens come from one
bucket (in process when embedded, `<prefix>:totalMsgsLimit::bucket` in Redis in cluster mode)
that each node draws in blocks of block-size.

How the counts are made independent of the machine's speed: most tests give the budget a long
period (a few tokens per hour), so nothing refills while the test runs and the count is exact;
the rate test derives its bounds from the configured rate and the client-side timestamps that
bracket the broker's work (as test_rate_limits.py does). Charges and refusals are read from
throughputQuota*_total and droppedMsgs_total{reason="quota"} on /actuator/prometheus."""

from __future__ import annotations

import math
import socket
import time

import pytest

from starling_it import codec, rest
from starling_it import rate as rate_run
from starling_it.brokers import BrokerError
from starling_it.cluster import REDIS, cluster_env, new_prefix, requires_services
from starling_it.private_redis import PrivateRedis
from starling_it.prometheus import metric_sum
from starling_it.raw_client import persistent

pytestmark = pytest.mark.starlingd_only(reason="the throughput quota is starlingd's (TBMQ) configuration")

QUOTA_EXCEEDED = 0x97
TOKEN = "quota-test-token"


def quota_env(config: str, block_size: int = 0, lease_return_ms: int = 1000, **extra: str):
    env = {
        "MQTT_TOTAL_RATE_LIMITS_ENABLED": "true",
        "MQTT_TOTAL_RATE_LIMITS_CONFIG": config,
        "MQTT_TOTAL_RATE_LIMITS_BLOCK_SIZE": str(block_size),
        "MQTT_TOTAL_RATE_LIMITS_LEASE_RETURN_MS": str(lease_return_ms),
        "SECURITY_ADMIN_TOKEN": TOKEN,
    }
    env.update(extra)
    return env


def metric(broker, name: str, **labels: str) -> float:
    return metric_sum(broker.metrics(), name, **labels)


def wait_metric(broker, name: str, want: float, timeout: float = 20.0, **labels: str) -> float:
    """Polls a counter (it may move on another thread) until it reaches ``want``."""
    deadline = time.monotonic() + timeout
    value = metric(broker, name, **labels)
    while value < want and time.monotonic() < deadline:
        time.sleep(0.1)  # polling a condition with a deadline
        value = metric(broker, name, **labels)
    return value


def api(broker, method: str, path: str, token: str | None = TOKEN):
    return rest.call(broker, method, path, token)


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


# ------------------------------------------------------------------------------ embedded


def test_bad_quota_values_fail_start_naming_the_key(broker_factory):
    for variable, value, key in (
        ("MQTT_TOTAL_RATE_LIMITS_BLOCK_SIZE", "-1", "mqtt.rate-limits.total.block-size"),
        ("MQTT_TOTAL_RATE_LIMITS_CONFIG", "1000", "mqtt.rate-limits.total.config"),
    ):
        broker = broker_factory(env=quota_env("10:1", **{variable: value}), start=False)
        with pytest.raises(BrokerError):
            broker.start()
        log = broker.log_text()
        assert key in log and variable in log, log[-2000:]


def test_quota_off_by_default_charges_nothing(broker_factory, raw_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    for i in range(20):
        assert pub.publish(f"q/{uid}", b"x", qos=1).reason_code == 0
    assert metric(broker, "throughputQuotaCharged_total") == 0
    assert api(broker, "GET", "/api/quota") == (200, {"enabled": False})


def test_v5_refusal_gets_0x97_raises_the_indicator_until_acknowledged(
    broker_factory, raw_client, uid
):
    budget = 5  # per hour: nothing refills during the test
    broker = broker_factory(env=quota_env(f"{budget}:3600", block_size=1))
    assert api(broker, "GET", "/api/quota", token=None)[0] == 401
    status, state = api(broker, "GET", "/api/quota")
    assert status == 200 and state["enabled"] and state["config"] == f"{budget}:3600"
    assert state["blockSize"] == 1 and not state["reached"] and state["reachedAt"] is None

    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    codes = [pub.publish(f"q/{uid}", f"m{i}".encode(), qos=1).reason_code for i in range(8)]
    assert codes == [0] * budget + [QUOTA_EXCEEDED] * 3
    # QoS 2: PUBREC 0x97 ends the flow; QoS 0 is dropped without a word.
    pub.send(codec.publish(f"q/{uid}", b"q2", 2, False, False, 999, None, codec.MQTT5))
    rec = pub.expect(codec.PUBREC)
    assert rec.packet_id == 999 and rec.reason_code == QUOTA_EXCEEDED
    pub.publish(f"q/{uid}", b"q0", qos=0)
    assert wait_metric(broker, "droppedMsgs_total", 5, reason="quota") == 5
    assert metric(broker, "throughputQuotaRefused_total") == 5
    assert metric(broker, "throughputQuotaCharged_total") == budget
    assert metric(broker, "throughputQuotaDegraded_total") == 0

    status, state = api(broker, "GET", "/api/quota")
    assert state["reached"] and state["reachedAt"] > 0 and not state["degraded"]
    assert metric(broker, "throughputQuotaReached") == 1
    assert api(broker, "POST", "/api/quota/acknowledge") == (200, {"acknowledged": True})
    assert not api(broker, "GET", "/api/quota")[1]["reached"]
    assert metric(broker, "throughputQuotaReached") == 0
    assert api(broker, "POST", "/api/quota/acknowledge") == (200, {"acknowledged": False})


def test_v3_publisher_over_the_quota_is_disconnected(broker_factory, raw_client, uid):
    broker = broker_factory(env=quota_env("3:3600", block_size=1))
    pub = raw_client(broker, codec.MQTT311)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    for i in range(3):
        assert pub.publish(f"q/{uid}/v3", b"ok", qos=1).packet_id == i + 1
    # v3 has no negative PUBACK: the broker closes rather than acknowledge a dropped message.
    pub.send(codec.publish(f"q/{uid}/v3", b"over", 1, False, False, 4, None, codec.MQTT311))
    packets = pub.expect_closed()
    assert not [p for p in packets if p.type == codec.PUBACK], packets
    assert wait_metric(broker, "droppedMsgs_total", 1, reason="quota") == 1


def test_quota_holds_its_rate(broker_factory, raw_client, uid):
    """50:1 = a burst of 50, then one token every 20 ms, whoever asks. A publisher that never
    pauses gets capacity + rate * elapsed PUBLISH packets through; the lease's blocks (5) and
    empty backoff (100 ms) only shift when tokens are drawn, never how many exist."""
    capacity, period, run_for = 50, 1.0, 3.0
    rate = capacity / period
    block = 5
    broker = broker_factory(env=quota_env(f"{capacity}:{int(period)}", block_size=block))
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    run = rate_run.publish_for(pub, f"q/{uid}/rate", run_for, period)
    ok, total, inner, outer = run.accepted, run.offered, run.inner, run.outer
    # The bucket started full when the daemon started (before the first send), so the upper
    # bound counts from the broker's start: at most capacity + rate * (time since start-up).
    # Lower bound: the refill over the span, less what the lease may still hold (one block)
    # and one empty backoff of refill that a refusal streak may leave undrawn at the end.
    low = math.floor(rate * inner) - block - math.ceil(rate * 0.1) - 1
    high = capacity + math.floor(rate * outer) + 1
    print(f"\nquota {capacity}:{int(period)} block {block}: {ok} of {total} accepted over "
          f"{outer:.2f} s; bounds {low}..{high}, capacity + rate x span {capacity + rate * outer:.1f}")
    assert low <= ok <= high, f"{ok} accepted of {total}; expected {low}..{high}"
    assert total > high, "the publisher must offer more than the quota"
    assert wait_metric(broker, "droppedMsgs_total", total - ok, reason="quota") == total - ok


def test_fan_out_is_charged_at_admission_and_a_shortfall_is_drawn_on_demand(
    broker_factory, raw_client, uid
):
    """Cost = 1 + persistent subscribers (QoS > 0 both ways) + shared groups. Five persistent
    subscribers and one shared group make a publish of cost 7 against a block of 1: the lease
    draws the shortfall on demand and the publish passes. A QoS 0 subscription of a persistent
    session, and a non-persistent subscriber, add nothing at admission; non-persistent copies
    (the shared member's and the plain subscriber's) cost 1 each at send."""
    broker = broker_factory(env=quota_env("1000:3600", block_size=1))
    topic = f"q/{uid}/fan"
    subs = []
    for i in range(5):
        s = raw_client(broker)
        assert s.connect(f"{uid}-p{i}", **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
        assert s.subscribe(topic, 1).reason_codes == [1]
        subs.append(s)
    qos0 = raw_client(broker)
    assert qos0.connect(f"{uid}-q0", **persistent(codec.MQTT5, expiry=3600)).reason_code == 0
    assert qos0.subscribe(topic, 0).reason_codes == [0]
    shared = raw_client(broker)
    assert shared.connect(f"{uid}-s").reason_code == 0
    assert shared.subscribe(f"$share/g/{topic}", 1).reason_codes == [1]
    plain = raw_client(broker)
    assert plain.connect(f"{uid}-n").reason_code == 0
    assert plain.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    before = metric(broker, "throughputQuotaCharged_total")

    assert pub.publish(topic, b"fan", qos=1).reason_code == 0
    for s in subs + [qos0, shared, plain]:
        assert receive_all(s) == [b"fan"]
    # 7 at admission + 1 per non-persistent or QoS 0 copy sent (qos0, shared, plain).
    assert wait_metric(broker, "throughputQuotaCharged_total", before + 10) == before + 10
    assert metric(broker, "droppedMsgs_total", reason="quota") == 0


def test_non_persistent_copies_over_the_quota_are_not_sent(broker_factory, raw_client, uid):
    """A QoS 0 stream with one non-persistent subscriber: each message costs 1 at admission
    and 1 when its copy is sent. A budget of 10 covers 5 messages; the sixth publish is
    refused (dropped, reason quota). Messages go one at a time, each waiting for its copy."""
    budget = 10
    broker = broker_factory(env=quota_env(f"{budget}:3600", block_size=1))
    topic = f"q/{uid}/np"
    sub = raw_client(broker)
    assert sub.connect(f"{uid}-sub").reason_code == 0
    assert sub.subscribe(topic, 0).reason_codes == [0]
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    got = []
    for i in range(8):
        pub.publish(topic, f"m{i}".encode(), qos=0)
        got += receive_all(sub, within=0.5)
    assert got == [f"m{i}".encode() for i in range(budget // 2)]
    assert metric(broker, "throughputQuotaCharged_total") == budget
    assert wait_metric(broker, "droppedMsgs_total", 3, reason="quota") == 3
    assert metric(broker, "throughputQuotaRefused_total") == 3


def test_retained_messages_on_subscribe_are_charged(broker_factory, raw_client, uid):
    """Three retained messages take 3 of a budget of 4; a SUBSCRIBE matching all three is
    granted, one retained message is sent and two are refused and counted."""
    broker = broker_factory(env=quota_env("4:3600", block_size=1))
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    for i in range(3):
        assert pub.publish(f"q/{uid}/r/{i}", b"kept", qos=1, retain=True).reason_code == 0
    sub = raw_client(broker)
    assert sub.connect(f"{uid}-sub").reason_code == 0
    assert sub.subscribe(f"q/{uid}/r/#", 1).reason_codes == [1]
    got = receive_all(sub)
    assert len(got) == 1, got
    assert wait_metric(broker, "droppedMsgs_total", 2, reason="quota") == 2


# ------------------------------------------------------------------------------ cluster mode
# Redis answers asynchronously (the embedded store answers inline), so these also exercise the
# charges that wait for a draw.


def redis_command(*args: str, port: int | None = None) -> bytes:
    """One command over a bare RESP exchange (no client library needed)."""
    host, _, default_port = REDIS.partition(":")
    with socket.create_connection((host, port or int(default_port)), timeout=5) as s:
        parts = [a.encode() for a in args]
        s.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts))
        return s.recv(4096)


def cluster_node(broker_factory, prefix: str, node_id: str, **env: str):
    return broker_factory(env=cluster_env(prefix, node_id, **env))


@pytest.mark.cluster
@requires_services
@pytest.mark.timeout(180)
def test_two_nodes_share_one_budget_in_redis(broker_factory, raw_client, uid):
    """30 tokens per hour for the whole cluster, publishers on both nodes: together they get
    30 through, less at most what the two leases still hold (a block each); node-local
    budgets would let 60 through."""
    budget, block = 30, 2
    prefix = new_prefix()
    env = quota_env(f"{budget}:3600", block_size=block)
    a = cluster_node(broker_factory, prefix, "node-a", **env)
    b = cluster_node(broker_factory, prefix, "node-b", **env)
    pubs = []
    for i, node in enumerate((a, b)):
        p = raw_client(node, codec.MQTT5, timeout=30)
        assert p.connect(f"{uid}-pub{i}").reason_code == 0
        pubs.append(p)
    ok = 0
    for i in range(2 * budget):
        code = pubs[i % 2].publish(f"q/{uid}/c{i % 2}", b"x", qos=1).reason_code
        assert code in (0, QUOTA_EXCEEDED), hex(code)
        ok += code == 0
    print(f"\ntwo nodes, quota {budget}:3600 block {block}: {ok} of {2 * budget} accepted")
    assert budget - 2 * block <= ok <= budget, ok
    refused = metric(a, "throughputQuotaRefused_total") + metric(b, "throughputQuotaRefused_total")
    assert refused == 2 * budget - ok
    assert redis_command("EXISTS", f"{prefix}:totalMsgsLimit::bucket").startswith(b":1")


@pytest.mark.cluster
@requires_services
@pytest.mark.timeout(180)
@pytest.mark.parametrize("lease_return_ms", [0, 300], ids=["no-return", "return"])
def test_an_idle_nodes_lease_comes_back(broker_factory, raw_client, uid, lease_return_ms):
    """20 tokens per hour, blocks of 10: each node draws a block when it starts, which empties
    the bucket. Node A stays idle. With the lease return on, A gives its block back and node B
    gets all 20 through; with it off (0), A sits on its 10 and B gets only its own."""
    budget, block = 20, 10
    prefix = new_prefix()
    env = quota_env(f"{budget}:3600", block_size=block, lease_return_ms=lease_return_ms)
    a = cluster_node(broker_factory, prefix, "node-a", **env)
    b = cluster_node(broker_factory, prefix, "node-b", **env)
    if lease_return_ms:
        deadline = time.monotonic() + 10
        while api(a, "GET", "/api/quota")[1]["localBalance"] != 0:
            assert time.monotonic() < deadline, "node A never returned its lease"
            time.sleep(0.1)  # polling a condition with a deadline
    else:
        assert api(a, "GET", "/api/quota")[1]["localBalance"] == block
    pub = raw_client(b, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    codes = [pub.publish(f"q/{uid}/idle", b"x", qos=1).reason_code for _ in range(budget + 2)]
    want = budget if lease_return_ms else block
    assert codes == [0] * want + [QUOTA_EXCEEDED] * (budget + 2 - want), codes


@pytest.mark.cluster
@requires_services
@pytest.mark.timeout(180)
def test_a_publish_waiting_for_tokens_keeps_the_order_of_what_follows(
    broker_factory, raw_client, uid
):
    """Blocks of 1: most publishes find the balance empty and wait for a Redis draw. The QoS 0
    messages and the DISCONNECT sent after one queue behind it: every message reaches the
    subscriber, in order, and the will (published only on an abnormal close) is not sent."""
    prefix = new_prefix()
    node = cluster_node(broker_factory, prefix, "node-a", **quota_env("100000:1", block_size=1))
    sub = raw_client(node, codec.MQTT5, timeout=30)
    assert sub.connect(f"{uid}-sub").reason_code == 0
    assert sub.subscribe(f"q/{uid}/#", 0).reason_codes == [0]
    # The subscription reaches the msg.all consumers through Kafka: probe until routed.
    probe = raw_client(node, codec.MQTT5, timeout=30)
    assert probe.connect(f"{uid}-probe").reason_code == 0
    deadline = time.monotonic() + 60
    while True:
        assert time.monotonic() < deadline, "the subscription was never routed"
        probe.publish(f"q/{uid}/probe", b"p", qos=0)
        if receive_all(sub, within=0.3):
            break
    receive_all(sub, within=0.5)
    pub = raw_client(node, codec.MQTT5, timeout=30)
    will = codec.Will(topic=f"q/{uid}/will", payload=b"gone")
    assert pub.connect(f"{uid}-pub", will=will).reason_code == 0
    count = 300
    data = b"".join(
        codec.publish(f"q/{uid}/data", f"m{i}".encode(), 0, False, False, None, None, codec.MQTT5)
        for i in range(count)
    )
    pub.send(data + codec.disconnect(0, None, codec.MQTT5))
    pub.expect_closed()
    got = receive_all(sub, within=2.0)
    assert got == [f"m{i}".encode() for i in range(count)]
    assert metric(node, "throughputQuotaChargeWaits_total") > 0, "no publish had to wait"
    assert metric(node, "throughputQuotaWaitingPackets") == 0


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of its own that the test may stop and start again on the same port."""
    r = PrivateRedis(tmp_path / "redis", ["--save", "", "--appendonly", "no"])
    r.start()
    yield r
    r.close()


@pytest.mark.cluster
@pytest.mark.slow
@requires_services
@pytest.mark.timeout(240)
def test_redis_outage_admits_within_the_grace_then_refuses_as_degraded(
    broker_factory, raw_client, uid, private_redis
):
    """Redis goes away: publishes beyond the local balance are admitted for the fixed 30 s
    grace (counted in throughputQuotaGraceAdmitted_total), then refused with 0x97 and counted
    in throughputQuotaDegraded_total and droppedMsgs{quota}, without raising the "reached"
    indicator. When Redis is back, charges are counted against the bucket again."""
    grace = 30.0
    prefix = new_prefix()
    node = cluster_node(
        broker_factory, prefix, "node-a",
        **quota_env("100000:1", block_size=1, REDIS_PORT=str(private_redis.port)),
    )
    pub = raw_client(node, codec.MQTT5, timeout=30)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    assert pub.publish(f"q/{uid}/g", b"before", qos=1).reason_code == 0

    private_redis.kill()
    lost = time.monotonic()
    # Within the grace (a block of 1 is spent at once, so these need the store).
    for i in range(10):
        assert pub.publish(f"q/{uid}/g", f"in{i}".encode(), qos=1).reason_code == 0
    assert time.monotonic() - lost < grace / 2, "too slow to test the grace"
    assert metric(node, "throughputQuotaGraceAdmitted_total") >= 9
    status, state = api(node, "GET", "/api/quota")
    assert state["degraded"] and state["degradedSince"] > 0

    # Past the grace: refused. The grace counts from the first failed draw, after `lost`.
    deadline = lost + grace + 20
    while True:
        code = pub.publish(f"q/{uid}/g", b"late", qos=1).reason_code
        if code == QUOTA_EXCEEDED:
            break
        assert code == 0
        assert time.monotonic() < deadline, "never refused past the grace"
        time.sleep(0.5)  # polling a condition with a deadline
    assert time.monotonic() - lost >= grace - 1
    assert metric(node, "throughputQuotaDegraded_total") >= 1
    assert metric(node, "droppedMsgs_total", reason="quota") == metric(
        node, "throughputQuotaDegraded_total"
    )
    assert not api(node, "GET", "/api/quota")[1]["reached"]

    private_redis.start()
    deadline = time.monotonic() + 30
    while pub.publish(f"q/{uid}/g", b"back", qos=1).reason_code != 0:
        assert time.monotonic() < deadline, "charges never recovered after Redis came back"
        time.sleep(0.5)  # polling a condition with a deadline
    assert not api(node, "GET", "/api/quota")[1]["degraded"]
