#!/usr/bin/env python3
"""Silent sockets against starlingd: the connect deadline under load (hardening issue, item 1).

N TCP connections are opened and never send a byte (no CONNECT), spread over many loopback
source addresses (127.0.N.M; all of 127/8 is local on Linux) so the per-address limits
(listener.max_connections_per_address, listener.connect_rate_per_address) are not what closes
them: the connect timeout must. Meanwhile one legitimate client from 127.0.0.1 connects, gets
its CONNACK and disconnects in a loop. Reported:

  - broker RSS (from /proc) before the sockets, at its peak, and after they were all closed
    (and after a short settle, so freed memory has gone back to the allocator),
  - how long after the last socket was opened every one of them was closed by the server, and
    how many the server still held past timeout + slack,
  - the legitimate client's connects that succeeded and failed while the sockets were held,
  - the broker's own counters: connectTimeouts_total, connectionsRefused_total.

    bench/silent_sockets.py --starlingd build/release/src/app/starlingd --sockets 10000 \
        --connect-timeout-ms 10000 [--sources 50] [--json out.json]

Standard library only. The broker runs on free loopback ports in a temporary directory, with
the shipped configuration plus the connect timeout given. The script raises its own
RLIMIT_NOFILE (it needs one descriptor per socket), which the broker inherits.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from rawmqtt import varint

REPO = Path(__file__).resolve().parent.parent


def connect_packet(client_id: str) -> bytes:
    cid = client_id.encode()
    body = b"\x00\x04MQTT" + bytes([4, 0x02]) + (60).to_bytes(2, "big")
    body += len(cid).to_bytes(2, "big") + cid
    return bytes([0x10]) + varint(len(body)) + body


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def metric_sum(http_port: int, name: str, label: str = "") -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/actuator/prometheus", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and (not label or label in line):
            try:
                total += float(line.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return total


def start_broker(binary: str, work: Path, connect_timeout_ms: int) -> tuple[subprocess.Popen, dict]:
    env = dict(os.environ)
    env.update(
        {
            "STARLING_DATA_DIR": str(work / "data"),
            "LISTENER_TCP_BIND_ADDRESS": "0.0.0.0",
            "LISTENER_TCP_BIND_PORT": "0",
            "HTTP_BIND_ADDRESS": "127.0.0.1",
            "HTTP_BIND_PORT": "0",
            "LISTENER_WS_ENABLED": "false",
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "true",
            "LISTENER_CONNECT_TIMEOUT_MS": str(connect_timeout_ms),
            "STARLING_LOG_LEVEL": "info",
        }
    )
    log = open(work / "broker.log", "w")
    proc = subprocess.Popen(
        [binary, "--config", str(REPO / "config/starling.yml")],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
        start_new_session=True,
    )
    ready = work / "data" / "listeners.json"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"starlingd exited with {proc.returncode}; see {work / 'broker.log'}")
        if ready.exists():
            try:
                return proc, json.loads(ready.read_text())
            except json.JSONDecodeError:
                pass
        time.sleep(0.05)  # polling a condition with a deadline
    proc.kill()
    sys.exit("starlingd did not start within 30 s")


class legit_client(threading.Thread):
    """Connects, waits for CONNACK, disconnects, again, until stopped."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.ok = 0
        self.failed = 0
        self.failures: list[str] = []
        self.stop_event = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stop_event.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5) as s:
                    s.sendall(connect_packet(f"legit-{n}"))
                    ack = b""
                    while len(ack) < 4:
                        chunk = s.recv(4 - len(ack))
                        if not chunk:
                            raise ConnectionError("closed before CONNACK")
                        ack += chunk
                    if ack[0] != 0x20 or ack[3] != 0:
                        raise ConnectionError(f"CONNACK {ack!r}")
                    s.sendall(b"\xe0\x00")  # DISCONNECT
                self.ok += 1
            except OSError as e:
                self.failed += 1
                if len(self.failures) < 5:
                    self.failures.append(str(e))
            n += 1
            time.sleep(0.01)


