"""Broker processes under test: the real ``starlingd`` or Mosquitto 2 (to validate the tests).

Lifecycle: ``start()`` spawns the process and returns once it accepts MQTT connections;
``stop()`` (SIGTERM), ``kill()`` (SIGKILL) end it; ``restart()`` starts it again on the same
data directory and the same ports. ``close()`` (called by the fixtures) kills whatever is
still running. Owned by one test (function scope) or one module; used from the test thread.

Selection: ``STARLING_TEST_BROKER`` = ``starlingd`` (default) or ``mosquitto``; ``STARLINGD``
= path to the daemon binary (default: the first existing build under build/{debug,dev,release}).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from starling_it.prometheus import parse_prometheus

REPO_ROOT = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


def broker_kind() -> str:
    kind = os.environ.get("STARLING_TEST_BROKER", "starlingd").strip().lower()
    if kind not in ("starlingd", "mosquitto"):
        raise ValueError(f"STARLING_TEST_BROKER must be starlingd or mosquitto, not {kind!r}")
    return kind


def starlingd_path() -> Path | None:
    explicit = os.environ.get("STARLINGD")
    if explicit:
        return Path(explicit)
    for preset in ("debug", "dev", "release"):
        candidate = REPO_ROOT / "build" / preset / "src" / "app" / "starlingd"
        if candidate.exists():
            return candidate
    return None


def mosquitto_path() -> Path:
    return Path(os.environ.get("MOSQUITTO", "/usr/sbin/mosquitto"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


class BrokerError(RuntimeError):
    pass


class Broker:
    """Common process handling. Subclasses define the command line and readiness."""

    kind = "abstract"

    def __init__(self, work_dir: Path, env: dict[str, str] | None = None) -> None:
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.work_dir / "data"
        self.data_dir.mkdir(exist_ok=True)
        self.log_path = self.work_dir / "broker.log"
        self.extra_env = dict(env or {})
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.http_port: int | None = None
        # Every MQTT listener's port by name ("tcp", "ssl", "ws", "wss"), from listeners.json.
        self.ports: dict[str, int] = {}
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.exit_codes: list[int] = []

    # -- subclass hooks
    def _command(self) -> list[str]:
        raise NotImplementedError

    def _environment(self) -> dict[str, str]:
        return dict(os.environ)

    def _before_start(self) -> None:
        pass

    def _wait_ready(self, deadline: float) -> None:
        raise NotImplementedError

    # -- lifecycle
    def start(self, wait_ready: bool = True) -> "Broker":
        """Starts the process and waits until it serves (unless `wait_ready` is false: then
        call wait_until_ready() later)."""
        assert not self.running, "broker already running"
        self._before_start()
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts + 1}: {' '.join(self._command())}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(
            self._command(),
            cwd=self.work_dir,
            env=self._environment(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.starts += 1
        if wait_ready:
            self.wait_until_ready()
        return self

    def wait_until_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> "Broker":
        self._wait_ready(time.monotonic() + timeout)
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise BrokerError(
                f"{self.kind} exited with {self.proc.returncode} during start-up; log tail:\n"
                + self.log_tail()
            )

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, wait for exit, return the exit code."""
        assert self.proc is not None, "broker was never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise BrokerError(f"{self.kind} did not exit within {timeout}s of SIGTERM")
        rc = self.proc.returncode
        self.exit_codes.append(rc)
        return rc

    def kill(self) -> None:
        """SIGKILL and reap."""
        assert self.proc is not None, "broker was never started"
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.exit_codes.append(self.proc.returncode)

    def restart(self) -> "Broker":
        """Starts again on the same data dir and ports (stopping with SIGTERM if running)."""
        if self.running:
            self.stop()
        return self.start()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    # -- observation
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 80) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def metrics(self) -> dict[tuple[str, frozenset], float]:
        raise NotImplementedError(f"{self.kind} has no Prometheus endpoint")

    def health(self) -> tuple[int, Any]:
        raise NotImplementedError(f"{self.kind} has no health endpoint")

    def __repr__(self) -> str:
        return f"<{self.kind} {self.host}:{self.port} data={self.data_dir}>"


