"""STARLING_LOG_FORMAT=json: every line starlingd writes after loading its configuration is one
JSON object (time, level, thread, message) that a log shipper can parse, client-supplied text
included."""

from __future__ import annotations

import json
import time

import pytest

from starling_it.brokers import BrokerError

pytestmark = pytest.mark.starlingd_only(reason="log format is starlingd's")


def _json_lines(text: str) -> list[dict]:
    """The daemon's lines (the harness marks each start with a "===== start" line)."""
    return [json.loads(line) for line in text.splitlines()
            if line.strip() and not line.startswith("===== ")]


def test_json_lines_parse_and_carry_the_events(broker_factory, paho_client, uid):
    broker = broker_factory(env={"STARLING_LOG_FORMAT": "json"})
    # A client id with a quote, a backslash and non-ASCII text lands in the connect log line.
    client_id = f'json-"é\\-{uid}'
    client = paho_client(broker, client_id=client_id)
    client.disconnect()

    deadline = time.monotonic() + 10
    connected = []
    while not connected and time.monotonic() < deadline:
        lines = _json_lines(broker.log_text())  # raises on any line that is not JSON
        connected = [line for line in lines
                     if line["message"].startswith(f"client connected: id={client_id} ")]
        if not connected:
            time.sleep(0.1)  # polling the log file with a deadline
    assert connected, broker.log_tail()
    for line in lines:
        assert set(line) == {"time", "level", "thread", "message"}, line
        assert line["level"] in {"trace", "debug", "info", "warn", "error", "critical"}
        assert line["time"].endswith("Z") and len(line["time"]) == 24, line
        assert isinstance(line["thread"], int)
    assert any(line["message"].startswith("MQTT tcp listener on ") for line in lines)


def test_unknown_log_format_fails_start_naming_the_key(broker_factory):
    broker = broker_factory(env={"STARLING_LOG_FORMAT": "yaml"}, start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "starling.log_format" in broker.log_text()
    assert "is not one of: text, json" in broker.log_text()
