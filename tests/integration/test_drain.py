"""POST /api/app/drain: the node stops accepting, turns not-ready (still live), and closes its
clients' connections at the configured pace — MQTT 5 clients with DISCONNECT 0x9C Use another
server and the Server Reference (0x8B without one), 3.1.1 clients by a close — without their
wills, and keeps their persistent sessions for whichever node they reconnect to."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from starling_it import rest
from starling_it.client import persistent
from starling_it.prometheus import metric_sum

pytestmark = pytest.mark.starlingd_only(reason="/api/app/drain is starlingd's")

TOKEN = "dr4in"
PATH = "/api/app/drain"
USE_ANOTHER_SERVER = 0x9C
SERVER_SHUTTING_DOWN = 0x8B
REFERENCE = "mqtt.example.net:1883"
RATE = 20  # connections/s
V5_CLIENTS = 8
V311_CLIENTS = 4


def accepts(broker) -> bool:
    try:
        with socket.create_connection((broker.host, broker.port), timeout=2):
            return True
    except OSError:
        return False


def test_drain_moves_clients_away_at_the_configured_pace(broker_factory, paho_client, uid):
    broker = broker_factory(
        env={
            "SECURITY_ADMIN_TOKEN": TOKEN,
            "STARLING_DRAIN_RATE": str(RATE),
            "STARLING_DRAIN_SERVER_REFERENCE": REFERENCE,
        }
    )
    status, body = rest.call(broker, "GET", PATH, TOKEN)
    assert status == 200 and body["state"] == "SERVING" and body["startedAt"] == 0, body

    v5 = [paho_client(broker, f"{uid}-v5-{i}", protocol=5) for i in range(V5_CLIENTS)]
    v311 = [paho_client(broker, f"{uid}-v3-{i}", protocol=4) for i in range(V311_CLIENTS - 1)]
    # A persistent session with a QoS 1 subscription, and a will that must not go (retained, so
    # a subscriber after the restart below would get it if it had gone).
    keeper = paho_client(broker, f"{uid}-keeper", protocol=4, clean_start=False,
                         will={"topic": f"{uid}/will", "payload": b"gone", "qos": 1,
                               "retain": True})
    keeper.subscribe(f"{uid}/keep", qos=1)
    v311.append(keeper)

    status, body = rest.call(broker, "POST", PATH, TOKEN)
    assert status == 202, body
    assert body["state"] in ("DRAINING", "DRAINED") and body["rate"] == RATE, body
    assert body["serverReference"] == REFERENCE
    # A second request changes nothing and says so.
    status, again = rest.call(broker, "POST", PATH, TOKEN, {"rate": 100000})
    assert status == 200 and again["rate"] == RATE, again

    closed_at = []
    for c in v5:
        info = c.wait_for_disconnect(timeout=30)
        assert info.from_server, c.client_id
        assert info.reason_code == USE_ANOTHER_SERVER, (c.client_id, info)
        assert info.properties.get("server_reference") == REFERENCE, info
        closed_at.append(info.at)
    for c in v311:
        closed_at.append(c.wait_for_disconnect(timeout=30).at)

    # Paced: 12 connections at 20/s are at least 11 / 20 s apart from first to last (only the
    # lower bound is checked: a slow machine spreads them more).
    assert max(closed_at) - min(closed_at) >= (V5_CLIENTS + V311_CLIENTS - 1) / RATE - 0.1

    deadline = time.monotonic() + 30
    while rest.call(broker, "GET", PATH, TOKEN)[1]["state"] != "DRAINED":
        assert time.monotonic() < deadline, "the drain never finished"
        time.sleep(0.05)
    status, body = rest.call(broker, "GET", PATH, TOKEN)
    assert body["disconnected"] == V5_CLIENTS + V311_CLIENTS and body["remaining"] == 0, body
    assert body["drainedAt"] >= body["startedAt"] > 0

    assert not accepts(broker), "a drained node still accepts MQTT connections"
    status, health = broker._get("/actuator/health/readiness")
    assert status == 503, health
    assert broker._get("/actuator/health/liveness")[0] == 200
    samples = broker.metrics()
    assert metric_sum(samples, "clientDisconnects_total", reason="drained") == (
        V5_CLIENTS + V311_CLIENTS
    )

    # A rolling upgrade: the drained node stops and a new one takes the same data. The
    # persistent session is there, and its will was not sent (no retained will arrives).
    assert broker.stop() == 0
    broker.start()
    watcher = paho_client(broker, f"{uid}-watcher", protocol=5)
    watcher.subscribe(f"{uid}/will", qos=1)
    back = paho_client(broker, f"{uid}-keeper", protocol=4, clean_start=False, connect=False)
    assert back.connect().session_present
    watcher.publish_and_wait(f"{uid}/keep", b"after", qos=1)
    assert back.expect_message(timeout=10).payload == b"after"
    watcher.expect_no_message(within=0.5)


def test_body_overrides_the_configured_reference(broker_factory, paho_client, uid):
    broker = broker_factory(
        env={"SECURITY_ADMIN_TOKEN": TOKEN, "STARLING_DRAIN_SERVER_REFERENCE": REFERENCE}
    )
    c = paho_client(broker, f"{uid}-v5", protocol=5)
    status, body = rest.call(broker, "POST", PATH, TOKEN, {"serverReference": "", "rate": 500})
    assert status == 202 and body["serverReference"] == "" and body["rate"] == 500, body
    info = c.wait_for_disconnect(timeout=30)
    assert info.from_server and info.reason_code == SERVER_SHUTTING_DOWN, info
    assert "server_reference" not in info.properties


def test_refusals_start_nothing(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    c = paho_client(broker, f"{uid}-stays", protocol=5)
    assert rest.call(broker, "POST", PATH, None)[0] == 401
    assert rest.call(broker, "POST", PATH, "wrong")[0] == 401
    for bad in ({"rate": 0}, {"rate": -3}, {"rate": "fast"}, {"rate": 2_000_000},
                {"serverReference": 7}, ["x"], "not json"):
        status, body = rest.call(broker, "POST", PATH, TOKEN, bad)
        assert status == 400, (bad, body)
    status, body = rest.call(broker, "GET", PATH, TOKEN)
    assert body["state"] == "SERVING", body
    assert c.is_connected() and accepts(broker)
    assert broker.health()[0] == 200


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "POST", PATH, None)[0] == 404


def test_prestop_script_drains_the_node(broker_factory, paho_client, uid):
    """docker/drain.sh, the chart's preStop hook, against the real daemon: it finds the HTTP
    port in listeners.json, starts the drain with the token and returns once DRAINED."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN, "STARLING_DRAIN_RATE": "50"})
    clients = [paho_client(broker, f"{uid}-{i}", protocol=5) for i in range(5)]
    script = Path(__file__).resolve().parents[2] / "docker" / "drain.sh"
    env = {
        "PATH": os.environ["PATH"],
        "STARLING_DATA_DIR": str(broker.data_dir),
        "HTTP_BIND_PORT": "1",  # wrong on purpose: listeners.json has the real port
        "SECURITY_ADMIN_TOKEN": TOKEN,
    }
    done = subprocess.run(["bash", str(script), "30"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done
    assert "starling-drain: drained" in done.stdout, done.stdout
    for c in clients:
        assert c.wait_for_disconnect(timeout=1).reason_code == SERVER_SHUTTING_DOWN
    assert rest.call(broker, "GET", PATH, TOKEN)[1]["disconnected"] == 5

    # Without the token it says so and leaves the node alone (exit 0: a preStop hook).
    other = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    env["STARLING_DATA_DIR"] = str(other.data_dir)
    del env["SECURITY_ADMIN_TOKEN"]
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "SECURITY_ADMIN_TOKEN is not set" in done.stdout, done
    assert rest.call(other, "GET", PATH, TOKEN)[1]["state"] == "SERVING"
