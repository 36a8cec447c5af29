"""A broker whose disk fills up (hardening issue, item 11).

The data directory is a small tmpfs mounted for the test. Filling it must not wedge the broker:
publishes are refused while space is short — v5 PUBACK 0x97 (Quota exceeded), v3 disconnect,
never a false PUBACK — /actuator/health is DOWN with the reason, and once space is freed the
broker accepts publishes again by itself, without a restart. Two ways to run out: below the
free-space watermark (queue.embedded.disk.min-free-bytes), and a truly full file system with
the watermark off (the log's write fails with ENOSPC).

Needs root (mount); skipped when mounting is not permitted. starlingd only."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from starling_it import codec
from starling_it.prometheus import metric_sum

pytestmark = [
    pytest.mark.starlingd_only(reason="the embedded log's disk watermarks"),
    pytest.mark.slow,
]

MIB = 1 << 20
FS_SIZE = 48 * MIB
MIN_FREE = 16 * MIB
QUOTA_EXCEEDED = 0x97
DEADLINE_S = 15.0  # free space is read at most every second; polling stays well inside this


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@pytest.fixture
def small_fs(broker_factory) -> Iterator[Callable[..., object]]:
    """``small_fs(env)`` → a started broker whose data dir is a fresh 48 MiB tmpfs."""
    mounted: list[Path] = []
    brokers: list[object] = []

    def make(env: dict[str, str]):
        broker = broker_factory(env=env, start=False)
        data_dir = Path(broker.data_dir)
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(data_dir)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
        mounted.append(data_dir)
        brokers.append(broker)
        broker.start()
        return broker

    yield make
    for broker in brokers:
        broker.close()  # before the unmount: the daemon holds files there
    for path in mounted:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(data_dir: Path, leave: int) -> Path:
    """Writes a filler file so that about ``leave`` bytes stay free (0: until ENOSPC)."""
    filler = data_dir / "filler"
    with open(filler, "ab", buffering=0) as out:
        try:
            for chunk in (MIB, 4096):
                while leave > 0 and free_bytes(data_dir) > leave + chunk or leave == 0:
                    out.write(b"\0" * chunk)
                if leave > 0:
                    break
        except OSError as err:
            assert leave == 0 and err.errno == errno.ENOSPC, err
    return filler


def publish_v5(raw_client, broker, uid: str, topic: str, payload: bytes) -> int:
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-pub").reason_code == 0
    ack = conn.publish(topic, payload, qos=1)
    conn.disconnect()
    return ack.reason_code


def until(condition: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)  # polling broker state with a deadline
    raise AssertionError(f"{what} not within {DEADLINE_S}s")


def publish_until_refused(raw_client, broker, uid: str, topic: str, size: int = 16) -> bytes:
    """Publishes numbered QoS 1 messages until one is refused; returns the refused payload.

    The free space is read at most every second, so a few publishes right after the disk
    filled may still be accepted (and delivered): that is allowed, a refused one never is."""
    attempt = iter(range(1_000_000))

    def refused() -> bytes | None:
        payload = b"refused-%06d-" % next(attempt) + b"x" * size
        rc = publish_v5(raw_client, broker, uid, topic, payload)
        if rc >= 0x80:
            assert rc == QUOTA_EXCEEDED, f"PUBACK 0x{rc:02x}, expected 0x97 Quota exceeded"
            return payload
        assert rc == 0, f"PUBACK 0x{rc:02x}"
        return None

    return until(refused, "a refused v5 publish")


def check_v3_disconnected(broker, raw_client, uid: str, topic: str) -> bytes:
    """v3.1.1 has no negative acknowledgement: the broker disconnects rather than lie."""
    conn = raw_client(broker, codec.MQTT311)
    assert conn.connect(f"{uid}-v3").reason_code == 0
    payload = b"refused-v3"
    conn.send(codec.publish(topic, payload, 1, False, False, 1, None, codec.MQTT311))
    packets = conn.expect_closed()
    assert not [p for p in packets if p.type == codec.PUBACK], f"false PUBACK: {packets}"
    return payload


def test_low_disk_refuses_publishes_reports_down_and_recovers_by_itself(
    small_fs, raw_client, paho_client, uid, topic
):
    broker = small_fs(
        {
            "STARLING_EMBEDDED_DISK_MIN_FREE_BYTES": str(MIN_FREE),
            "STARLING_EMBEDDED_DISK_SLOW_FREE_BYTES": "0",
        }
    )
    data_dir = Path(broker.data_dir)
    sub = paho_client(broker, client_id=f"{uid}-sub")
    sub.subscribe(topic, qos=1)
    assert publish_v5(raw_client, broker, uid, topic, b"before") == 0
    assert sub.expect_message().payload == b"before"
    assert broker.health()[0] == 200

    filler = fill(data_dir, leave=MIN_FREE // 2)
    refused = [publish_until_refused(raw_client, broker, uid, topic)]
    refused.append(check_v3_disconnected(broker, raw_client, uid, topic))
    status, body = broker.health()
    assert status == 503, body
    assert body["status"] == "DOWN"
    assert body["components"]["diskSpace"]["status"] == "DOWN"
    assert "refused" in body["components"]["diskSpace"]["details"]["reason"]
    assert body["components"]["diskSpace"]["details"]["threshold"] == MIN_FREE
    assert body["components"]["messageLog"]["status"] == "DOWN"
    assert "min-free-bytes" in body["components"]["messageLog"]["details"]["reason"]
    metrics = broker.metrics()
    assert metric_sum(metrics, "messageLog_diskState") == 2
    assert metric_sum(metrics, "messageLog_diskRefusals_total") >= 1

    # Space returns: no restart, publishes go through again and are delivered.
    filler.unlink()
    until(lambda: broker.health()[0] == 200, "health UP after freeing space")
    assert publish_v5(raw_client, broker, uid, topic, b"after") == 0
    received = [m.payload for m in sub.collect_for(2.0)]
    assert b"after" in received
    for payload in refused:
        assert payload not in received, f"{payload!r} was refused yet delivered"
    assert metric_sum(broker.metrics(), "messageLog_diskState") == 0


def test_a_full_file_system_fails_writes_without_wedging_the_log(small_fs, raw_client, uid, topic):
    # The watermark off: the log meets the real ENOSPC from write(2).
    broker = small_fs(
        {
            "STARLING_EMBEDDED_DISK_MIN_FREE_BYTES": "0",
            "STARLING_EMBEDDED_DISK_SLOW_FREE_BYTES": "0",
        }
    )
    data_dir = Path(broker.data_dir)
    assert publish_v5(raw_client, broker, uid, topic, b"before") == 0

    filler = fill(data_dir, leave=0)
    # Publishes that still fit in pages the log already holds may succeed; keep going (32 KiB
    # each, under the 64 KiB packet limit) until the file system says no.
    publish_until_refused(raw_client, broker, uid, topic, size=32 * 1024)
    status, body = broker.health()
    assert status == 503, body
    assert body["components"]["messageLog"]["status"] == "DOWN"
    assert "space" in body["components"]["messageLog"]["details"]["error"].lower()
    assert metric_sum(broker.metrics(), "messageLog_writeErrors_total") >= 1

    filler.unlink()
    # The next publish is written: the failed write does not wedge the log until a restart.
    until(lambda: publish_v5(raw_client, broker, uid, topic, b"after") == 0, "a publish accepted")
    until(lambda: broker.health()[0] == 200, "health UP after the write succeeded")
