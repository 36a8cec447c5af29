"""Interoperability with the Mosquitto command-line clients (Debian mosquitto-clients)."""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

pytestmark = pytest.mark.skipif(
    not (shutil.which("mosquitto_pub") and shutil.which("mosquitto_sub")),
    reason="mosquitto-clients not installed",
)

CLI_VERSION = {4: "311", 5: "5"}


class _Sub:
    """mosquitto_sub in debug mode; its stdout is read on a thread so SUBACK can be awaited."""

    def __init__(self, broker, version: str, topic_filter: str, count: int, extra=()):
        self.proc = subprocess.Popen(
            [
                # Line-buffered stdout, else the debug lines sit in a pipe buffer.
                *(["stdbuf", "-oL"] if shutil.which("stdbuf") else []),
                "mosquitto_sub", "-h", broker.host, "-p", str(broker.port), "-V", version,
                "-t", topic_filter, "-q", "1", "-C", str(count), "-W", "20", "-d",
                "-F", "MSG|%t|%q|%p", *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self.subscribed = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if "received SUBACK" in line:
                self.subscribed.set()

    def wait_subscribed(self, timeout: float = 10.0) -> None:
        assert self.subscribed.wait(timeout), "mosquitto_sub never got SUBACK:\n" + "\n".join(
            self.lines
        )

    def finish(self, timeout: float = 20.0) -> list[tuple[str, str, str]]:
        rc = self.proc.wait(timeout)
        self.reader.join(5)
        assert rc == 0, f"mosquitto_sub exited {rc}:\n" + "\n".join(self.lines)
        return [tuple(line.split("|", 3)[1:]) for line in self.lines if line.startswith("MSG|")]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _pub(broker, version: str, topic: str, message: str, *extra: str) -> None:
    out = subprocess.run(
        ["mosquitto_pub", "-h", broker.host, "-p", str(broker.port), "-V", version,
         "-t", topic, "-m", message, *extra],
        capture_output=True, text=True, timeout=20,
    )
    assert out.returncode == 0, f"mosquitto_pub failed: {out.stdout}{out.stderr}"


def test_mosquitto_pub_sub(module_broker, protocol, topic):
    version = CLI_VERSION[protocol]
    sub = _Sub(module_broker, version, f"{topic}/#", 3)
    try:
        sub.wait_subscribed()
        _pub(module_broker, version, f"{topic}/a", "zero", "-q", "0")
        _pub(module_broker, version, f"{topic}/b", "one", "-q", "1")
        _pub(module_broker, version, f"{topic}/c", "two", "-q", "2")
        got = sorted(sub.finish())
    finally:
        sub.kill()
    assert got == [(f"{topic}/a", "0", "zero"), (f"{topic}/b", "1", "one"),
                   (f"{topic}/c", "1", "two")]


def test_mosquitto_pub_retained_then_sub(module_broker, protocol, topic):
    version = CLI_VERSION[protocol]
    _pub(module_broker, version, f"{topic}/r", "retained by cli", "-q", "1", "-r")
    sub = _Sub(module_broker, version, f"{topic}/r", 1)
    try:
        got = sub.finish()
    finally:
        sub.kill()
    assert got == [(f"{topic}/r", "1", "retained by cli")]


def test_mosquitto_pub_v5_user_property_reaches_paho(module_broker, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/p", 1)
    _pub(module_broker, "5", f"{topic}/p", "with props", "-q", "1",
         "-D", "publish", "user-property", "origin", "cli",
         "-D", "publish", "content-type", "text/plain")
    msg = sub.expect_message()
    assert msg.payload == b"with props"
    assert msg.properties.get("user_property") == [("origin", "cli")]
    assert msg.properties.get("content_type") == "text/plain"
