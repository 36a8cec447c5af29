"""How long a QoS 2 PUBLISH takes to complete (PUBLISH → PUBCOMP at the publisher, as paho-mqtt's
on_publish sees it), one message at a time, for a clean-session and a persistent publisher. The
persistent one pays for its QoS 2 ids being stored before the PUBREC and removed before the
PUBCOMP (docs/architecture.md §3). A starlingd (STARLINGD, or the debug build) on loopback,
embedded mode, 3.1.1, 64-byte payloads; prints p50 / p99 in ms per session kind.
    STARLINGD=build/release/src/app/starlingd .venv/bin/python bench/qos2_completion.py [COUNT]"""
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))
import paho.mqtt.client as mqtt
from starling_it.brokers import StarlingdBroker

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
if os.environ.get("STARLINGD"):
    os.environ["STARLINGD"] = os.path.abspath(os.environ["STARLINGD"])  # it runs elsewhere


def completion_times(port: int, clean: bool) -> list[float]:
    completed = threading.Event()
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2,
        client_id=f"qos2-{'clean' if clean else 'persistent'}-{time.time_ns()}",
        clean_session=clean,
        protocol=mqtt.MQTTv311,
    )
    client.on_publish = lambda *_: completed.set()
    client.connect("127.0.0.1", port)
    client.loop_start()
    times = []
    try:
        for _ in range(count):
            completed.clear()
            started = time.perf_counter()
            client.publish("bench/qos2", b"x" * 64, qos=2)
            if not completed.wait(5):
                raise SystemExit("no PUBCOMP within 5 s")
            times.append((time.perf_counter() - started) * 1000)
    finally:
        client.disconnect()
        client.loop_stop()
    return sorted(times)


broker = StarlingdBroker(Path(tempfile.mkdtemp()), env={"STARLING_LOG_LEVEL": "warn"})
broker.start()
try:
    for clean in (True, False):
        t = completion_times(broker.port, clean)
        name = "clean" if clean else "persistent"
        print(f"{name:>10}: p50 {t[len(t) // 2]:.3f} ms, p99 {t[int(len(t) * 0.99)]:.3f} ms")
finally:
    broker.close()
