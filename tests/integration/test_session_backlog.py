"""Persistent sessions give every acknowledged message to the client that resumes them (issue 12),
checked with clients Starling did not write: paho-mqtt, mosquitto_sub (libmosquitto) and MQTT.js.

- A backlog longer than the in-flight window (10,000, the default inbox limit, against a window
  of 1,000) drains on one connection, in order, without duplicates — also when the broker is
  killed mid-drain (then duplicates only with DUP set).
- An MQTT 5 client that resumes with Session Expiry 0 gets its queue; the session then ends with
  that connection.
- A 3.1.1 publisher that pipelines past the Receive Maximum is slowed down, not disconnected; at
  5.0 the same is a protocol violation (0x93, test_flow_control.py).
- The configured maximum session expiry applies to 0xFFFFFFFF and to 3.1.1 sessions.

The cluster versions (DEVICE inbox in Redis, APPLICATION topic in Kafka) are in
test_session_backlog_cluster.py."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from starling_it import codec
from starling_it.client import persistent
from starling_it.prometheus import metric_sum
from starling_it.streams import publish_stream

pytestmark = pytest.mark.starlingd_only(reason="the defects and limits under test are starlingd's")

BACKLOG = 10_000  # mqtt.persistent-session.device.persisted-messages.limit, the default
JS_DIR = Path(__file__).parent / "js"


def queue_backlog(broker, raw_client, uid: str, topic: str, count: int = BACKLOG, **login) -> None:
    pub = raw_client(broker, codec.MQTT5, timeout=60.0)
    assert pub.connect(f"{uid}-pub", **login).reason_code == 0
    publish_stream(pub, topic, 0, count)
    pub.disconnect()


def offline_subscriber(paho_client, broker, cid: str, protocol: int, topic: str, **kw) -> None:
    sub = paho_client(broker, client_id=cid, protocol=protocol, **persistent(protocol, 3600), **kw)
    assert sub.subscribe(topic, qos=1) == [1]
    sub.disconnect()


def expect_in_order(sub, count: int, first: int = 0, timeout: float = 120.0) -> None:
    """`count` messages with payloads first.., in order, none a re-delivery."""
    deadline = time.monotonic() + timeout
    for expected in range(first, first + count):
        msg = sub.expect_message(timeout=max(deadline - time.monotonic(), 0.1))
        assert msg.payload == str(expected).encode(), f"got {msg.payload!r}, want {expected}"
        assert msg.qos == 1 and not msg.dup, f"message {expected}: qos {msg.qos} dup {msg.dup}"


@pytest.mark.timeout(300)
def test_backlog_longer_than_the_window_drains_on_one_connection(
    broker_factory, paho_client, raw_client, protocol, uid
):
    broker = broker_factory()
    topic = f"bl/{uid}"
    offline_subscriber(paho_client, broker, uid, protocol, topic)
    queue_backlog(broker, raw_client, uid, topic)

    sub = paho_client(broker, client_id=uid, protocol=protocol, **persistent(protocol, 3600))
    assert sub.session_present
    expect_in_order(sub, BACKLOG)
    sub.expect_no_message(0.5)  # nothing twice
    # The session keeps working on the same connection after the backlog.
    queue_backlog(broker, raw_client, f"{uid}-2", topic, count=10)
    expect_in_order(sub, 10)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("version", ["mqttv311", "mqttv5"])
def test_mosquitto_sub_drains_the_whole_backlog(broker_factory, raw_client, uid, version):
    """The report's own reproduction: `mosquitto_sub -c -i ID -q 1` got 1,000, then silence."""
    mosquitto_sub = shutil.which("mosquitto_sub")
    if mosquitto_sub is None:
        pytest.skip("mosquitto_sub missing: run scripts/install-deps.sh")
    broker = broker_factory()
    topic = f"ms/{uid}"
    base = [mosquitto_sub, "-h", broker.host, "-p", str(broker.port), "-V", version,
            "-c", "-i", uid, "-q", "1", "-t", topic]
    if version == "mqttv5":
        base += ["-x", "3600"]
    # Subscribe and leave (-E: exit once subscribed).
    subprocess.run(base + ["-E"], check=True, timeout=30, capture_output=True)
    queue_backlog(broker, raw_client, uid, topic)
    # -C: exit after that many messages; -W: give up after 120 s.
    out = subprocess.run(base + ["-C", str(BACKLOG), "-W", "120"], timeout=150,
                         capture_output=True, text=True)
    lines = out.stdout.splitlines()
    assert out.returncode == 0, f"mosquitto_sub exited {out.returncode} after {len(lines)} lines"
    assert lines == [str(i) for i in range(BACKLOG)]


