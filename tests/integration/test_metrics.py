"""HTTP surface of starlingd: /actuator/health and /actuator/prometheus."""

from __future__ import annotations

import json
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
