"""HTTP surface of starlingd: /actuator/health and /actuator/prometheus."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request

import pytest

from starling_it.prometheus import metric_names, metric_sum

pytestmark = pytest.mark.starlingd_only(reason="Mosquitto has no HTTP/Prometheus endpoint")


def _wait_for_metric(broker, name: str, predicate, timeout: float = 10.0) -> float:
    """Polls the endpoint until ``predicate(value)`` holds (gauges are updated asynchronously)."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        samples = broker.metrics()
        value = metric_sum(samples, name)
        if (name in metric_names(samples)) and predicate(value):
            return value
        time.sleep(0.1)  # polling a condition with a deadline
    raise AssertionError(f"{name} never satisfied the condition; last value {value}")


def test_health_is_up(broker):
    status, body = broker.health()
    assert status == 200
    assert isinstance(body, dict) and body.get("status") == "UP", body


def test_probes_split_liveness_from_readiness(broker):
    """Kubernetes' probes: readiness is the full report; liveness only the event loops (the
    timer thread and the client dispatcher beat, so a stuck loop, not a store, restarts a pod)."""
    def get(path: str) -> tuple[int, dict]:
        with urllib.request.urlopen(f"http://{broker.host}:{broker.http_port}{path}",
                                    timeout=5) as resp:
            return resp.status, json.loads(resp.read())

    status, ready = get("/actuator/health/readiness")
    assert status == 200 and ready["status"] == "UP"
    assert {"messageLog", "deviceInbox", "metadataStore"} <= set(ready["components"])
    status, live = get("/actuator/health/liveness")
    assert status == 200 and live["status"] == "UP"
    assert set(live["components"]) == {"eventLoops"}  # no store among them
    loops = live["components"]["eventLoops"]["details"]
    assert set(loops) == {"timers", "clientDispatcher"}
    assert all(not loop["stalled"] for loop in loops.values())


def test_prometheus_endpoint_parses(broker):
    samples = broker.metrics()
    assert samples, "no samples"
    assert "connectedSessions" in metric_names(samples), sorted(metric_names(samples))[:50]


def test_connected_sessions_gauge_follows_connections(broker, paho_client):
    base = _wait_for_metric(broker, "connectedSessions", lambda v: v >= 0)
    clients = [paho_client(broker, protocol=p) for p in (4, 5, 5)]
    _wait_for_metric(broker, "connectedSessions", lambda v: v == base + 3)
    clients[0].disconnect()
    clients[1].drop()  # abnormal close counts down too
    _wait_for_metric(broker, "connectedSessions", lambda v: v == base + 1)


def _proc_stat_fields(pid: int) -> list[str]:
    """Fields 3.. of /proc/<pid>/stat (proc(5) numbering: fields[0] is field 3)."""
    text = open(f"/proc/{pid}/stat", encoding="ascii").read()
    return text[text.rindex(")") + 2:].split()


def test_process_metrics_describe_the_running_daemon(broker):
    """The standard process_* series, build_info and memoryLimit_bytes, checked against what
    /proc and the binary itself say about the daemon's process."""
    pid = broker.proc.pid
    samples = broker.metrics()
    value = lambda name: samples[(name, frozenset())]  # noqa: E731

    version = subprocess.run([str(broker.binary), "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[-1]
    assert samples.get(("build_info", frozenset({("version", version)}))) == 1.0

    soft_limit = next(int(line.split()[3]) for line in open(f"/proc/{pid}/limits")
                      if line.startswith("Max open files"))
    assert value("process_max_fds") == soft_limit
    # Connections come and go between the two readings: the same order of magnitude is enough.
    open_fds = len(os.listdir(f"/proc/{pid}/fd"))
    assert abs(value("process_open_fds") - open_fds) <= max(20, open_fds // 2)

    rss = next(int(line.split()[1]) * 1024 for line in open(f"/proc/{pid}/status")
               if line.startswith("VmRSS:"))
    assert rss / 2 <= value("process_resident_memory_bytes") <= rss * 2

    ticks = os.sysconf("SC_CLK_TCK")
    btime = next(int(line.split()[1]) for line in open("/proc/stat") if line.startswith("btime"))
    started = btime + int(_proc_stat_fields(pid)[22 - 3]) / ticks
    assert abs(value("process_start_time_seconds") - started) < 2
    assert value("process_cpu_seconds_total") > 0
    assert value("memoryLimit_bytes") >= 0


def test_health_status_gauges_mirror_the_health_endpoint(broker):
    """healthStatus{component}: 0 UP .. 3 DOWN, one series per component of /actuator/health
    and component="overall" for its verdict."""
    status, body = broker.health()
    assert status == 200
    levels = {"UP": 0, "DEGRADED": 1, "OUT_OF_SERVICE": 2, "DOWN": 3}
    samples = broker.metrics()
    gauges = {dict(labels)["component"]: v for (name, labels), v in samples.items()
              if name == "healthStatus"}
    expected = {name: float(levels[c["status"]]) for name, c in body["components"].items()}
    expected["overall"] = float(levels[body["status"]])
    assert gauges == expected


def test_disconnects_are_counted_by_reason(broker, uid):
    """clientDisconnects_total{reason}: a DISCONNECT, a dropped socket, a keep-alive timeout, a
    takeover and a malformed packet each count under their own reason."""
    from starling_it import codec
    from starling_it.raw_client import RawClient

    reasons = ("client", "connection_lost", "keep_alive_timeout", "taken_over",
               "protocol_error", "server_shutdown", "admin", "policy")
    before = {r: metric_sum(broker.metrics(), "clientDisconnects_total", reason=r)
              for r in reasons}

    def raw(client_id: str, **kwargs) -> RawClient:
        c = RawClient(broker.host, broker.port)
        assert c.connect(client_id, **kwargs).reason_code == 0
        return c

    raw(f"{uid}-bye").disconnect()
    raw(f"{uid}-gone").abort()
    silent = raw(f"{uid}-silent", keep_alive=1)
    silent.expect_disconnect(timeout=10)  # 0x8D after 1.5 s of silence
    first = raw(f"{uid}-twice")
    second = raw(f"{uid}-twice")
    first.expect_disconnect()  # 0x8E to the first connection
    second.disconnect()
    broken = raw(f"{uid}-broken")
    broken.send(b"\x30\x02\x00\x05")  # PUBLISH whose topic length runs past the packet
    broken.expect_closed()

    expected = {"client": 2, "connection_lost": 1, "keep_alive_timeout": 1, "taken_over": 1,
                "protocol_error": 1}
    deadline = time.monotonic() + 10
    while True:
        after = {r: metric_sum(broker.metrics(), "clientDisconnects_total", reason=r)
                 for r in reasons}
        delta = {r: after[r] - before[r] for r in reasons if after[r] != before[r]}
        if delta == expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the counts land when the client actors process the closes
    assert delta == expected
