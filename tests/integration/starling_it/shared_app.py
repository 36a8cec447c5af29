"""Helpers for shared APPLICATION subscriptions ($share groups of persistent APPLICATION
clients, read from msg.app.shared.<filter> as one consumer group per share)."""

from __future__ import annotations

import time
from collections import Counter

from starling_it import codec


def read_any(members: dict[str, object], total: int, timeout: float = 60.0) -> dict[str, list]:
    """Reads PUBLISHes from every member until `total` arrived (bounded), acknowledging each;
    returns them per member in arrival order."""
    got: dict[str, list] = {name: [] for name in members}
    deadline = time.monotonic() + timeout
    count = 0
    while count < total:
        assert time.monotonic() < deadline, f"{count} of {total} arrived: {summary(got)}"
        for name, conn in members.items():
            try:
                pkt = conn.recv(0.05)
            except TimeoutError:
                continue
            assert pkt.type == codec.PUBLISH, pkt
            conn.ack(pkt)
            got[name].append(pkt)
            count += 1
    return got


def drain(members: dict[str, object], quiet: float = 1.0) -> None:
    """Acknowledges whatever arrives until every member stayed silent for `quiet` seconds."""
    for conn in members.values():
        while True:
            try:
                pkt = conn.recv(quiet)
            except TimeoutError:
                break
            assert pkt.type == codec.PUBLISH, pkt
            conn.ack(pkt)


def wait_every_member_serves(publisher, members: dict[str, object], topics: list[str],
                             timeout: float = 90.0) -> None:
    """QoS 1 probes on `topics` (spread over the shared topic's partitions) until each member got
    one: the group then gives every member a partition, so later data is not moved mid-read.
    The probes are acknowledged and drained."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    i = 0
    while seen != set(members):
        assert time.monotonic() < deadline, f"only {sorted(seen)} got probes"
        assert publisher.publish(topics[i % len(topics)], b"probe", qos=1).reason_code == 0
        i += 1
        for name, conn in members.items():
            try:
                pkt = conn.recv(0.2)
            except TimeoutError:
                continue
            assert pkt.type == codec.PUBLISH and pkt.payload == b"probe", pkt
            conn.ack(pkt)
            seen.add(name)
    drain(members)


def payloads(pkts: list) -> list[bytes]:
    return [p.payload for p in pkts]


def duplicates(got: dict[str, list]) -> list[bytes]:
    counts = Counter(p.payload for pkts in got.values() for p in pkts)
    return [payload for payload, n in counts.items() if n > 1]


def in_topic_order(pkts: list) -> bool:
    """Within one member, each topic's payloads ("m<i>") arrive in publish order."""
    last: dict[str, int] = {}
    for p in pkts:
        n = int(p.payload[1:])
        if last.get(p.topic, -1) >= n:
            return False
        last[p.topic] = n
    return True


def summary(got: dict[str, list]) -> str:
    return ", ".join(f"{name}: {len(pkts)}" for name, pkts in got.items())
