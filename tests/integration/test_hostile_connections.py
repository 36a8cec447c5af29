"""Hostile clients against the real daemon: the connect deadline (from accept, through the TLS
handshake, the WebSocket upgrade and a half-sent CONNECT), the per-listener cap, per-address
connection and connect-rate limits, TCP keep-alive, an authentication flood that must not lock
out a legitimate client, the bounded unauthorized-client log, and the HTTP server's slots
(health answers while the API port is full).

Per-address tests open sockets from several loopback source addresses (127.0.0.0/8 is all
local on Linux), so the suite's own 127.0.0.1 clients are never the ones limited.

starlingd only: every limit is starlingd configuration."""

from __future__ import annotations

import json
import socket
import sqlite3
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from starling_it import codec, credentials
from starling_it.pki import Pki
from starling_it.ws import WsClient

pytestmark = pytest.mark.starlingd_only(reason="starlingd's connection limits")

CONNECT_TIMEOUT_S = 2.0
# Closing is the behaviour under test: the wait is bounded by the timeout plus this much
# scheduling slack (the deadline timer, a loaded CI machine).
SLACK_S = 3.0


# ------------------------------------------------------------------------------ helpers


def open_socket(port: int, source: str = "127.0.0.1", timeout: float = 15.0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def seconds_until_closed(sock: socket.socket, limit: float) -> float | None:
    """Reads until the server closes (EOF or reset); the seconds it took, or None when the
    socket was still open after `limit` seconds."""
    start = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - start < limit:
        try:
            data = sock.recv(4096)
        except socket.timeout:
            continue
        except (ConnectionResetError, ssl.SSLError, OSError):
            return time.monotonic() - start
        if data == b"":
            return time.monotonic() - start
    return None


def closed_at_once(sock: socket.socket) -> bool:
    return seconds_until_closed(sock, 2.0) is not None


def connack_code(sock: socket.socket) -> int | None:
    """The CONNACK's reason/return code, or None when the server closed instead."""
    data = b""
    try:
        while len(data) < 4:
            chunk = sock.recv(4 - len(data))
            if not chunk:
                return None
            data += chunk
    except (ConnectionResetError, OSError):
        return None
    assert data[0] == 0x20, f"not a CONNACK: {data!r}"
    return data[3]


def mqtt_connect(
    port: int,
    client_id: str,
    source: str = "127.0.0.1",
    username: str | None = None,
    password: str | None = None,
    protocol: int = codec.MQTT5,
) -> int | None:
    """A complete CONNECT from `source`; the CONNACK code (None = closed without one)."""
    try:
        s = open_socket(port, source)
    except OSError:
        return None
    with s:
        try:
            s.sendall(
                codec.connect(client_id, protocol=protocol, username=username, password=password)
            )
        except OSError:
            return None
        return connack_code(s)


def metric(broker, name: str, **labels: str) -> float:
    return broker.metrics().get((name, frozenset(labels.items())), 0.0)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)  # polling a condition with a deadline
    raise AssertionError(f"timed out waiting for {what}")


def http_get(port: int, path: str, timeout: float = 5.0) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def listeners(broker) -> dict:
    return json.loads((broker.data_dir / "listeners.json").read_text())


def deadline_env(**extra: str) -> dict[str, str]:
    return {"LISTENER_CONNECT_TIMEOUT_MS": str(int(CONNECT_TIMEOUT_S * 1000)), **extra}


@pytest.fixture
def pki(tmp_path) -> Pki:
    p = Pki(tmp_path / "pki")
    p.make_ca("ca")
    p.make_cert("server", "starling-server-1", "ca")
    return p


def tls_client_context(pki: Pki) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(pki.path("ca.pem")))
    return ctx


# ------------------------------------------------------------------------ connect deadline


def test_silent_and_half_sent_connections_are_closed_at_the_connect_timeout(broker_factory):
    broker = broker_factory(env=deadline_env())
    opened = time.monotonic()
    silent = open_socket(broker.port)
    half = open_socket(broker.port)
    half.sendall(codec.connect("half-sent")[:7])  # the fixed header and part of the body
    for sock in (silent, half):
        assert seconds_until_closed(sock, CONNECT_TIMEOUT_S + SLACK_S) is not None, (
            "still open after the connect timeout"
        )
        took = time.monotonic() - opened
        assert took >= CONNECT_TIMEOUT_S - 0.5, f"closed after {took:.2f}s, before the timeout"
        sock.close()
    wait_for(
        lambda: metric(broker, "connectTimeouts_total", listener="tcp", phase="connect") >= 2,
        what="connectTimeouts_total{phase=connect} to count both",
    )
    # A client that sends its CONNECT in time is not affected.
    assert mqtt_connect(broker.port, "in-time") == 0


