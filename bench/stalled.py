#!/usr/bin/env python3
"""Broker memory with stalled subscribers under load (issue 7; docs/performance.md).

N subscribers connect (MQTT 3.1.1, QoS 0, one shared filter) and then never read their
sockets again; one publisher streams QoS 0 messages to that filter at a fixed rate. A broker
that buffers for slow subscribers grows by N x the stream; one that sheds (write-buffer
watermarks) stays flat. The script samples the broker's resident memory (/proc) every half
second and prints one row per broker; Starling's droppedMsgs counter shows what was shed.

    bench/stalled.py --starlingd build/bench/src/app/starlingd --subscribers 100 \
        --rate 10000 --seconds 20 [--mosquitto /usr/sbin/mosquitto] [--json out.json]

Standard library only. Each broker runs on free loopback ports in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from rawmqtt import free_port, packet, read_exactly, utf8

REPO = Path(__file__).resolve().parent.parent


def connect_packet(client_id: str) -> bytes:
    # MQTT 3.1.1, clean session, keep-alive 0 (a stalled client sends no PINGREQ).
    return packet(0x10, utf8("MQTT") + bytes([4, 0x02]) + (0).to_bytes(2, "big") + utf8(client_id))


def subscribe_packet(topic_filter: str) -> bytes:
    return packet(0x82, (1).to_bytes(2, "big") + utf8(topic_filter) + bytes([0]))


def publish_packet(topic: str, payload: bytes) -> bytes:
    return packet(0x30, utf8(topic) + payload)


def open_client(port: int, client_id: str, topic_filter: str | None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(connect_packet(client_id))
    connack = read_exactly(sock, 4)
    if connack[0] != 0x20 or connack[3] != 0:
        raise ConnectionError(f"{client_id}: CONNACK {connack.hex()}")
    if topic_filter is not None:
        sock.sendall(subscribe_packet(topic_filter))
        suback = read_exactly(sock, 5)
        if suback[0] != 0x90 or suback[4] != 0:
            raise ConnectionError(f"{client_id}: SUBACK {suback.hex()}")
    return sock


def rss(pid: int) -> tuple[int, int]:
    """(VmRSS, RssAnon) in bytes."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                values[key] = int(rest.split()[0]) * 1024
    return values["VmRSS"], values["RssAnon"]


class Broker:
    def __init__(self, name: str, command: list[str], env: dict[str, str], port: int, work: Path):
        self.name = name
        self.port = port
        self.http_port: int | None = None
        log = open(work / f"{name}.log", "wb")
        self.proc = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"{name} exited during start-up; see {work / f'{name}.log'}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        sys.exit(f"{name} did not listen on {port} within 30 s")

    def dropped(self) -> float | None:
        if self.http_port is None:
            return None
        url = f"http://127.0.0.1:{self.http_port}/actuator/prometheus"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        return sum(
            float(line.rsplit(" ", 2)[1] if line.count(" ") >= 2 else line.split()[-1])
            for line in text.splitlines()
            if line.startswith("droppedMsgs_total{")
        )

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_starlingd(binary: str, work: Path) -> Broker:
    data = work / "starling-data"
    data.mkdir()
    port, http = free_port(), free_port()
    env = dict(os.environ)
    env.update(
        STARLING_DATA_DIR=str(data),
        LISTENER_TCP_BIND_ADDRESS="127.0.0.1",
        LISTENER_TCP_BIND_PORT=str(port),
        LISTENER_WS_ENABLED="false",
        HTTP_BIND_ADDRESS="127.0.0.1",
        HTTP_BIND_PORT=str(http),
        SECURITY_MQTT_ALLOW_ANONYMOUS="true",
        STARLING_LOG_LEVEL="warn",
    )
    b = Broker("starling", [binary, "--config", str(REPO / "config/starling.yml")], env, port, work)
    b.http_port = http
    return b


