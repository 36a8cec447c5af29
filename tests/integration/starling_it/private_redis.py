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


class PrivateRedisCluster:
    """A Redis Cluster of the test's own: `masters` masters with `replicas` replicas each, on
    free loopback ports (cluster bus on port + 10000), a node judged failed after 2 s so a
    replica takes over in seconds. A killed node can be started again on its port and data
    directory: it rejoins (a former master as a replica of its successor). Each node logs to
    redis.log in its directory; diagnostics() gathers what a failed wait should show."""

    def __init__(self, data: Path, masters: int = 3, replicas: int = 1):
        if shutil.which("redis-cli") is None:
            pytest.skip("redis-cli is not installed (scripts/install-deps.sh)")
        self.replicas = replicas
        self.nodes: list[PrivateRedis] = []
        for i in range(masters * (1 + replicas)):
            node_dir = data / f"node-{i}"
            node = PrivateRedis(node_dir, [])
            while node.port + 10000 > 65535:  # the bus port must exist too
                node.port = free_port()
            node._command = [shutil.which("redis-server"), "--bind", "127.0.0.1",
                             "--port", str(node.port), "--dir", str(node_dir),
                             "--save", "", "--appendonly", "no",
                             "--logfile", str(node_dir / "redis.log"),
                             "--cluster-enabled", "yes",
                             # 2 s, not less: on a loaded CI machine a shorter timeout flags live
                             # nodes as failing and elections time out.
                             "--cluster-node-timeout", "2000",
                             # Redis lets a replica fail over only while its data is younger
                             # than node-timeout x 10 + 10 s; elections that keep failing on a
                             # busy machine would use that up and leave the slots unserved for
                             # good. 0: the replica always stands (it has every write WAIT
                             # counted, which is what the tests rely on).
                             "--cluster-replica-validity-factor", "0",
                             "--cluster-config-file", "nodes.conf"]
            self.nodes.append(node)

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        create = subprocess.run(
            ["redis-cli", "--cluster", "create",
             *[f"127.0.0.1:{n.port}" for n in self.nodes],
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=60)
        assert create.returncode == 0, create.stdout + create.stderr
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 60) -> None:
        """Until every running node says cluster_state:ok and every master has its replicas."""
        def healthy() -> bool:
            running = [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]
            if not all("cluster_state:ok" in redis_cli(n.port, "CLUSTER", "INFO")
                       for n in running):
                return False
            return len(self.masters()) * (1 + self.replicas) == len(running)
        PrivateSentinelGroup.wait_until(healthy, "the Redis Cluster never became healthy",
                                        timeout=timeout)

    def masters(self) -> list[int]:
        """Ports of the masters serving slots, from the first node that answers."""
        for node in self.nodes:
            if node.proc is None or node.proc.poll() is not None:
                continue
            lines = redis_cli(node.port, "CLUSTER", "NODES").splitlines()
            if lines:
                return sorted(int(line.split()[1].split("@")[0].rsplit(":", 1)[1])
                              for line in lines
                              if "master" in line.split()[2] and "fail" not in line.split()[2]
                              and len(line.split()) > 8)
        return []

    def node(self, port: int) -> PrivateRedis:
        return next(n for n in self.nodes if n.port == port)

    def diagnostics(self) -> str:
        """Every node's view of the cluster and the tail of its log: for a failed wait."""
        parts = []
        for node in self.nodes:
            running = node.proc is not None and node.proc.poll() is None
            parts.append(f"--- node {node.port} ({'running' if running else 'stopped'})")
            if running:
                parts.append(redis_cli(node.port, "CLUSTER", "NODES"))
            log = Path(node._command[node._command.index("--dir") + 1]) / "redis.log"
            if log.exists():
                parts.extend(log.read_text(errors="replace").splitlines()[-15:])
        return "\n".join(parts)

    def seeds(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def close(self) -> None:
        for node in self.nodes:
            node.close()
