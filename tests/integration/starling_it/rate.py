"""Measuring a rate limit from the client side (test_rate_limits.py, test_quota.py): a
publisher that never pauses, QoS 1, one PUBLISH at a time, and the client's timestamps that
bound the span over which the broker handled them."""

from __future__ import annotations

import time
from dataclasses import dataclass

QUOTA_EXCEEDED = 0x97


@dataclass
class RateRun:
    accepted: int
    offered: int
    inner: float  # the broker's span is at least this (last send - first ack) ...
    outer: float  # ... and at most this (last ack - first send), in seconds


def publish_for(pub, topic: str, seconds: float, period: float) -> RateRun:
    """Publishes to `topic` for `seconds`; every answer must be success or 0x97. Fails unless
    the broker never saw a pause of a whole `period` between two publishes (each handled between
    its send and its ack): tokens must not pile up beyond the burst while measuring."""
    sent, acked, ok = [], [], 0
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        sent.append(time.monotonic())
        code = pub.publish(topic, b"r", qos=1).reason_code
        acked.append(time.monotonic())
        assert code in (0, QUOTA_EXCEEDED), hex(code)
        ok += code == 0
    longest_gap = max(acked[k + 1] - sent[k] for k in range(len(sent) - 1))
    assert longest_gap < period, f"the publisher stalled {longest_gap:.2f}s; cannot measure"
    return RateRun(ok, len(sent), sent[-1] - acked[0], acked[-1] - sent[0])
