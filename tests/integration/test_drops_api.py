"""GET /api/drops (issue 7 §3): which limit fired for whom. Drives the real daemon into an
incoming rate limit and a stalled subscriber, then checks the breakdown by client and by topic
against droppedMsgs_total."""

from __future__ import annotations

import socket
import time
import urllib.parse

import pytest

from starling_it import rest
from starling_it.prometheus import metric_sum

pytestmark = pytest.mark.starlingd_only(reason="GET /api/drops is starlingd's")

TOKEN = "dr0ps"
QUOTA_EXCEEDED = 0x97


def drops(broker, token: str | None = TOKEN, **params: str) -> tuple[int, dict]:
    return rest.call(broker, "GET", f"/api/drops?{urllib.parse.urlencode(params)}", token)


def dropped(broker, reason: str) -> float:
    return metric_sum(broker.metrics(), "droppedMsgs_total", reason=reason)


def test_incoming_rate_drops_are_reported_for_the_publisher_and_topic(
    broker_factory, raw_client, uid
):
    limit = 5  # per hour: nothing refills while the test runs
    broker = broker_factory(
        env={
            "SECURITY_ADMIN_TOKEN": TOKEN,
            "MQTT_INCOMING_RATE_LIMITS_ENABLED": "true",
            "MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG": f"1000:1,{limit}:3600",
        }
    )
    topic = f"drops/{uid}/in"
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    quiet = raw_client(broker)
    assert quiet.connect(f"{uid}-quiet").reason_code == 0
    assert quiet.publish(topic, b"fine", qos=1).reason_code == 0

    codes = [pub.publish(topic, b"x", qos=1).reason_code for _ in range(12)]
    assert codes == [0] * limit + [QUOTA_EXCEEDED] * 7  # PUBACK: the drop already happened

    status, body = drops(broker, by="client")
    assert status == 200, body
    assert body["windowSeconds"] == 300 and body["bucketSeconds"] == 60
    assert body["data"] == [
        {"clientId": f"{uid}-pub", "total": 7, "reasons": {"incoming_rate": 7}}
    ]
    assert body["totals"] == {"incoming_rate": 7} and body["total"] == 7
    assert dropped(broker, "incoming_rate") == body["total"]  # counter and breakdown agree

    status, body = drops(broker, by="topic", reason="incoming_rate")
    assert status == 200
    assert body["data"] == [{"topic": topic, "total": 7, "reasons": {"incoming_rate": 7}}]

    # Filters: one client; a reason it does not have.
    assert drops(broker, clientId=f"{uid}-pub")[1]["data"][0]["total"] == 7
    assert drops(broker, clientId=f"{uid}-quiet")[1]["data"] == []
    assert drops(broker, reason="non_writable")[1]["data"] == []


def test_bad_requests_name_the_parameter_and_the_token_is_required(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert drops(broker, token=None)[0] == 401
    assert drops(broker, token="wrong")[0] == 401
    for params, name in (
        ({"by": "node"}, "by"),
        ({"reason": "bored"}, "reason"),
        ({"limit": "0"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"by": "topic", "clientId": "c"}, "clientId"),
    ):
        status, body = drops(broker, **params)
        assert status == 400, (params, body)
        assert body["message"].startswith(name + ":"), body


def test_drops_api_is_off_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert drops(broker, token=None)[0] == 404


@pytest.mark.timeout(120)
def test_a_stalled_subscriber_shows_non_writable_for_its_client(broker_factory, raw_client, uid):
    """A non-persistent subscriber that stops reading: once its socket and the broker's write
    buffer (small watermarks here) are full, QoS 0 copies are skipped as non_writable — and the
    breakdown names that subscriber."""
    broker = broker_factory(
        env={
            "SECURITY_ADMIN_TOKEN": TOKEN,
            # KB; the hard limit (4 x high) that disconnects stays far above one burst below.
            "NETTY_WRITE_BUFFER_HIGH_WATER_MARK": "256",
            "NETTY_WRITE_BUFFER_LOW_WATER_MARK": "128",
        }
    )
    topic = f"drops/{uid}/stall"
    stalled = raw_client(broker)
    stalled.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert stalled.connect(f"{uid}-stalled").reason_code == 0
    assert stalled.subscribe(topic, 0).reason_codes == [0]
    # From here on the subscriber never reads.
    pub = raw_client(broker)
    assert pub.connect(f"{uid}-pub").reason_code == 0
    payload = b"p" * 4 * 1024
    deadline = time.monotonic() + 60
    while dropped(broker, "non_writable") < 20:
        assert time.monotonic() < deadline, "the subscriber never became non-writable"
        for _ in range(20):
            pub.publish(topic, payload, qos=0)
        # A QoS 1 round trip: the QoS 0 burst before it was read by the broker.
        assert pub.publish(f"drops/{uid}/sync", b"s", qos=1).reason_code == 0

    status, body = drops(broker, by="client", reason="non_writable")
    assert status == 200
    rows = {row["clientId"]: row for row in body["data"]}
    assert list(rows) == [f"{uid}-stalled"], body
    counted = rows[f"{uid}-stalled"]["reasons"]["non_writable"]
    assert counted >= 20
    # The breakdown never counts more than the counter (read after it).
    assert counted <= dropped(broker, "non_writable")
    by_topic = drops(broker, by="topic", topic=topic)[1]["data"]
    assert by_topic and by_topic[0]["reasons"]["non_writable"] >= 20
