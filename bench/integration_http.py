#!/usr/bin/env python3
"""Throughput of one HTTP integration, and what a dead target costs MQTT delivery (issue 17;
docs/performance.md, "HTTP integrations").

1. Throughput: a local HTTP sink (its own process, asyncio, keep-alive, answers 200 at once);
   one integration matching `ie/bench/#` with maxParallelRequestsCount P; a publisher sends
   N QoS 1 messages (pipelined, a window of 100 unacknowledged); the sink counts requests. The
   rate is N over the time from the sink's first request to its last.
2. Dead target: a subscriber and a publisher on `ie/live/x` at a fixed rate (QoS 1, one-way
   latency from a timestamp in the payload, same host); run once with no integration and once
   with an integration matching the same topic whose endpoint refuses connections (retrying
   up to 1000 times). Reported: delivered, p50/p99 latency, broker CPU per 1,000 messages.

    bench/integration_http.py --starlingd build/bench/src/app/starlingd \
        [--messages 20000] [--parallel 1,8] [--rate 2000 --seconds 10] [--json out.json]

Standard library only. starlingd runs embedded on free loopback ports in a temporary directory.
Mosquitto has no integrations, so there is no Mosquitto column here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from rawmqtt import free_port, packet, read_packet, utf8

REPO = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"


# ------------------------------------------------------------------ MQTT 3.1.1, raw sockets


def open_client(port: int, client_id: str, topic_filter: str | None = None) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(packet(0x10, utf8("MQTT") + bytes([4, 0x02]) + (60).to_bytes(2, "big")
                        + utf8(client_id)))
    first, body = read_packet(sock)
    if first != 0x20 or body[1] != 0:
        raise ConnectionError(f"{client_id}: CONNACK {body.hex()}")
    if topic_filter is not None:
        sock.sendall(packet(0x82, (1).to_bytes(2, "big") + utf8(topic_filter) + bytes([1])))
        first, body = read_packet(sock)
        if first != 0x90 or body[2] != 1:
            raise ConnectionError(f"{client_id}: SUBACK {body.hex()}")
    return sock


def publish_qos1(topic: str, packet_id: int, payload: bytes) -> bytes:
    return packet(0x32, utf8(topic) + packet_id.to_bytes(2, "big") + payload)


# ------------------------------------------------------------------ HTTP sink (own process)


def sink_main(port_out, count, first_ns, last_ns, ready) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                now = time.time_ns()
                with count.get_lock():
                    if count.value == 0:
                        first_ns.value = now
                    count.value += 1
                    last_ns.value = now
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port_out.value = server.sockets[0].getsockname()[1]
        ready.set()
        await server.serve_forever()

    asyncio.run(serve())


class Sink:
    def __init__(self) -> None:
        self.port = multiprocessing.Value("i", 0)
        self.count = multiprocessing.Value("q", 0)
        self.first_ns = multiprocessing.Value("q", 0)
        self.last_ns = multiprocessing.Value("q", 0)
        ready = multiprocessing.Event()
        self.proc = multiprocessing.Process(
            target=sink_main, args=(self.port, self.count, self.first_ns, self.last_ns, ready),
            daemon=True)
        self.proc.start()
        if not ready.wait(10):
            sys.exit("the HTTP sink did not start")

    def reset(self) -> None:
        with self.count.get_lock():
            self.count.value = 0

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.join()


# ------------------------------------------------------------------ starlingd


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Starlingd:
    def __init__(self, binary: str, work: Path) -> None:
        data = work / "data"
        data.mkdir()
        self.port, self.http_port = free_port(), free_port()
        env = dict(os.environ)
        env.update(STARLING_DATA_DIR=str(data), LISTENER_TCP_BIND_ADDRESS="127.0.0.1",
                   LISTENER_TCP_BIND_PORT=str(self.port), LISTENER_WS_ENABLED="false",
                   HTTP_BIND_ADDRESS="127.0.0.1", HTTP_BIND_PORT=str(self.http_port),
                   SECURITY_MQTT_ALLOW_ANONYMOUS="true", SECURITY_ADMIN_TOKEN=TOKEN,
                   STARLING_LOG_LEVEL="warn")
        self.log = open(work / "starlingd.log", "wb")
        self.proc = subprocess.Popen([binary, "--config", str(REPO / "config/starling.yml")],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=work,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"starlingd exited during start-up; see {work / 'starlingd.log'}")
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{self.http_port}/actuator/health", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)  # polling start-up with a deadline
        sys.exit("starlingd was not healthy within 60 s")

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read() or b"{}")

    def create_integration(self, name: str, topic_filter: str, url: str, **client) -> str:
        made = self.api("POST", "/api/integration", {
            "name": name, "type": "HTTP",
            "configuration": {"topicFilters": [topic_filter],
                              "clientConfiguration": {"restEndpointUrl": url, **client}}})
        return made["id"]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------ scenarios


def publish_all(port: int, topic: str, total: int, payload: bytes, window: int = 100) -> float:
    """Publishes `total` QoS 1 messages keeping `window` unacknowledged; returns seconds."""
    sock = open_client(port, f"ie-bench-pub-{time.monotonic_ns()}")
    start = time.monotonic()
    sent = acked = 0
    while acked < total:
        while sent < total and sent - acked < window:
            sock.sendall(publish_qos1(topic, sent % 65535 + 1, payload))
            sent += 1
        first, _ = read_packet(sock)
        if first == 0x40:
            acked += 1
    elapsed = time.monotonic() - start
    sock.close()
    return elapsed


def throughput(broker: Starlingd, sink: Sink, parallel: int, total: int) -> dict:
    sink.reset()
    integration = broker.create_integration(
        f"bench-p{parallel}", f"ie/bench/p{parallel}/#", f"http://127.0.0.1:{sink.port.value}/in",
        maxParallelRequestsCount=parallel)
    publish_s = publish_all(broker.port, f"ie/bench/p{parallel}/x", total, b"x" * 100)
    deadline = time.monotonic() + 600
    while sink.count.value < total and time.monotonic() < deadline:
        time.sleep(0.1)  # waiting for the sink's count, with a deadline
    got = sink.count.value
    span = (sink.last_ns.value - sink.first_ns.value) / 1e9
    broker.api("DELETE", f"/api/integration/{integration}")
    return {"parallel": parallel, "messages": total, "received": got,
            "publish_rate": round(total / publish_s),
            "requests_per_s": round(got / span) if span > 0 else None}


def live_stream(broker: Starlingd, rate: int, seconds: float) -> dict:
    topic = "ie/live/x"
    sub = open_client(broker.port, f"ie-live-sub-{time.monotonic_ns()}", topic)
    pub = open_client(broker.port, f"ie-live-pub-{time.monotonic_ns()}")
    latencies: list[float] = []
    total = int(rate * seconds)

    def receive() -> None:
        sub.settimeout(30)
        try:
            while len(latencies) < total:
                first, body = read_packet(sub)
                if first >> 4 != 3:
                    continue
                tlen = int.from_bytes(body[:2], "big")
                pos = 2 + tlen
                qos = (first >> 1) & 3
                if qos:
                    sub.sendall(packet(0x40, body[pos:pos + 2]))
                    pos += 2
                sent_ns = struct.unpack(">q", body[pos:pos + 8])[0]
                latencies.append((time.time_ns() - sent_ns) / 1e6)
        except (TimeoutError, ConnectionError, OSError):
            pass

    reader = threading.Thread(target=receive)
    reader.start()
    cpu0 = cpu_seconds(broker.proc.pid)
    start = time.monotonic()
    pid = 0

    def drain_acks() -> None:
        pub.settimeout(30)
        got = 0
        try:
            while got < total:
                first, _ = read_packet(pub)
                got += first == 0x40
        except (TimeoutError, ConnectionError, OSError):
            pass

    acker = threading.Thread(target=drain_acks)
    acker.start()
    for i in range(total):
        pid = i % 65535 + 1
        pub.sendall(publish_qos1(topic, pid, struct.pack(">q", time.time_ns()) + b"y" * 92))
        delay = start + (i + 1) / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    acker.join()
    reader.join()
    cpu = cpu_seconds(broker.proc.pid) - cpu0
    sub.close()
    pub.close()
    latencies.sort()

    def pct(p: float) -> float | None:
        return round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 2) \
            if latencies else None

    return {"offered": total, "delivered": len(latencies), "p50_ms": pct(0.5),
            "p99_ms": pct(0.99), "cpu_s_per_1000": round(cpu / total * 1000, 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--starlingd", required=True)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--parallel", default="1,8")
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--json")
    args = ap.parse_args()

    sink = Sink()
    results: dict = {"throughput": [], "dead_target": {}}
    with tempfile.TemporaryDirectory(prefix="ie-bench-") as tmp:
        broker = Starlingd(str(Path(args.starlingd).resolve()), Path(tmp))
        try:
            for p in (int(x) for x in args.parallel.split(",")):
                row = throughput(broker, sink, p, args.messages)
                results["throughput"].append(row)
                print(f"HTTP integration, {p} in flight: {row['requests_per_s']} requests/s "
                      f"({row['received']}/{row['messages']} received; publisher "
                      f"{row['publish_rate']} msg/s)", flush=True)
            base = live_stream(broker, args.rate, args.seconds)
            print(f"MQTT stream, no integration:   {base}", flush=True)
            dead = broker.create_integration(
                "bench-dead", "ie/live/#", f"http://127.0.0.1:{free_port()}/dead",
                maxRetries=1000, retryBackoffMs=100, retryBackoffMaxMs=1000)
            with_dead = live_stream(broker, args.rate, args.seconds)
            print(f"MQTT stream, dead integration: {with_dead}", flush=True)
            st = broker.api("GET", f"/api/integration/{dead}")["status"]
            print(f"dead integration status: {st}", flush=True)
            results["dead_target"] = {"without": base, "with_dead_integration": with_dead,
                                      "integration_status": st}
        finally:
            broker.stop()
            sink.stop()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