def test_deadline_covers_the_tls_handshake_and_runs_on_after_it(broker_factory, pki):
    broker = broker_factory(
        env=deadline_env(
            LISTENER_SSL_ENABLED="true",
            LISTENER_SSL_PEM_CERT=str(pki.path("server.pem")),
            LISTENER_SSL_PEM_KEY=str(pki.path("server.key")),
        )
    )
    port = broker.ports["ssl"]
    # No ClientHello at all: closed during the handshake.
    no_hello = open_socket(port)
    assert seconds_until_closed(no_hello, CONNECT_TIMEOUT_S + SLACK_S) is not None
    no_hello.close()
    # A complete handshake, then silence: the deadline started at accept still applies.
    started = time.monotonic()
    tls = tls_client_context(pki).wrap_socket(open_socket(port), server_hostname="127.0.0.1")
    took = seconds_until_closed(tls, CONNECT_TIMEOUT_S + SLACK_S)
    assert took is not None, "a TLS client that never sends CONNECT is still open"
    assert time.monotonic() - started <= CONNECT_TIMEOUT_S + SLACK_S
    tls.close()
    wait_for(
        lambda: metric(broker, "connectTimeouts_total", listener="ssl", phase="handshake") >= 1
        and metric(broker, "connectTimeouts_total", listener="ssl", phase="connect") >= 1,
        what="connectTimeouts_total for both phases on ssl",
    )


def test_deadline_covers_the_websocket_upgrade_and_runs_on_after_it(broker_factory):
    broker = broker_factory(env=deadline_env())
    port = broker.ports["ws"]
    no_upgrade = open_socket(port)
    no_upgrade.sendall(b"GET /mqtt HTTP/1.1\r\nHost: x\r\n")  # never finishes the request
    assert seconds_until_closed(no_upgrade, CONNECT_TIMEOUT_S + SLACK_S) is not None
    no_upgrade.close()
    started = time.monotonic()
    ws = WsClient.open("127.0.0.1", port)
    took = seconds_until_closed(ws.sock, CONNECT_TIMEOUT_S + SLACK_S)
    assert took is not None, "a WebSocket client that never sends CONNECT is still open"
    assert time.monotonic() - started <= CONNECT_TIMEOUT_S + SLACK_S
    ws.sock.close()
    wait_for(
        lambda: metric(broker, "connectTimeouts_total", listener="ws", phase="handshake") >= 1
        and metric(broker, "connectTimeouts_total", listener="ws", phase="connect") >= 1,
        what="connectTimeouts_total for both phases on ws",
    )


