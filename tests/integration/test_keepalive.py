"""Keep-alive: the server closes a silent connection after 1.5 × keep-alive; pings keep it up;
MQTT 5 Server Keep Alive caps what the client asks for."""

from __future__ import annotations

import time

import pytest

from starling_it import codec
from starling_it.expect import assert_closed_for_error
from starling_it.raw_client import ConnectionClosed

# How late after 1.5 × keep-alive the close may come. starlingd checks keep-alives every second
# (keep-alive.monitoring-delay-ms); Mosquitto 2.0 only looks every few seconds (measured: a 1 s
# keep-alive is enforced after ~5 s), so it gets a wider window. The spec sets no upper bound.
LATENESS_S = {"starlingd": 1.5, "mosquitto": 6.0}


@pytest.mark.slow
def test_server_closes_silent_connection_after_one_and_a_half_keep_alive(
    module_broker, raw_client, protocol, uid
):
    """Two connections with a 1 s keep-alive: the silent one is closed after 1.5 s (within
    the broker's check granularity); the one pinging every 0.5 s meanwhile stays open."""
    keep_alive = 1
    silent = raw_client(module_broker, protocol)
    assert silent.connect(f"{uid}-silent", keep_alive=keep_alive).reason_code == 0
    silent_since = time.monotonic()
    pinger = raw_client(module_broker, protocol)
    assert pinger.connect(f"{uid}-pinger", keep_alive=keep_alive).reason_code == 0

    deadline = silent_since + 1.5 * keep_alive + LATENESS_S[module_broker.kind] + 1.0
    closing: list[codec.Packet] = []
    while True:
        assert time.monotonic() < deadline, "silent connection was never closed"
        # The ping cadence is the stimulus; each PINGRESP is awaited as an event.
        pinger.send(codec.pingreq())
        pinger.expect(codec.PINGRESP, timeout=2.0)
        try:
            closing.append(silent.recv(timeout=keep_alive / 2))
        except TimeoutError:
            continue
        except ConnectionClosed:
            break
    elapsed = time.monotonic() - silent_since
    assert elapsed >= 1.5 * keep_alive - 0.1, f"closed too early: after {elapsed:.2f}s"
    assert elapsed <= 1.5 * keep_alive + LATENESS_S[module_broker.kind], (
        f"closed too late: after {elapsed:.2f}s"
    )
    assert all(p.type == codec.DISCONNECT for p in closing), closing
    if protocol == codec.MQTT5 and closing:
        assert closing[0].reason_code == codec.RC_KEEP_ALIVE_TIMEOUT
    if protocol == codec.MQTT5 and module_broker.kind == "starlingd":
        assert closing, "starlingd must send DISCONNECT 0x8D before closing"
    if protocol != codec.MQTT5:
        assert not closing, "an MQTT 3.1.1 server never sends DISCONNECT"
    assert pinger.is_open(), "the pinging connection was closed too"


def test_keep_alive_zero_disables_timeout(module_broker, raw_client, protocol, uid):
    conn = raw_client(module_broker, protocol)
    assert conn.connect(uid, keep_alive=0).reason_code == 0
    conn.expect_nothing(within=2.0)  # absence of a close over a window: the assertion itself
    conn.send(codec.pingreq())
    conn.expect(codec.PINGRESP)


def test_v5_server_keep_alive_caps_client_request(broker_factory, raw_client, uid):
    """With a configured maximum, a client asking for more gets Server Keep Alive = maximum;
    a client asking for less keeps its own value."""
    broker = broker_factory(
        env={"MQTT_KEEP_ALIVE_MAX_KEEP_ALIVE_SEC": "10"},
        mosquitto_conf=["max_keepalive 10"],  # Mosquitto's smallest allowed value is 10
    )
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(f"{uid}-a", keep_alive=60)
    assert ack.reason_code == 0
    assert ack.properties.get("server_keep_alive") == 10, ack.properties

    conn2 = raw_client(broker, codec.MQTT5)
    ack2 = conn2.connect(f"{uid}-b", keep_alive=5)
    assert ack2.reason_code == 0
    assert ack2.properties.get("server_keep_alive", 5) == 5, ack2.properties


@pytest.mark.slow
@pytest.mark.starlingd_only(
    reason="Mosquitto's max_keepalive cannot go below 10 s, so enforcing it takes 15+ s"
)
def test_v5_server_keep_alive_is_enforced(broker_factory, raw_client, uid):
    broker = broker_factory(env={"MQTT_KEEP_ALIVE_MAX_KEEP_ALIVE_SEC": "1"})
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid, keep_alive=600)
    assert ack.properties.get("server_keep_alive") == 1, ack.properties
    silent_since = time.monotonic()
    assert_closed_for_error(conn, broker.kind, {codec.RC_KEEP_ALIVE_TIMEOUT}, timeout=10)
    elapsed = time.monotonic() - silent_since
    assert 1.4 <= elapsed <= 1.5 + LATENESS_S["starlingd"], f"closed after {elapsed:.2f}s"