@pytest.mark.timeout(300)
def test_sigkill_mid_drain_loses_nothing_acknowledged(
    broker_factory, paho_client, raw_client, protocol, uid
):
    broker = broker_factory()
    topic = f"bk/{uid}"
    offline_subscriber(paho_client, broker, uid, protocol, topic)
    queue_backlog(broker, raw_client, uid, topic)

    sub = paho_client(broker, client_id=uid, protocol=protocol, **persistent(protocol, 3600))
    received = [sub.expect_message(timeout=60) for _ in range(3000)]
    broker.kill()  # SIGKILL mid-drain: the rest is in the inbox, some of it in flight
    received += sub.drain()
    sub.close()
    broker.restart()

    again = paho_client(broker, client_id=uid, protocol=protocol, **persistent(protocol, 3600))
    assert again.session_present
    seen: set[bytes] = {m.payload for m in received}
    for m in received:
        assert not m.dup, "nothing was re-delivered before the kill"
    deadline = time.monotonic() + 120
    last = -1
    while len(seen) < BACKLOG:
        msg = again.expect_message(timeout=max(deadline - time.monotonic(), 0.1))
        if msg.payload in seen:
            assert msg.dup, f"{msg.payload!r} delivered twice, the second time without DUP"
            continue
        value = int(msg.payload)
        assert value > last, f"{value} after {last}: new messages out of order"
        last = value
        seen.add(msg.payload)
    assert seen == {str(i).encode() for i in range(BACKLOG)}


def test_v5_resume_with_session_expiry_0_gets_the_queue_then_the_session_ends(
    broker_factory, paho_client, raw_client, uid
):
    broker = broker_factory()
    topic = f"e0/{uid}"
    offline_subscriber(paho_client, broker, uid, 5, topic)
    queue_backlog(broker, raw_client, uid, topic, count=100)

    # Clean Start 0 and no Session Expiry Interval: the session is resumed [MQTT-3.1.2-4]; the
    # new interval (0) only says it ends when this connection does.
    sub = paho_client(broker, client_id=uid, protocol=5, clean_start=False)
    assert sub.session_present
    expect_in_order(sub, 100)
    sub.disconnect()
    # The DISCONNECT and the next CONNECT travel on two TCP connections: until the broker has
    # read the first, it cannot know it came first, and a CONNECT it reads before it takes the
    # session over (as MQTT says it should). Reconnect once the broker has seen the end.
    deadline = time.monotonic() + 10
    while metric_sum(broker.metrics(), "connectedSessions") != 0:
        assert time.monotonic() < deadline, "the broker never saw the DISCONNECT"
        time.sleep(0.02)

    again = paho_client(broker, client_id=uid, protocol=5, **persistent(5, 3600))
    assert not again.session_present, "a session with expiry 0 ends with its connection"
    queue_backlog(broker, raw_client, f"{uid}-2", topic, count=5)
    again.expect_no_message(0.5)  # its subscription ended with it