def wave(args, proc: subprocess.Popen, port: int) -> dict:
    """Opens args.sockets silent sockets while a legitimate client connects in a loop; waits
    until the server closed them all (or timeout + slack passed); returns the numbers."""
    legit = legit_client(port)
    legit.start()
    sockets: list[socket.socket] = []
    open_errors = 0
    opened_at = time.monotonic()
    for i in range(args.sockets):
        n = i % args.sources
        source = f"127.0.{10 + n // 250}.{1 + n % 250}"
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            s.setblocking(False)
            sockets.append(s)
        except OSError:
            open_errors += 1
            s.close()
    last_opened = time.monotonic()
    rss_peak = rss_bytes(proc.pid)

    # Wait for every socket to be closed by the server (EOF or reset), sampling RSS.
    pending = set(range(len(sockets)))
    closed_at: dict[int, float] = {}
    deadline = last_opened + args.connect_timeout_ms / 1000 + args.slack
    while pending and time.monotonic() < deadline:
        rss_peak = max(rss_peak, rss_bytes(proc.pid))
        for i in list(pending):
            try:
                data = sockets[i].recv(1)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if data == b"":
                closed_at[i] = time.monotonic()
                pending.discard(i)
        time.sleep(0.05)
    for s in sockets:
        s.close()
    legit.stop_event.set()
    legit.join(timeout=10)
    time.sleep(args.settle)
    rss_after = rss_bytes(proc.pid)
    return {
        "opened": len(sockets),
        "open_errors": open_errors,
        "seconds_to_open_all": round(last_opened - opened_at, 2),
        "first_closed_s_after_first_opened": round(min(closed_at.values()) - opened_at, 2)
        if closed_at
        else None,
        "all_closed_s_after_last_opened": round(max(closed_at.values()) - last_opened, 2)
        if closed_at
        else None,
        "still_open_after_timeout_plus_slack": len(pending),
        "rss_peak_mib": round(rss_peak / 2**20, 1),
        "rss_after_mib": round(rss_after / 2**20, 1),
        "legit_connects_ok": legit.ok,
        "legit_connects_failed": legit.failed,
        "legit_failures": legit.failures,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--starlingd", default=str(REPO / "build/release/src/app/starlingd"))
    p.add_argument("--sockets", type=int, default=10_000)
    p.add_argument("--sources", type=int, default=50, help="loopback source addresses to spread over")
    p.add_argument("--connect-timeout-ms", type=int, default=10_000)
    p.add_argument("--slack", type=float, default=3.0, help="seconds past the timeout allowed")
    p.add_argument("--settle", type=float, default=3.0, help="seconds before the RSS after")
    p.add_argument("--waves", type=int, default=1, help="open/close waves on one broker")
    p.add_argument("--json")
    args = p.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.sockets * 2 + 4096  # ours, plus what the broker (inheriting it) needs
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    with tempfile.TemporaryDirectory(prefix="silent-sockets-") as tmp:
        work = Path(tmp)
        proc, ports = start_broker(
            str(Path(args.starlingd).resolve()), work, args.connect_timeout_ms
        )
        port, http_port = ports["mqtt_tcp"], ports["http"]
        try:
            time.sleep(1)  # the broker settles after start-up before the baseline
            rss_before = rss_bytes(proc.pid)
            waves = []
            for _ in range(args.waves):
                waves.append(wave(args, proc, port))
            result = {
                "sockets": args.sockets,
                "sources": args.sources,
                "connect_timeout_s": args.connect_timeout_ms / 1000,
                "rss_before_mib": round(rss_before / 2**20, 1),
                "waves": waves,
                "connect_timeouts_total": metric_sum(http_port, "connectTimeouts_total"),
                "connections_refused_total": metric_sum(http_port, "connectionsRefused_total"),
            }
            still_open = sum(w["still_open_after_timeout_plus_slack"] for w in waves)
            legit_failed = sum(w["legit_connects_failed"] for w in waves)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if still_open or legit_failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
