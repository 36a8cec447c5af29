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
        data.mkdir(exist_ok=True)
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