def test_v311_publisher_pipelining_past_the_window_is_not_disconnected(
    broker_factory, paho_client, raw_client, uid
):
    """3.1.1 has no Receive Maximum: 3,000 QoS 1 and then 3,000 QoS 2 PUBLISHes sent without
    waiting (the window is 1,000) are all acknowledged, in order, and all delivered."""
    broker = broker_factory()
    topic = f"pl/{uid}"
    sub = paho_client(broker, client_id=f"{uid}-sub", protocol=4)
    assert sub.subscribe(topic, qos=2) == [2]

    pub = raw_client(broker, codec.MQTT311, timeout=60.0)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    count = 3000
    pub.send(b"".join(codec.publish(topic, f"a{i}", qos=1, packet_id=i + 1, protocol=codec.MQTT311) for i in range(count)))
    for i in range(count):
        pkt = pub.recv()
        assert (pkt.type, pkt.packet_id) == (codec.PUBACK, i + 1), pkt
    pub.send(b"".join(codec.publish(topic, f"b{i}", qos=2, packet_id=i + 1, protocol=codec.MQTT311) for i in range(count)))
    for i in range(count):
        pkt = pub.recv()
        assert (pkt.type, pkt.packet_id) == (codec.PUBREC, i + 1), pkt
    pub.send(b"".join(codec.pubrel(i + 1, protocol=codec.MQTT311) for i in range(count)))
    for i in range(count):
        pkt = pub.recv()
        assert (pkt.type, pkt.packet_id) == (codec.PUBCOMP, i + 1), pkt
    pub.send(codec.pingreq())
    assert pub.recv().type == codec.PINGRESP, "the publisher is still connected"

    got = [m.payload for m in sub.expect_messages(2 * count, timeout=120)]
    assert got == [f"a{i}".encode() for i in range(count)] + [f"b{i}".encode() for i in range(count)]


def test_mqttjs_pipelining_publisher_at_311(broker_factory, paho_client, uid):
    """MQTT.js sends every queued PUBLISH at once (no window of its own at 3.1.1)."""
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "mqtt").is_dir():
        pytest.skip("node or MQTT.js missing: run scripts/install-deps.sh (npm ci in js/)")
    broker = broker_factory()
    topic = f"js/{uid}"
    sub = paho_client(broker, client_id=f"{uid}-sub", protocol=4)
    assert sub.subscribe(topic, qos=1) == [1]
    count = 3000
    out = subprocess.run(
        [node, str(JS_DIR / "publish_burst.mjs"), str(broker.port), topic, "4", str(count)],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"acknowledged {count}"
    got = [m.payload for m in sub.expect_messages(count, timeout=120)]
    assert got == [str(i).encode() for i in range(count)]


def session_count(broker) -> float:
    return metric_sum(broker.metrics(), "allClientSessions")


@pytest.mark.slow
@pytest.mark.parametrize("protocol_level", [4, 5], ids=["v311", "v5-ffffffff"])
def test_session_expiry_maximum_applies_on_every_path(
    broker_factory, paho_client, uid, protocol_level
):
    """mqtt.client-session-expiry.max-expiry-interval caps a v5 0xFFFFFFFF (CONNACK says so)
    and gives 3.1.1 persistent sessions, which have no interval of their own, the maximum."""
    broker = broker_factory(env={"MQTT_CLIENT_SESSION_EXPIRY_MAX_EXPIRY_INTERVAL": "2"})
    kw = {"clean_start": False}
    if protocol_level == 5:
        kw["session_expiry"] = 0xFFFFFFFF
    sub = paho_client(broker, client_id=uid, protocol=protocol_level, **kw)
    if protocol_level == 5:
        assert sub.connack.properties.get("session_expiry_interval") == 2
    assert sub.subscribe(f"ex/{uid}", qos=1) == [1]
    before = session_count(broker)
    sub.disconnect()
    # The session is gone within the maximum (the expiry is what is under test: wait for the
    # broker's own count of sessions to drop, bounded).
    deadline = time.monotonic() + 10
    while session_count(broker) >= before:
        assert time.monotonic() < deadline, "the session did not expire within 10 s (maximum 2 s)"
        time.sleep(0.2)
    again = paho_client(broker, client_id=uid, protocol=protocol_level, **kw)
    assert not again.session_present
