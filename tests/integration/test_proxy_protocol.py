"""PROXY protocol v1/v2 on the listeners (issue 6): the header's source address replaces the
socket's in logs and blocked-client IP rules; a PROXY listener closes a connection without a
valid header and counts it; PROXY in front of TLS. starlingd only (listener configuration).

Headers are crafted here byte by byte, as HAProxy's `send-proxy` / `send-proxy-v2` write them.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import struct
import time

import pytest

from starling_it import codec
from starling_it.brokers import REPO_ROOT
from starling_it.pki import Pki
from starling_it.prometheus import metric_sum
from starling_it.raw_client import RawClient

pytestmark = pytest.mark.starlingd_only(reason="PROXY protocol configured through starlingd env")

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
BANNED = {codec.MQTT5: 0x8A, codec.MQTT311: 0x05}
BLOCKED_IP = "203.0.113.66"


def proxy_v1(src: str, src_port: int, dst: str | None = None, dst_port: int = 1883) -> bytes:
    family = "TCP6" if ":" in src else "TCP4"
    dst = dst or ("2001:db8::1" if family == "TCP6" else "10.0.0.1")
    return f"PROXY {family} {src} {dst} {src_port} {dst_port}\r\n".encode()


def proxy_v2(src: str, src_port: int, dst: str | None = None, dst_port: int = 1883) -> bytes:
    source = ipaddress.ip_address(src)
    if source.version == 4:
        dest = ipaddress.ip_address(dst or "10.0.0.1")
        family = 0x11  # AF_INET, STREAM
    else:
        dest = ipaddress.ip_address(dst or "2001:db8::1")
        family = 0x21  # AF_INET6, STREAM
    addresses = source.packed + dest.packed + struct.pack("!HH", src_port, dst_port)
    return V2_SIGNATURE + bytes([0x21, family]) + struct.pack("!H", len(addresses)) + addresses


def proxy_v2_local() -> bytes:
    return V2_SIGNATURE + bytes([0x20, 0x00]) + struct.pack("!H", 0)


def proxied_client(broker, header: bytes, protocol: int = codec.MQTT5) -> RawClient:
    c = RawClient(broker.host, broker.port, protocol=protocol)
    c.send(header)
    return c


def connect_after_header(broker, header: bytes, client_id: str, protocol=codec.MQTT5):
    """Header and CONNECT in one segment: the bytes after the header must reach the decoder."""
    c = RawClient(broker.host, broker.port, protocol=protocol)
    try:
        c.send(header + codec.connect(client_id, protocol=protocol))
        return c.expect(codec.CONNACK)
    finally:
        c.close()


def wait_for_log(broker, needle: str, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = broker.log_text()
        if needle in text:
            return text
        time.sleep(0.05)  # polling the log file with a deadline
    raise AssertionError(f"{needle!r} not in the broker log:\n{broker.log_tail()}")


@pytest.fixture
def proxy_broker(broker_factory):
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    blocked-clients: []\n" in text
    text = text.replace(
        "    blocked-clients: []\n",
        "    blocked-clients:\n"
        "      - type: IP_ADDRESS\n"
        f"        value: {BLOCKED_IP}\n"
        "        description: proxied and blocked\n",
    )
    return broker_factory(
        env={"MQTT_PROXY_PROTOCOL_ENABLED": "true", "SECURITY_MQTT_ALLOW_ANONYMOUS": "true"},
        config_text=text,
    )


@pytest.mark.parametrize(
    "header, shown",
    [
        (proxy_v1("198.51.100.7", 40001), "198.51.100.7:40001"),
        (proxy_v1("2001:db8::7", 40002), "[2001:db8::7]:40002"),
        (proxy_v2("198.51.100.8", 40003), "198.51.100.8:40003"),
        (proxy_v2("2001:db8:0:0::8", 40004), "[2001:db8::8]:40004"),
    ],
    ids=["v1-ipv4", "v1-ipv6", "v2-ipv4", "v2-ipv6"],
)
def test_header_address_replaces_the_socket_address(proxy_broker, header, shown, uid):
    assert connect_after_header(proxy_broker, header, uid).reason_code == 0
    wait_for_log(proxy_broker, f"client connected: id={uid} address={shown} ")


def test_header_and_connect_in_separate_segments(proxy_broker, uid):
    c = proxied_client(proxy_broker, proxy_v1("198.51.100.9", 40005))
    try:
        assert c.connect(uid).reason_code == 0
    finally:
        c.close()
    wait_for_log(proxy_broker, f"client connected: id={uid} address=198.51.100.9:40005 ")


def test_local_header_keeps_the_socket_address(proxy_broker, uid):
    assert connect_after_header(proxy_broker, proxy_v2_local(), uid).reason_code == 0
    wait_for_log(proxy_broker, f"client connected: id={uid} address=127.0.0.1:")


@pytest.mark.parametrize("protocol", [codec.MQTT5, codec.MQTT311], ids=["v5", "v311"])
def test_blocked_ip_rule_applies_to_the_proxied_address(proxy_broker, protocol, uid):
    for header in (proxy_v1(BLOCKED_IP, 1234), proxy_v2(BLOCKED_IP, 1234)):
        ack = connect_after_header(proxy_broker, header, uid, protocol)
        assert ack.reason_code == BANNED[protocol]
    wait_for_log(proxy_broker, f"client refused: id={uid} address={BLOCKED_IP}:1234")
    # The same client through the same proxy, for another real address.
    other = connect_after_header(proxy_broker, proxy_v1("203.0.113.67", 1234), uid, protocol)
    assert other.reason_code == 0


@pytest.mark.parametrize(
    "first_bytes",
    [
        codec.connect("no-header"),  # plain MQTT on a PROXY listener
        b"PROXY TCP4 1.2.3.4.5 10.0.0.1 1 2\r\n",  # malformed v1
        V2_SIGNATURE + bytes([0x31, 0x11]) + struct.pack("!H", 12) + bytes(12),  # version 3
    ],
    ids=["no-header", "malformed-v1", "bad-v2-version"],
)
def test_connection_without_valid_header_is_closed_and_counted(proxy_broker, first_bytes):
    before = metric_sum(proxy_broker.metrics(), "handshakeFailures_total", reason="proxy")
    c = RawClient(proxy_broker.host, proxy_broker.port)
    try:
        c.send(first_bytes)
        assert c.expect_closed() == [], "no MQTT answer without a PROXY header"
    finally:
        c.close()
    after = metric_sum(proxy_broker.metrics(), "handshakeFailures_total", reason="proxy")
    assert after == before + 1
    wait_for_log(proxy_broker, "listener.tcp: connection from 127.0.0.1:")


def test_per_listener_override_turns_it_off(broker_factory, raw_client, uid):
    broker = broker_factory(
        env={
            "MQTT_PROXY_PROTOCOL_ENABLED": "true",
            "MQTT_TCP_PROXY_PROTOCOL_ENABLED": "false",
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "true",
        }
    )
    assert raw_client(broker).connect(uid).reason_code == 0


def test_proxy_header_before_tls(broker_factory, tmp_path, uid):
    pki = Pki(tmp_path / "pki")
    pki.make_ca("ca")
    pki.make_cert("server", "starling-server-1", "ca")
    broker = broker_factory(
        env={
            "LISTENER_SSL_ENABLED": "true",
            "LISTENER_SSL_PEM_CERT": str(pki.path("server.pem")),
            "LISTENER_SSL_PEM_KEY": str(pki.path("server.key")),
            "MQTT_SSL_PROXY_PROTOCOL_ENABLED": "true",
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "true",
        }
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(pki.path("ca.pem")))
    with socket.create_connection((broker.host, broker.ports["ssl"]), timeout=10) as raw:
        raw.sendall(proxy_v1("198.51.100.20", 50000))
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(codec.connect(uid, protocol=codec.MQTT311))
            assert s.recv(4)[:1] == b"\x20", "CONNACK expected over TLS after the PROXY header"
    wait_for_log(broker, f"client connected: id={uid} address=198.51.100.20:50000 ")
    # The plain TCP listener inherits listener.proxy_enabled (false): no header needed there.
    c = RawClient(broker.host, broker.port)
    try:
        assert c.connect(uid + "-plain").reason_code == 0
    finally:
        c.close()
