"""Outbound backpressure (issue 7 §1, §4; docs/backpressure.md): a subscriber that stops reading.

- Non-persistent: copies for a channel over its high watermark are skipped and counted, so the
  broker's memory stays bounded under a 10k msg/s stream; every published copy is either
  delivered or counted in droppedMsgs; nonWritableClients returns to 0 when the subscriber
  drains or disconnects abruptly.
- Persistent DEVICE and APPLICATION: delivery pauses and resumes; everything arrives, in order.

starlingd only: droppedMsgs, nonWritableClients and the memory measurement are starlingd's."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from starling_it import codec, credentials
from starling_it.prometheus import metric_sum
from starling_it.raw_client import persistent

pytestmark = [pytest.mark.starlingd_only(reason="starlingd's metrics"), pytest.mark.slow]

RATE = 10_000  # offered msg/s
SECONDS = 8
WARM_UP = 2.0  # seconds before RSS is compared
PAYLOAD = b"x" * 1000
TICK = 0.01  # the publisher sends RATE * TICK packets per tick
# The sanitizer build keeps freed memory in a quarantine (256 MB by default), which would hide
# what the broker itself holds; a small one keeps RSS meaningful. Ignored by other builds.
ASAN = "detect_leaks=0:quarantine_size_mb=8"


def rss_anon_bytes(pid: int) -> int:
    """Anonymous resident memory (heap, stacks): the embedded log's mapped files are left out,
    since the page cache holds them whether or not anyone is slow."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/<pid>/status")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what() if callable(what) else what}")


def gauge(broker, name: str) -> float:
    return metric_sum(broker.metrics(), name)