def test_accepted_sockets_have_tcp_keepalive(broker_factory):
    broker = broker_factory(env={"LISTENER_SO_KEEP_ALIVE_IDLE": "45"})
    sock = open_socket(broker.port)
    sock.sendall(codec.connect("keepalive-probe"))
    assert connack_code(sock) == 0
    out = subprocess.run(
        ["ss", "-tnoH", "state", "established", f"( sport = :{broker.port} )"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "keepalive" in out, f"no keep-alive timer on the server's socket:\n{out}"
    sock.close()


# --------------------------------------------------------------------- admission limits


def test_per_address_connection_cap(broker_factory):
    broker = broker_factory(
        env={"LISTENER_MAX_CONNECTIONS_PER_ADDRESS": "3", "LISTENER_CONNECT_TIMEOUT_MS": "60000"}
    )
    held = [open_socket(broker.port, "127.0.0.2") for _ in range(3)]
    for s in held:
        s.sendall(codec.connect(f"held-{held.index(s)}"))
        assert connack_code(s) == 0
    refused = open_socket(broker.port, "127.0.0.2")
    assert closed_at_once(refused), "a fourth connection from 127.0.0.2 was accepted"
    # Another address is not limited by 127.0.0.2's connections; a freed slot is usable again.
    assert mqtt_connect(broker.port, "other-address", source="127.0.0.3") == 0
    held.pop().close()
    wait_for(
        lambda: mqtt_connect(broker.port, "again", source="127.0.0.2") == 0,
        what="the freed slot",
    )
    assert (
        metric(broker, "connectionsRefused_total", listener="tcp", reason="address_connections")
        >= 1
    )
    for s in held:
        s.close()


def test_per_address_connect_rate(broker_factory):
    broker = broker_factory(env={"LISTENER_CONNECT_RATE_PER_ADDRESS": "5:60"})
    for i in range(5):
        assert mqtt_connect(broker.port, f"rate-{i}", source="127.0.0.4") == 0
    assert mqtt_connect(broker.port, "rate-6", source="127.0.0.4") is None
    assert mqtt_connect(broker.port, "rate-other", source="127.0.0.5") == 0
    assert metric(broker, "connectionsRefused_total", listener="tcp", reason="address_rate") == 1


def test_listener_max_connections(broker_factory):
    broker = broker_factory(
        env={"LISTENER_TCP_MAX_CONNECTIONS": "2", "LISTENER_MAX_CONNECTIONS_PER_ADDRESS": "0"}
    )
    a = open_socket(broker.port)
    a.sendall(codec.connect("max-a"))
    assert connack_code(a) == 0
    b = open_socket(broker.port, "127.0.0.6")
    b.sendall(codec.connect("max-b"))
    assert connack_code(b) == 0
    assert metric(broker, "listenerConnections", listener="tcp") == 2
    c = open_socket(broker.port, "127.0.0.7")
    assert closed_at_once(c)
    assert metric(broker, "connectionsRefused_total", listener="tcp", reason="max_connections") == 1
    a.close()
    wait_for(lambda: mqtt_connect(broker.port, "max-c") == 0, what="the freed slot")
    b.close()


# ------------------------------------------------------------------------ authentication


def secured(broker_factory, **extra: str):
    return broker_factory(
        env=credentials.env(**extra), config_text=credentials.config_text()
    )


@pytest.mark.timeout(150)
def test_wrong_password_flood_does_not_lock_out_a_legitimate_client(broker_factory):
    """A flood of wrong passwords for a known user from many addresses overloads bcrypt (one
    verify thread, a 1 s provider timeout: half a second of queue). Shedding must not open the
    provider's circuit breaker: the right password keeps working during and after the flood."""
    broker = secured(
        broker_factory,
        SECURITY_MQTT_BASIC_VERIFY_THREADS="1",
        SECURITY_MQTT_PROVIDER_TIMEOUT_MS="1000",
        SECURITY_MQTT_AUTH_CACHE_TTL_MS="0",
    )
    dev = credentials.DEVICE
    stop = threading.Event()
    flood_codes: list[int | None] = []

    def flood(source: str) -> None:
        n = 0
        while not stop.is_set():
            flood_codes.append(
                mqtt_connect(broker.port, f"flood-{source}-{n}", source, dev["username"], "wrong")
            )
            n += 1

    threads = [
        threading.Thread(target=flood, args=(f"127.0.3.{i}",), daemon=True) for i in range(1, 41)
    ]
    for t in threads:
        t.start()
    try:
        wait_for(
            lambda: metric(broker, "authFailures_total", provider="none", reason="shed") > 0
            or metric(broker, "authFailures_total", provider="MQTT_BASIC", reason="shed") > 0
            or metric(broker, "authProviderShed_total", provider="MQTT_BASIC") > 0,
            timeout=20,
            what="the flood to overload bcrypt (requests shed)",
        )
        # During the flood: the legitimate client gets in (it may be told "busy" meanwhile).
        ok_during = False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not ok_during:
            ok_during = mqtt_connect(broker.port, "legit", "127.0.0.1", **dev) == 0
        assert ok_during, "the right password never worked during the flood"
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    # Right after it: at once, not after a 30 s circuit-breaker cool-down.
    assert mqtt_connect(broker.port, "legit-after", "127.0.0.1", **dev) == 0
    assert metric(broker, "authProviderSkipped_total", provider="MQTT_BASIC") == 0
    assert 0x86 in flood_codes, "the flood was never even checked"


def test_failed_attempts_are_throttled_per_address(broker_factory):
    broker = secured(broker_factory, SECURITY_MQTT_FAILED_AUTH_PER_ADDRESS="5:600")
    dev = credentials.DEVICE
    codes = [
        mqtt_connect(broker.port, f"guess-{i}", "127.0.0.8", dev["username"], f"guess-{i}")
        for i in range(8)
    ]
    assert codes[:5] == [0x86] * 5
    assert codes[5:] == [0x9F] * 3, "past five failures the address is refused at once"
    # Another address, and the right password from elsewhere, are unaffected.
    assert mqtt_connect(broker.port, "legit", "127.0.0.9", **dev) == 0
    v3 = mqtt_connect(
        broker.port, "guess-v3", "127.0.0.8", dev["username"], "x", protocol=codec.MQTT311
    )
    assert v3 == 0x03, "v3 has only Server unavailable for it"
    assert metric(broker, "authFailures_total", provider="none", reason="throttled") == 4


def test_unauthorized_log_is_bounded(broker_factory):
    broker = broker_factory(
        env={
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "false",
            "SECURITY_MQTT_UNAUTHORIZED_CLIENTS_MAX_ROWS": "25",
            "SECURITY_MQTT_FAILED_AUTH_PER_ADDRESS": "",
        }
    )
    # 100 refused CONNECTs with ~60 KiB client ids from one address: at most 10 rows (the
    # default per-address rate), each id cut to 256 bytes.
    for i in range(100):
        cid = f"{i:03d}-" + "x" * 60000
        assert mqtt_connect(broker.port, cid, "127.0.0.10") == 0x87
    # One refusal from each of 40 other addresses: the table keeps the newest 25 rows.
    for i in range(1, 41):
        assert mqtt_connect(broker.port, f"spread-{i}", f"127.0.4.{i}") == 0x87
    wait_for(
        lambda: metric(broker, "unauthorizedClientsDropped_total") >= 90,
        what="unauthorizedClientsDropped_total to count the rows not written",
    )
    assert broker.stop() == 0
    db = sqlite3.connect(f"file:{broker.data_dir / 'metadata.db'}?mode=ro", uri=True)
    try:
        (rows,) = db.execute("SELECT count(*) FROM unauthorized_client").fetchone()
        (longest,) = db.execute("SELECT max(length(client_id)) FROM unauthorized_client").fetchone()
        (flood,) = db.execute(
            "SELECT count(*) FROM unauthorized_client WHERE ip_address = '127.0.0.10'"
        ).fetchone()
    finally:
        db.close()
    assert rows <= 25
    assert longest <= 256
    assert flood <= 10


# ---------------------------------------------------------------------------------- HTTP


def test_health_answers_while_the_api_port_is_full(broker_factory):
    broker = broker_factory(
        env={
            "HTTP_API_BIND_PORT": "0",
            "SECURITY_ADMIN_TOKEN": "hostile-test-token",
            "HTTP_MAX_CONNECTIONS": "4",
            "HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
            "HTTP_HEALTH_RESERVED_CONNECTIONS": "2",
        }
    )
    ports = listeners(broker)
    api_port = ports["http_api"]
    assert api_port != ports["http"]
    # /api moved: it is not on the health and metrics port any more.
    assert http_get(ports["http"], "/api/drops") == 404
    assert http_get(api_port, "/api/drops") == 401  # there, behind the token

    def keep_alive_request(port: int) -> socket.socket:
        s = open_socket(port)
        s.sendall(b"GET /actuator/health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 ")  # answered: the slot is registered
        return s

    # Fill every slot of the API port (ordinary ones with keep-alive requests, then the
    # reserved ones with silent connections, then one more that is refused).
    hogs = [keep_alive_request(api_port) for _ in range(4)]
    hogs += [open_socket(api_port) for _ in range(2)]
    wait_for(lambda: closed_at_once(open_socket(api_port)), what="the API port to be full")
    assert http_get(ports["http"], "/actuator/health") == 200

    # Even with the main port's ordinary slots taken, the probe gets a reserved slot.
    main_hogs = [keep_alive_request(ports["http"]) for _ in range(4)]
    assert http_get(ports["http"], "/actuator/health") == 200
    assert http_get(ports["http"], "/actuator/prometheus") == 503
    for s in hogs + main_hogs:
        s.close()
    wait_for(
        lambda: http_get(ports["http"], "/actuator/prometheus") == 200, what="slots to free up"
    )
    assert (
        metric(broker, "httpConnectionsRefused_total", server="http", reason="reserved_slot") >= 1
    )
    assert metric(broker, "httpConnectionsRefused_total", server="api", reason="max_connections") >= 1


# -------------------------------------------------------------------- silent sockets, slow


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_many_silent_sockets_are_closed_and_legitimate_clients_connect_throughout(
    broker_factory,
):
    """2,000 silent sockets from 20 addresses (within the per-address limits), all closed by
    the connect timeout while a legitimate client keeps connecting; bench/silent_sockets.py
    is the 10,000-socket measurement."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    broker = broker_factory(env=deadline_env())
    sockets = []
    for i in range(2000):
        sockets.append(open_socket(broker.port, f"127.0.5.{1 + i % 20}"))
    opened = time.monotonic()
    legit_ok = legit_failed = 0
    while time.monotonic() - opened < CONNECT_TIMEOUT_S + 0.5:
        if mqtt_connect(broker.port, "legit-during", "127.0.0.1") == 0:
            legit_ok += 1
        else:
            legit_failed += 1
        time.sleep(0.02)  # a device reconnecting, not a connect flood of its own
    open_left = []
    for s in sockets:
        remaining = max(0.1, opened + CONNECT_TIMEOUT_S + SLACK_S - time.monotonic())
        if seconds_until_closed(s, remaining) is None:
            open_left.append(s)
        s.close()
    assert not open_left, f"{len(open_left)} silent sockets still open after the timeout"
    assert legit_failed == 0 and legit_ok > 0
    wait_for(
        lambda: metric(broker, "connectTimeouts_total", listener="tcp", phase="connect") >= 2000,
        what="every silent socket counted",
    )