class StarlingdBroker(Broker):
    kind = "starlingd"

    def __init__(
        self,
        work_dir: Path,
        env: dict[str, str] | None = None,
        binary=None,
        config_text: str | None = None,
    ) -> None:
        super().__init__(work_dir, env)
        self.binary = Path(binary) if binary else starlingd_path()
        if self.binary is None or not self.binary.exists():
            raise BrokerError(
                "starlingd binary not found: set STARLINGD or build build/debug/src/app/starlingd "
                "(or run with STARLING_TEST_BROKER=mosquitto)"
            )
        self.config = REPO_ROOT / "config" / "starling.yml"
        if config_text is not None:
            # A test-specific configuration (lists such as security.mqtt.credentials have no
            # environment variable).
            self.config = self.work_dir / "starling.yml"
            self.config.write_text(config_text)

    @property
    def listeners_file(self) -> Path:
        return self.data_dir / "listeners.json"

    def _command(self) -> list[str]:
        return [str(self.binary), "--config", str(self.config)]

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "STARLING_DATA_DIR": str(self.data_dir),
                "LISTENER_TCP_BIND_ADDRESS": "127.0.0.1",
                "HTTP_BIND_ADDRESS": "127.0.0.1",
                # On a restart, bind the same ports so clients reconnect where they were.
                "LISTENER_TCP_BIND_PORT": str(self.port or 0),
                "HTTP_BIND_PORT": str(self.http_port or 0),
                # The other listeners: loopback, ephemeral (never the fixed default ports, which
                # parallel brokers would fight over), the same ones again on restart.
                **{
                    f"LISTENER_{name.upper()}_{key}": value
                    for name in ("ssl", "ws", "wss")
                    for key, value in (
                        ("BIND_ADDRESS", "127.0.0.1"),
                        ("BIND_PORT", str(self.ports.get(name, 0))),
                    )
                },
                "STARLING_LOG_LEVEL": "debug",
                # Anonymous access is off by default; the suite's clients connect without
                # credentials unless a test (test_auth.py) turns it off again.
                "SECURITY_MQTT_ALLOW_ANONYMOUS": "true",
            }
        )
        env.update(self.extra_env)
        return env

    def _before_start(self) -> None:
        # A stale file from the previous run would make us connect before the daemon listens.
        self.listeners_file.unlink(missing_ok=True)

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            self._check_alive()
            if self.listeners_file.exists():
                try:
                    ports = json.loads(self.listeners_file.read_text())
                except (json.JSONDecodeError, OSError):
                    ports = None  # written by rename, so this is transient at most
                if ports:
                    self.port = int(ports["mqtt_tcp"])
                    self.ports = {
                        key[len("mqtt_") :]: int(value)
                        for key, value in ports.items()
                        if key.startswith("mqtt_")
                    }
                    self.http_port = int(ports["http"]) if ports.get("http") else None
                    return
            time.sleep(0.02)  # polling a condition with a deadline
        self.close()
        raise BrokerError(
            f"starlingd did not write {self.listeners_file} within {STARTUP_TIMEOUT_S}s; "
            "log tail:\n" + self.log_tail()
        )

    def _get(self, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
        assert self.http_port, "starlingd reported no HTTP port"
        url = f"http://{self.host}:{self.http_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def metrics(self) -> dict[tuple[str, frozenset], float]:
        status, body = self._get("/actuator/prometheus")
        assert status == 200, f"/actuator/prometheus answered {status}"
        return parse_prometheus(body.decode())

    def health(self) -> tuple[int, Any]:
        status, body = self._get("/actuator/health")
        try:
            return status, json.loads(body)
        except json.JSONDecodeError:
            return status, body.decode(errors="replace")


class MosquittoBroker(Broker):
    """Mosquitto 2 with persistence under the temp dir; ``conf`` adds raw config lines."""

    kind = "mosquitto"

    def __init__(self, work_dir: Path, conf: list[str] | None = None) -> None:
        super().__init__(work_dir)
        self.extra_conf = list(conf or [])
        self.conf_path = self.work_dir / "mosquitto.conf"

    def _command(self) -> list[str]:
        return [str(mosquitto_path()), "-c", str(self.conf_path)]

    def _before_start(self) -> None:
        if self.port is None:
            self.port = free_port()
        lines = [
            f"listener {self.port} 127.0.0.1",
            "allow_anonymous true",
            "persistence true",
            f"persistence_location {self.data_dir}/",
            "autosave_interval 1",
            "max_queued_messages 100000",
            # A file log is flushed per line (stdout into a file is block-buffered).
            f"log_dest file {self.log_path}",
            "log_type all",
            "connection_messages true",
        ]
        if os.geteuid() == 0:
            lines.append("user root")  # otherwise it drops to 'mosquitto' and can't write data/
        lines += self.extra_conf
        self.conf_path.write_text("\n".join(lines) + "\n")

    def metrics(self) -> dict[tuple[str, frozenset], float]:
        import pytest

        pytest.skip("Mosquitto has no Prometheus endpoint")

    def health(self) -> tuple[int, Any]:
        import pytest

        pytest.skip("Mosquitto has no health endpoint")

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            self._check_alive()
            if _port_accepts(self.host, self.port):
                return
            time.sleep(0.02)  # polling a condition with a deadline
        self.close()
        raise BrokerError(f"mosquitto did not listen on {self.port}; log:\n" + self.log_tail())


def make_broker(
    work_dir: Path,
    env: dict[str, str] | None = None,
    mosquitto_conf: list[str] | None = None,
    kind: str | None = None,
    config_text: str | None = None,
) -> Broker:
    """Creates (does not start) the broker selected by STARLING_TEST_BROKER.

    ``env`` applies to starlingd, ``mosquitto_conf`` to Mosquitto: a test that needs a setting
    passes both spellings so it runs against either broker.
    """
    kind = kind or broker_kind()
    if kind == "mosquitto":
        return MosquittoBroker(work_dir, mosquitto_conf)
    return StarlingdBroker(work_dir, env, config_text=config_text)


def starling_ie_path() -> Path | None:
    """STARLING_IE, else the starling-ie built next to the starlingd under test."""
    explicit = os.environ.get("STARLING_IE")
    if explicit:
        return Path(explicit)
    daemon = starlingd_path()
    return daemon.parent / "starling-ie" if daemon is not None else None


class StarlingIeProcess(Broker):
    """A starling-ie (the integration executor on its own, cluster mode) with the repository's
    configuration and `env`; ready once /actuator/health/readiness answers 200. It has no MQTT
    listener: `port` stays None, `http_port` is its health and metrics port."""

    kind = "starling-ie"

    def __init__(self, work_dir: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(work_dir, env)
        self.binary = starling_ie_path()
        if self.binary is None or not self.binary.exists():
            raise BrokerError("starling-ie binary not found: set STARLING_IE or build it next to "
                              "starlingd (cmake --build --preset debug)")
        self.http_port = free_port()

    def _command(self) -> list[str]:
        return [str(self.binary), "--config", str(REPO_ROOT / "config" / "starling.yml")]

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"HTTP_BIND_ADDRESS": "127.0.0.1", "HTTP_BIND_PORT": str(self.http_port),
                    "STARLING_LOG_LEVEL": "debug"})
        env.update(self.extra_env)
        return env

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                url = f"http://{self.host}:{self.http_port}/actuator/health/readiness"
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet, or 503 while it waits for a store
            time.sleep(0.05)  # polling a condition with a deadline
        self.close()
        raise BrokerError("starling-ie was not ready in time; log tail:\n" + self.log_tail())

    def metrics(self) -> dict[tuple[str, frozenset], float]:
        url = f"http://{self.host}:{self.http_port}/actuator/prometheus"
        with urllib.request.urlopen(url, timeout=5) as resp:
            return parse_prometheus(resp.read().decode())