class ByteCounter(threading.Thread):
    """Reads a socket as fast as it can and counts the bytes (every copy of the stream is the
    same packet, so bytes / packet length = copies received)."""

    def __init__(self, sock: socket.socket):
        super().__init__(daemon=True)
        self.sock = sock
        self.bytes = 0
        self.stop = threading.Event()

    def run(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return
            if not chunk:
                return
            self.bytes += len(chunk)


def stalled_reader(raw_client, broker, client_id: str, topic: str):
    """A v3.1.1 QoS 0 subscriber that reads nothing once subscribed. (Its receive buffer is left
    alone: one below the loopback MSS makes Linux advertise a zero window for good, and the
    stream would crawl through zero-window probes once the reader resumes.)"""
    c = raw_client(broker, codec.MQTT311)
    assert c.connect(client_id).reason_code == 0
    assert c.subscribe(topic, 0).reason_codes == [0]
    assert not c._buf and not c._stash
    return c


def stream(pub, packet: bytes, seconds: float, pid: int, until=None) -> list[tuple[float, int, int]]:
    """Sends `packet` at RATE per second for `seconds` (or until `until()` is true); returns
    samples (seconds since start, copies sent, anonymous RSS) taken every half second."""
    per_tick = int(RATE * TICK)
    burst = packet * per_tick
    sent = 0
    samples = [(0.0, 0, rss_anon_bytes(pid))]
    start = time.monotonic()
    next_sample = start + 0.5
    while time.monotonic() - start < seconds:
        pub.send(burst)
        sent += per_tick
        now = time.monotonic()
        if now >= next_sample:
            samples.append((now - start, sent, rss_anon_bytes(pid)))
            next_sample = now + 0.5
            if until is not None and until():
                break
        # Paced against the start, so a slow tick is made up by the next ones.
        delay = start + (sent / RATE) - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    samples.append((time.monotonic() - start, sent, rss_anon_bytes(pid)))
    return samples


@pytest.mark.timeout(180)
def test_stalled_subscriber_is_shed_and_memory_stays_bounded(broker_factory, raw_client, uid):
    broker = broker_factory(env={"ASAN_OPTIONS": ASAN})
    pid = broker.proc.pid
    topic = f"bp/{uid}"
    packet = codec.publish(topic, PAYLOAD, 0, False, False, None, None, codec.MQTT311)

    stalled = stalled_reader(raw_client, broker, f"{uid}-stalled", topic)
    healthy = raw_client(broker, codec.MQTT311)
    assert healthy.connect(f"{uid}-healthy").reason_code == 0
    assert healthy.subscribe(topic, 0).reason_codes == [0]
    assert not healthy._buf and not healthy._stash
    reader = ByteCounter(healthy.sock)
    reader.start()
    pub = raw_client(broker, codec.MQTT311)
    assert pub.connect(f"{uid}-pub").reason_code == 0

    dropped_before = metric_sum(broker.metrics(), "droppedMsgs_total")
    samples = stream(pub, packet, SECONDS, pid)
    sent = samples[-1][1]

    # The stalled subscriber is still not reading: its channel is over the high watermark.
    wait_for(lambda: gauge(broker, "nonWritableClients") >= 1, 10, "nonWritableClients >= 1")
    # The first seconds warm up thread caches, socket buffers and the allocator; after that a
    # broker that buffered for the stalled subscriber would grow by every copy it is offered,
    # one that sheds stays flat.
    _, warm_sent, warm_rss = next(x for x in samples if x[0] >= WARM_UP)
    peak = max(rss for t, _, rss in samples if t >= WARM_UP)
    offered_after = (sent - warm_sent) * len(packet)
    print(
        f"\nstalled subscriber: {sent} copies offered in {samples[-1][0]:.1f} s; anonymous RSS "
        f"{samples[0][2] / 2**20:.1f} MiB at start, {warm_rss / 2**20:.1f} MiB after "
        f"{WARM_UP} s, peak {peak / 2**20:.1f} MiB after that while "
        f"{offered_after / 2**20:.0f} MiB more were offered"
    )
    # Measured: 0.9-3 MiB (once 8.6) after warm-up while 60 MiB more were offered.
    trace = [(round(t, 1), n, round(r / 2**20, 1)) for t, n, r in samples]
    assert peak - warm_rss < offered_after / 4, trace

    # Drain the stalled subscriber: every copy was delivered to someone or counted as dropped.
    drained = ByteCounter(stalled.sock)
    drained.start()

    last = {}

    def accounted() -> bool:
        samples = broker.metrics()
        last.update(
            dropped=metric_sum(samples, "droppedMsgs_total") - dropped_before,
            healthy=reader.bytes / len(packet),
            stalled=drained.bytes / len(packet),
            received=metric_sum(samples, "incomingPublishMsgs_total"),
            non_writable_clients=metric_sum(samples, "nonWritableClients"),
        )
        return last["healthy"] + last["stalled"] + last["dropped"] == 2 * sent

    try:
        wait_for(accounted, 60, lambda: f"delivered + dropped == 2 x {sent} published: {last}")
        wait_for(lambda: gauge(broker, "nonWritableClients") == 0, 10, "nonWritableClients == 0")
    finally:
        reader.stop.set()
        drained.stop.set()
    assert reader.bytes % len(packet) == 0 and drained.bytes % len(packet) == 0
    samples = broker.metrics()
    non_writable = metric_sum(samples, "droppedMsgs_total", reason="non_writable")
    assert non_writable > 0
    assert metric_sum(samples, "droppedMsgs_total") - dropped_before == non_writable
    stalled_got = drained.bytes // len(packet)
    print(
        f"stalled got {stalled_got}, healthy got {reader.bytes // len(packet)}, "
        f"dropped non_writable {non_writable:.0f}"
    )
    assert stalled_got < sent


def test_gauge_returns_to_zero_when_a_congested_client_disconnects_abruptly(
    broker_factory, raw_client, uid
):
    broker = broker_factory(env={"ASAN_OPTIONS": ASAN})
    topic = f"bp/{uid}"
    packet = codec.publish(topic, PAYLOAD, 0, False, False, None, None, codec.MQTT311)
    stalled = stalled_reader(raw_client, broker, f"{uid}-stalled", topic)
    pub = raw_client(broker, codec.MQTT311)
    assert pub.connect(f"{uid}-pub").reason_code == 0

    stream(
        pub, packet, 30, broker.proc.pid, until=lambda: gauge(broker, "nonWritableClients") >= 1
    )
    assert gauge(broker, "nonWritableClients") == 1
    stalled.abort()  # RST while congested: no DISCONNECT, no draining
    wait_for(lambda: gauge(broker, "nonWritableClients") == 0, 10, "nonWritableClients == 0")
    wait_for(lambda: gauge(broker, "connectedSessions") == 1, 10, "the publisher alone")


# --- persistent subscribers: pause and resume, nothing lost -----------------------------------

PERSISTED = 3000
# The in-flight window (1000) of 16 KiB copies is 16 MiB. The watermarks are set so that the
# stall is seen whatever the kernel does with its buffers:
# - the broker keeps sending until its queue passes HIGH, which it must: the window (16 MiB)
#   exceeds HIGH (10 MiB) plus all the kernel can hold (the subscriber's fixed receive buffer
#   and the broker's send buffer, net.ipv4.tcp_wmem's maximum, 4 MiB by default);
# - once past HIGH it cannot drop below LOW (2 MiB) while the subscriber reads nothing: the
#   kernel could absorb at most those 4.5 MiB more.
# With the defaults (1280/640 KiB), the broker's send buffer, which Linux grows as the
# subscriber acknowledges its first segments, could take back the whole excess: the channel
# turned writable again, delivery paused for its resume backoff (about 30 s), and the gauge
# read 0 (a CI flake).
BIG = 16384
PUB_WINDOW = 200
WATERMARKS = {  # KiB
    "NETTY_WRITE_BUFFER_HIGH_WATER_MARK": "10240",
    "NETTY_WRITE_BUFFER_LOW_WATER_MARK": "2048",
}

LOGINS = {"device": credentials.DEVICE, "application": credentials.APPLICATION}


def numbered(i: int) -> bytes:
    return f"{i:08d}".encode().ljust(BIG, b".")


def publish_numbered(pub, topic: str, count: int) -> None:
    """QoS 1, pipelined, waiting for every PUBACK."""
    outstanding = sent = 0
    while sent < count or outstanding:
        batch = bytearray()
        while sent < count and outstanding < PUB_WINDOW:
            batch += codec.publish(topic, numbered(sent), qos=1, packet_id=sent % 65535 + 1)
            sent += 1
            outstanding += 1
        if batch:
            pub.send(bytes(batch))
        ack = pub.recv()
        assert ack.type == codec.PUBACK and ack.reason_code < 0x80, ack
        outstanding -= 1


@pytest.mark.timeout(240)
@pytest.mark.parametrize("client_type", ["device", "application"])
def test_persistent_subscriber_that_stalls_then_resumes_gets_everything_in_order(
    broker_factory, raw_client, uid, client_type
):
    broker = broker_factory(
        env=credentials.env(ASAN_OPTIONS=ASAN, **WATERMARKS),
        config_text=credentials.config_text(),
    )
    topic = f"bp/{uid}"
    sub = raw_client(broker, codec.MQTT5, timeout=30.0)
    # A fixed receive buffer turns off Linux's autotuning, which would otherwise grow it (up to
    # net.ipv4.tcp_rmem's maximum, 32 MiB on some machines) until the kernel held the whole
    # in-flight window and the channel went writable again before anyone looked. 256 KiB stays
    # far above the loopback MSS (see stalled_reader).
    sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)
    ack = sub.connect(f"{uid}-sub", **persistent(codec.MQTT5, 3600), **LOGINS[client_type])
    assert ack.reason_code == 0
    assert sub.subscribe(topic, 1).reason_codes == [1]
    pub = raw_client(broker, codec.MQTT5, timeout=30.0)
    assert pub.connect(f"{uid}-pub", **LOGINS["device"]).reason_code == 0

    # The subscriber reads nothing while everything is published and acknowledged.
    publish_numbered(pub, topic, PERSISTED)
    wait_for(lambda: gauge(broker, "nonWritableClients") >= 1, 30, "nonWritableClients >= 1")

    got = []
    while len(got) < PERSISTED:
        p = sub.expect_publish(timeout=60)
        index = int(p.payload[:8])
        assert not p.dup, f"copy {index} redelivered without a reconnect"
        got.append(index)
        sub.ack(p)
    assert got == list(range(PERSISTED))
    sub.expect_nothing(0.5)
    wait_for(lambda: gauge(broker, "nonWritableClients") == 0, 10, "nonWritableClients == 0")
    assert metric_sum(broker.metrics(), "droppedMsgs_total") == 0


