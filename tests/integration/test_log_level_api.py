"""GET/PUT /api/app/log-level: the node's log level changes at runtime, without a restart.
Checked by its effect on the real daemon's log: a PUBLISH over the topic-level limit writes a
debug line, which appears only while the level is debug."""

from __future__ import annotations

import pytest

from starling_it import rest

pytestmark = pytest.mark.starlingd_only(reason="/api/app/log-level is starlingd's")

TOKEN = "l0g"
PATH = "/api/app/log-level"
TOPIC_NAME_INVALID = 0x90
TOO_DEEP = "/".join(["l"] * 130)  # the default limit is 128 levels


def dropped_line(client_id: str) -> str:
    return f"client {client_id}: PUBLISH to a topic of more than 128 levels dropped"


def publish_too_deep(broker, raw_client, client_id: str) -> None:
    """Returns once the broker answered: the line (if any) was written before the answer."""
    c = raw_client(broker)
    assert c.connect(client_id).reason_code == 0
    assert c.publish(TOO_DEEP, b"x", qos=1).reason_code == TOPIC_NAME_INVALID


def test_put_changes_the_level_at_runtime(broker_factory, raw_client, uid):
    # The suite runs brokers at debug; this one starts at info, the shipped default.
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN, "STARLING_LOG_LEVEL": "info"})
    status, body = rest.call(broker, "GET", PATH, TOKEN)
    assert status == 200 and body["level"] == "info", body
    assert body["levels"] == ["trace", "debug", "info", "warn", "error", "critical", "off"]

    publish_too_deep(broker, raw_client, f"{uid}-before")
    assert dropped_line(f"{uid}-before") not in broker.log_text()

    status, body = rest.call(broker, "PUT", PATH, TOKEN, {"level": "debug"})
    assert (status, body) == (200, {"level": "debug", "previous": "info"})
    assert rest.call(broker, "GET", PATH, TOKEN)[1]["level"] == "debug"
    assert "log level changed from info to debug" in broker.log_text()
    publish_too_deep(broker, raw_client, f"{uid}-debug")
    assert dropped_line(f"{uid}-debug") in broker.log_text()

    status, body = rest.call(broker, "PUT", PATH, TOKEN, {"level": "info"})
    assert (status, body) == (200, {"level": "info", "previous": "debug"})
    publish_too_deep(broker, raw_client, f"{uid}-after")
    assert dropped_line(f"{uid}-after") not in broker.log_text()


def test_refusals_change_nothing(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN, "STARLING_LOG_LEVEL": "info"})
    assert rest.call(broker, "GET", PATH, None)[0] == 401
    assert rest.call(broker, "PUT", PATH, "wrong", {"level": "trace"})[0] == 401
    for bad in ({"level": "loud"}, {"level": 1}, {}, ["debug"], "not json"):
        status, body = rest.call(broker, "PUT", PATH, TOKEN, bad)
        assert status == 400, (bad, body)
        assert "level" in str(body) or "body" in str(body), (bad, body)
    assert rest.call(broker, "GET", PATH, TOKEN)[1]["level"] == "info"


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "GET", PATH, None)[0] == 404