def start_mosquitto(binary: str, work: Path) -> Broker:
    port = free_port()
    conf = work / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    return Broker("mosquitto", [binary, "-c", str(conf)], dict(os.environ), port, work)


def run(broker: Broker, args) -> dict:
    topic = "stalled/stream"
    subscribers = [
        open_client(broker.port, f"stalled-{i}", topic) for i in range(args.subscribers)
    ]
    publisher = open_client(broker.port, "stalled-publisher", None)
    pid = broker.proc.pid
    dropped_before = broker.dropped()
    per_tick = max(1, args.rate // 100)
    burst = publish_packet(topic, b"x" * args.payload) * per_tick
    samples = [(0.0, 0, *rss(pid))]
    sent = 0
    start = time.monotonic()
    next_sample = start + 0.5
    while (now := time.monotonic()) - start < args.seconds:
        publisher.sendall(burst)
        sent += per_tick
        if now >= next_sample:
            samples.append((now - start, sent, *rss(pid)))
            next_sample = now + 0.5
        delay = start + sent / args.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    elapsed = time.monotonic() - start
    samples.append((elapsed, sent, *rss(pid)))
    dropped = broker.dropped()
    for s in subscribers + [publisher]:
        s.close()
    warm = next(s for s in samples if s[0] >= args.warm_up)
    return {
        "broker": broker.name,
        "subscribers": args.subscribers,
        "offered_msgs_per_s": round(sent / elapsed),
        "payload_bytes": args.payload,
        "seconds": round(elapsed, 1),
        "rss_start_mib": round(samples[0][2] / 2**20, 1),
        "rss_peak_mib": round(max(s[2] for s in samples) / 2**20, 1),
        "rss_end_mib": round(samples[-1][2] / 2**20, 1),
        "anon_growth_after_warm_up_mib": round(
            (max(s[3] for s in samples if s[0] >= args.warm_up) - warm[3]) / 2**20, 1
        ),
        "copies_offered_mib": round(sent * args.payload * args.subscribers / 2**20),
        "dropped": None if dropped is None else round(dropped - (dropped_before or 0)),
        "samples": [(round(t, 1), n, round(r / 2**20, 1)) for t, n, r, _ in samples],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--starlingd", default=str(REPO / "build/bench/src/app/starlingd"))
    p.add_argument("--mosquitto", default=shutil.which("mosquitto") or "/usr/sbin/mosquitto")
    p.add_argument("--brokers", default="starling,mosquitto")
    p.add_argument("--subscribers", type=int, default=100)
    p.add_argument("--rate", type=int, default=10_000, help="published msg/s")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--payload", type=int, default=1000)
    p.add_argument("--warm-up", type=float, default=3, help="seconds before growth is measured")
    p.add_argument("--json")
    args = p.parse_args()
    args.starlingd = str(Path(args.starlingd).resolve())  # the broker runs in a temporary dir

    results = []
    for name in args.brokers.split(","):
        with tempfile.TemporaryDirectory(prefix=f"stalled-{name}-") as tmp:
            work = Path(tmp)
            if name == "starling":
                broker = start_starlingd(args.starlingd, work)
            elif name == "mosquitto":
                broker = start_mosquitto(args.mosquitto, work)
            else:
                sys.exit(f"unknown broker {name!r} (starling, mosquitto)")
            try:
                results.append(run(broker, args))
            finally:
                broker.stop()
    print(
        f"{'broker':10} {'subs':>5} {'msg/s':>7} {'offered MiB':>11} {'RSS start':>9} "
        f"{'RSS peak':>8} {'anon +after warm-up':>19} {'dropped':>10}"
    )
    for r in results:
        print(
            f"{r['broker']:10} {r['subscribers']:>5} {r['offered_msgs_per_s']:>7} "
            f"{r['copies_offered_mib']:>11} {r['rss_start_mib']:>9} {r['rss_peak_mib']:>8} "
            f"{r['anon_growth_after_warm_up_mib']:>19} {str(r['dropped']):>10}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