# --- shared groups: copies no member can take wait for the first one back ---------------------


def test_shared_group_copies_wait_for_whichever_member_comes_back_first(
    broker_factory, raw_client, uid
):
    broker = broker_factory()
    topic = f"bp/{uid}"
    group = f"$share/g-{uid}/{topic}"
    for member in ("m1", "m2"):
        c = raw_client(broker, codec.MQTT5)
        assert c.connect(f"{uid}-{member}", **persistent(codec.MQTT5, 3600)).reason_code == 0
        assert c.subscribe(group, 1).reason_codes == [1]
        c.disconnect_and_wait()
    pub = raw_client(broker, codec.MQTT5)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    count = 20
    for i in range(count):
        assert pub.publish(topic, f"m{i}", qos=1).reason_code == 0

    # m2 comes back first and gets all of them, in order (round-robin would have split them
    # between the two offline members' own inboxes).
    m2 = raw_client(broker, codec.MQTT5, timeout=30.0)
    assert m2.connect(f"{uid}-m2", **persistent(codec.MQTT5, 3600)).session_present
    got = []
    while len(got) < count:
        p = m2.expect_publish()
        got.append(p.payload)
        m2.ack(p)
    assert got == [f"m{i}".encode() for i in range(count)]
    m1 = raw_client(broker, codec.MQTT5)
    assert m1.connect(f"{uid}-m1", **persistent(codec.MQTT5, 3600)).session_present
    m1.expect_nothing(0.5)


