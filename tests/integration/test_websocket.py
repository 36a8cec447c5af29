"""MQTT over WebSocket (listener.ws) and secure WebSocket (listener.wss): paho over both, and a
raw client that controls framing — a packet split over frames, several packets in one frame,
text frames — plus the upgrade refusals (wrong path, missing subprotocol) [MQTT-6.0.0-*].
starlingd only: the Mosquitto fixture has no WebSocket listener.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from starling_it import codec
from starling_it.pki import Pki
from starling_it.ws import OP_BINARY, OP_CONTINUATION, OP_TEXT, UpgradeRefused, WsClient

pytestmark = pytest.mark.starlingd_only(reason="WebSocket listener configured through env")

CONNACK_OK_V5 = bytes([0x20])


@pytest.fixture
def ws_clients():
    created: list[WsClient] = []

    def make(broker, **kw) -> WsClient:
        c = WsClient.open(broker.host, broker.ports[kw.pop("listener", "ws")], **kw)
        created.append(c)
        return c

    yield make
    for c in created:
        c.close()


def read_packet(ws: WsClient) -> tuple[int, bytes]:
    """One MQTT packet from the WebSocket byte stream: (first byte, body)."""
    first = ws.recv_bytes(1)[0]
    length, shift = 0, 0
    while True:
        b = ws.recv_bytes(1)[0]
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return first, ws.recv_bytes(length) if length else b""


def test_ws_listener_is_on_by_default(broker):
    assert broker.ports.get("ws"), broker.ports


def test_paho_over_websocket(broker, paho_client, topic, protocol):
    sub = paho_client(broker, port=broker.ports["ws"], transport="websockets", protocol=protocol)
    assert sub.subscribe(topic, qos=1) == [1]
    pub = paho_client(broker, port=broker.ports["ws"], transport="websockets", protocol=protocol)
    pub.publish_and_wait(topic, b"over ws", qos=1)
    assert sub.expect_message().payload == b"over ws"
    # Across transports: a TCP publisher reaches the WebSocket subscriber.
    tcp = paho_client(broker, protocol=protocol)
    tcp.publish_and_wait(topic, b"from tcp", qos=1)
    assert sub.expect_message().payload == b"from tcp"


def test_paho_over_secure_websocket(broker_factory, paho_client, topic, tmp_path):
    pki = Pki(tmp_path / "pki")
    pki.make_ca("ca")
    pki.make_cert("server", "starling-wss", "ca")
    broker = broker_factory(
        env={
            "LISTENER_WSS_ENABLED": "true",
            "LISTENER_WSS_PEM_CERT": str(pki.path("server.pem")),
            "LISTENER_WSS_PEM_KEY": str(pki.path("server.key")),
        }
    )
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(pki.path("ca.pem")))
    sub = paho_client(
        broker, port=broker.ports["wss"], transport="websockets", tls_context=ctx
    )
    assert sub.subscribe(topic, qos=1) == [1]
    pub = paho_client(broker, port=broker.ports["wss"], transport="websockets", tls_context=ctx)
    pub.publish_and_wait(topic, b"over wss", qos=1)
    assert sub.expect_message().payload == b"over wss"


def test_connect_split_over_two_messages_and_over_two_fragments(broker, ws_clients, uid):
    connect = codec.connect(f"{uid}-a", protocol=codec.MQTT5)
    ws = ws_clients(broker)
    assert ws.protocol == "mqtt"
    ws.send_frame(connect[:5])
    ws.send_frame(connect[5:])
    first, body = read_packet(ws)
    assert first == 0x20 and body[1] == 0x00, (first, body)

    # The same split as one fragmented message (binary frame without FIN + continuation).
    connect = codec.connect(f"{uid}-b", protocol=codec.MQTT5)
    ws2 = ws_clients(broker)
    ws2.send_frame(connect[:3], OP_BINARY, fin=False)
    ws2.send_frame(connect[3:], OP_CONTINUATION, fin=True)
    first, body = read_packet(ws2)
    assert first == 0x20 and body[1] == 0x00, (first, body)


def test_two_packets_in_one_frame(broker, ws_clients, uid, topic):
    ws = ws_clients(broker)
    frame = codec.connect(uid, protocol=codec.MQTT5) + codec.subscribe(
        1, [(topic, 1)], protocol=codec.MQTT5
    )
    ws.send_frame(frame)
    first, _ = read_packet(ws)
    assert first == 0x20
    first, body = read_packet(ws)
    assert first == 0x90, f"SUBACK expected, got 0x{first:02x}"


def test_offered_subprotocols_choose_the_first_configured(broker, ws_clients):
    assert ws_clients(broker, protocols="wamp, mqttv3.1, mqtt").protocol == "mqttv3.1"


@pytest.mark.parametrize(
    "path, protocols, status",
    [("/other", "mqtt", 404), ("/mqtt", None, 400), ("/mqtt", "wamp", 400)],
    ids=["wrong-path", "no-subprotocol", "unknown-subprotocol"],
)
def test_upgrade_refused(broker, ws_clients, path, protocols, status):
    with pytest.raises(UpgradeRefused) as refused:
        ws_clients(broker, path=path, protocols=protocols)
    assert refused.value.status == status


def test_text_frame_closes_the_connection(broker, ws_clients, uid):
    ws = ws_clients(broker)
    ws.send_frame(codec.connect(uid, protocol=codec.MQTT5))
    assert read_packet(ws)[0] == 0x20
    ws.send_frame(b"hello", OP_TEXT)
    ws.expect_closed()


JS_DIR = Path(__file__).resolve().parent / "js"


@pytest.mark.parametrize("version", [4, 5], ids=["v311", "v5"])
def test_mqtt_js_over_websocket(broker, topic, version):
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "mqtt").is_dir():
        pytest.skip("node or MQTT.js missing: run scripts/install-deps.sh (npm ci in js/)")
    done = subprocess.run(
        [node, str(JS_DIR / "ws_roundtrip.mjs"), str(broker.ports["ws"]), topic, str(version)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"topic": topic, "payload": "hello from mqtt.js"}


def test_sigterm_disconnects_websocket_clients_and_restart_reuses_the_port(
    broker, paho_client, ws_clients, uid
):
    ws_port = broker.ports["ws"]
    client = paho_client(broker, port=ws_port, transport="websockets", protocol=5)
    assert broker.stop() == 0
    info = client.wait_for_disconnect()
    assert info.from_server and info.reason_code == codec.RC_SERVER_SHUTTING_DOWN, info
    broker.start()
    assert broker.ports["ws"] == ws_port
    ws = ws_clients(broker)
    ws.send_frame(codec.connect(uid, protocol=codec.MQTT5))
    assert read_packet(ws)[0] == 0x20
