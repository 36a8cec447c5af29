"""Self-tests of the helpers (no broker): packet codec and Prometheus parser."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from starling_it import codec, fake_starlingd
from starling_it.brokers import BrokerError, StarlingdBroker
from starling_it.prometheus import metric_sum, parse_prometheus


@pytest.mark.parametrize(
    "value, encoded",
    [(0, b"\x00"), (127, b"\x7f"), (128, b"\x80\x01"), (16383, b"\xff\x7f"),
     (16384, b"\x80\x80\x01"), (268435455, b"\xff\xff\xff\x7f")],
)
def test_varint(value, encoded):
    assert codec.encode_varint(value) == encoded
    assert codec.decode_varint(encoded, 0) == (value, len(encoded))


def test_varint_too_long():
    with pytest.raises(codec.MalformedPacket):
        codec.decode_varint(b"\xff\xff\xff\xff\x7f", 0)


def _roundtrip(data: bytes, protocol: int) -> codec.Packet:
    length, pos = codec.decode_varint(data, 1)
    body = data[pos:]
    assert len(body) == length
    return codec.decode(data[0], body, protocol)


def test_publish_roundtrip_v5_properties():
    props = {
        "payload_format_indicator": 1,
        "message_expiry_interval": 30,
        "topic_alias": 4,
        "response_topic": "r/t",
        "correlation_data": b"\x00\x01",
        "user_property": [("a", "1"), ("a", "2")],
        "subscription_identifier": [1, 268435455],
        "content_type": "text/plain",
    }
    data = codec.publish("a/b", b"payload", qos=2, retain=True, dup=True, packet_id=513,
                         properties=props)
    pkt = _roundtrip(data, codec.MQTT5)
    assert isinstance(pkt, codec.Publish)
    assert (pkt.topic, pkt.payload, pkt.qos, pkt.retain, pkt.dup, pkt.packet_id) == (
        "a/b", b"payload", 2, True, True, 513)
    assert pkt.properties == props


def test_publish_roundtrip_v311():
    data = codec.publish("x", b"", qos=0, protocol=codec.MQTT311)
    assert data == b"\x30\x03\x00\x01x"
    pkt = _roundtrip(data, codec.MQTT311)
    assert (pkt.topic, pkt.payload, pkt.packet_id) == ("x", b"", None)


def test_connect_bytes_v311():
    data = codec.connect("c", protocol=codec.MQTT311, keep_alive=10,
                         will=codec.Will("w", b"p", qos=1, retain=True),
                         username="u", password=b"pw")
    assert data == (
        b"\x10\x1a\x00\x04MQTT\x04\xee\x00\x0a\x00\x01c\x00\x01w\x00\x01p\x00\x01u\x00\x02pw"
    )


def test_connect_bytes_mqtt31():
    data = codec.connect("c", protocol=codec.MQTT31, keep_alive=60)
    assert data == b"\x10\x0f\x00\x06MQIsdp\x03\x02\x00\x3c\x00\x01c"


def test_ack_encodings():
    assert codec.puback(5, protocol=codec.MQTT311) == b"\x40\x02\x00\x05"
    assert codec.pubrel(5, protocol=codec.MQTT5) == b"\x62\x02\x00\x05"
    assert codec.pubrec(5, 0x80, protocol=codec.MQTT5) == b"\x50\x03\x00\x05\x80"
    assert codec.disconnect(0x8E) == b"\xe0\x02\x8e\x00"
    assert codec.disconnect(protocol=codec.MQTT311) == b"\xe0\x00"


def test_decode_connack_and_suback():
    connack = codec.decode(0x20, b"\x01\x00\x03\x21\x00\x14", codec.MQTT5)
    assert connack.session_present and connack.reason_code == 0
    assert connack.properties == {"receive_maximum": 20}
    suback = codec.decode(0x90, b"\x00\x07\x00\x01\x02\x80", codec.MQTT5)
    assert (suback.packet_id, suback.reason_codes) == (7, [1, 2, 0x80])
    v3 = codec.decode(0x90, b"\x00\x07\x01", codec.MQTT311)
    assert v3.reason_codes == [1]


def test_decode_rejects_duplicate_property():
    # Empty topic, then a property block of 10 bytes holding Message Expiry twice.
    body = b"\x00\x00" + b"\x0a\x02\x00\x00\x00\x01\x02\x00\x00\x00\x02"
    with pytest.raises(codec.MalformedPacket):
        codec.decode(0x30, body, codec.MQTT5)


def test_prometheus_parser():
    text = (
        "# HELP connectedSessions Connected sessions\n"
        "# TYPE connectedSessions gauge\n"
        "connectedSessions 3.0\n"
        'droppedMsgs_total{reason="non_writable",kind="qos0"} 7 1700000000000\n'
        'droppedMsgs_total{reason="expired",kind="qos1",} 2\n'
        'odd_label{v="a\\"b\\\\c\\nd"} +Inf\n'
    )
    samples = parse_prometheus(text)
    assert samples[("connectedSessions", frozenset())] == 3.0
    key = ("droppedMsgs_total", frozenset({("reason", "non_writable"), ("kind", "qos0")}))
    assert samples[key] == 7
    assert samples[("odd_label", frozenset({("v", 'a"b\\c\nd')}))] == float("inf")
    assert metric_sum(samples, "droppedMsgs_total") == 9
    assert metric_sum(samples, "droppedMsgs_total", reason="expired") == 2


# --------------------------------------------------------------------------- fixture plumbing


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_starlingd_launcher_contract(tmp_path):
    """StarlingdBroker against a fake daemon that implements only the start-up contract:
    the stale listeners.json is ignored, the ports are read from the fresh one, HTTP works,
    restart binds the same ports, SIGTERM → exit code 0."""
    fake = Path(fake_starlingd.__file__)
    binary = _script(tmp_path / "starlingd", f'exec "{sys.executable}" "{fake}" "$@"')
    broker = StarlingdBroker(tmp_path / "b", env={"FAKE_STARTUP_DELAY": "0.5"}, binary=binary)
    try:
        broker.listeners_file.write_text(json.dumps({"mqtt_tcp": 1, "http": 2}))  # stale
        broker.start()
        assert broker.port not in (None, 1) and broker.http_port not in (None, 2)
        socket.create_connection((broker.host, broker.port), timeout=5).close()
        assert broker.health() == (200, {"status": "UP"})
        assert broker.metrics() == {("connectedSessions", frozenset()): 0.0}
        ports = (broker.port, broker.http_port)
        broker.restart()
        assert (broker.port, broker.http_port) == ports
        assert broker.stop() == 0
        log = broker.log_text()
        assert "log=debug" in log and "config/starling.yml" in log
        assert log.count("===== start #") == 2
    finally:
        broker.close()


def test_starlingd_launcher_reports_early_exit(tmp_path):
    binary = _script(tmp_path / "starlingd", 'echo "config error: bad key"; exit 3')
    broker = StarlingdBroker(tmp_path / "b", binary=binary)
    with pytest.raises(BrokerError, match="config error: bad key"):
        broker.start()
    broker.close()