def test_a_qos1_subscriber_that_keeps_up_gets_every_copy_past_a_full_mailbox(
        broker_factory, paho_client, uid):
    """Copies are shed only for a client that is itself slow. Here the subscriber's actor has a
    mailbox of 4 and four publishers pipeline 1,500 QoS 1 messages each: the router outruns the
    actor all the time, yet the subscriber (paho, which acknowledges at once and keeps its
    socket drained) gets all 6,000 and nothing is dropped — the router waits for room while the
    connection is writable, and the subscriber's PUBACKs overtake the queued deliveries, so its
    window never stays full."""
    broker = broker_factory(env={"ACTORS_SYSTEM_CLIENT_MAILBOX_CAPACITY": "4"})
    sub = paho_client(broker, f"keeps-up-{uid}", protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)
    pubs = [paho_client(broker, f"pub-{i}-{uid}", protocol=5) for i in range(4)]
    per_publisher = 1500

    def publish_all(i: int) -> None:
        mids = [pubs[i].publish(f"{uid}/{i}", f"{i}:{n}".encode(), qos=1).mid
                for n in range(per_publisher)]
        for mid in mids:
            assert pubs[i]._wait_for(pubs[i]._acks, mid, 60, "PUBACK") < 0x80

    threads = [threading.Thread(target=publish_all, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = sub.expect_messages(4 * per_publisher, timeout=40)
    by_publisher: dict[str, list[int]] = {}
    for m in got:
        p, n = m.payload.decode().split(":")
        by_publisher.setdefault(p, []).append(int(n))
    assert {p: len(ns) for p, ns in by_publisher.items()} == {
        str(i): per_publisher for i in range(4)}
    for ns in by_publisher.values():
        assert ns == sorted(ns), "each publisher's messages arrive in order"
    assert metric_sum(broker.metrics(), "droppedMsgs_total") == 0
