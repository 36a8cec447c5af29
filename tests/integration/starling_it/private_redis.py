"""A redis-server of a test's own, which the test may kill and start again on the same port
and data directory (Redis outages: tests/integration/test_cluster_persistence.py,
test_quota.py). The shared service on 6379 is never touched."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from starling_it.brokers import free_port


class PrivateRedis:
    def __init__(self, data: Path, extra_args: list[str]):
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server is not installed (scripts/install-deps.sh)")
        data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self._command = [binary, "--bind", "127.0.0.1", "--port", str(self.port),
                         "--dir", str(data), *extra_args]
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self._command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)  # polling a condition with a deadline

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


def redis_cli(port: int, *args: str) -> str:
    """One redis-cli command against 127.0.0.1:port; its raw output ("" when it cannot
    connect)."""
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--raw", *args],
                          capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


class PrivateSentinelGroup:
    """A master, one replica and one Redis Sentinel monitoring them as `name` (quorum 1, the
    master judged down after 1 s): a failover in seconds, for tests that kill the master."""

    def __init__(self, data: Path, name: str = "mymaster"):
        if shutil.which("redis-cli") is None:
            pytest.skip("redis-cli is not installed (scripts/install-deps.sh)")
        self.name = name
        self.master = PrivateRedis(data / "master", ["--save", "", "--appendonly", "no"])
        self.replica = PrivateRedis(
            data / "replica",
            ["--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1",
             str(self.master.port)],
        )
        sentinel_dir = data / "sentinel"
        sentinel_dir.mkdir(parents=True, exist_ok=True)
        conf = sentinel_dir / "sentinel.conf"  # the sentinel rewrites it: its own copy
        conf.write_text(
            f"sentinel monitor {name} 127.0.0.1 {self.master.port} 1\n"
            f"sentinel down-after-milliseconds {name} 1000\n"
            f"sentinel failover-timeout {name} 10000\n"
        )
        self.sentinel = PrivateRedis(sentinel_dir, [])
        self.sentinel._command = [shutil.which("redis-server"), str(conf), "--sentinel",
                                  "--bind", "127.0.0.1", "--port", str(self.sentinel.port),
                                  "--dir", str(sentinel_dir)]

    def start(self) -> None:
        self.master.start()
        self.replica.start()
        self.sentinel.start()
        # A failover needs a replica the sentinel knows and that is in sync.
        self.wait_until(lambda: "master_link_status:up" in redis_cli(
            self.replica.port, "INFO", "replication"), "the replica never synced")
        self.wait_until(lambda: str(self.replica.port) in redis_cli(
            self.sentinel.port, "SENTINEL", "replicas", self.name),
            "the sentinel never saw the replica")

    def master_port(self) -> int | None:
        answer = redis_cli(self.sentinel.port, "SENTINEL", "get-master-addr-by-name", self.name)
        lines = answer.splitlines()
        return int(lines[1]) if len(lines) == 2 else None

    @staticmethod
    def wait_until(condition, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, what
            time.sleep(0.1)  # polling a condition with a deadline

    def close(self) -> None:
        for r in (self.sentinel, self.replica, self.master):
            r.close()
