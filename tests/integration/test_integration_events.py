"""Client lifecycle events for integrations (configuration.lifecycleEvents): paho-mqtt clients
connect, subscribe, unsubscribe, disconnect and fail to authenticate against starlingd, and an
integration that asked for those events gets one JSON document each at its HTTP target — with
the client id, protocol version, reason or topic filters — interleaved with its messages in the
order they happened; an integration that did not ask gets none."""

from __future__ import annotations

import json

import pytest

from test_hostile_connections import wait_for
from test_integrations import TOKEN, body_for, create, target  # noqa: F401 (fixture)

pytestmark = pytest.mark.starlingd_only(reason="integrations are starlingd's")

ALL = ["CONNECTED", "DISCONNECTED", "SUBSCRIBED", "UNSUBSCRIBED", "AUTH_FAILED"]


def events_for(target, client_id: str) -> list[dict]:
    with target.lock:
        docs = [(r["headers"].get("X-Starling-Event"), json.loads(r["body"]))
                for r in target.requests]
    out = []
    for header, doc in docs:
        if header is not None and doc.get("clientId") == client_id:
            assert doc["event"] == header, (header, doc)
            out.append(doc)
    return out


def with_events(body: dict, events: list[str]) -> dict:
    body["configuration"]["lifecycleEvents"] = events
    return body


def test_a_clients_lifecycle_reaches_the_target_in_order(broker_factory, paho_client, target,
                                                         uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    create(broker, with_events(body_for("events", [f"{uid}/#"], target.url), ALL))
    # An integration that asked for no events gets only its messages.
    quiet = create(broker, body_for("quiet", [f"{uid}/nothing"], target.url + "?quiet"))
    assert quiet["configuration"].get("lifecycleEvents") is None
    client_id = f"{uid}-dev"
    c = paho_client(broker, client_id=client_id, protocol=5)
    c.subscribe(f"{uid}/cmd/#", qos=1)
    c.publish_and_wait(f"{uid}/data", b"reading", qos=1)
    c.unsubscribe(f"{uid}/cmd/#")
    c.close()

    wait_for(lambda: len(events_for(target, client_id)) >= 4, timeout=30,
             what="4 lifecycle events")
    events = events_for(target, client_id)
    assert [e["event"] for e in events] == ["CONNECTED", "SUBSCRIBED", "UNSUBSCRIBED",
                                           "DISCONNECTED"], events
    connected, subscribed, unsubscribed, disconnected = events
    assert connected["protocolVersion"] == "5.0" and connected["address"].startswith("127.0.0.1")
    assert connected["ts"] > 0 and connected["node"]
    assert subscribed["topicFilters"] == [f"{uid}/cmd/#"]
    assert unsubscribed["topicFilters"] == [f"{uid}/cmd/#"]
    assert disconnected["reason"], disconnected
    # The message sits between SUBSCRIBED and UNSUBSCRIBED: one log, one order.
    with target.lock:
        kinds = [r["headers"].get("X-Starling-Event") or "MESSAGE" for r in target.requests
                 if "?quiet" not in r["path"]]
    assert kinds == ["CONNECTED", "SUBSCRIBED", "MESSAGE", "UNSUBSCRIBED", "DISCONNECTED"], kinds
    with target.lock:
        assert not any("?quiet" in r["path"] for r in target.requests)


def test_refused_credentials_become_auth_failed(broker_factory, paho_client, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN,
                                 "SECURITY_MQTT_ALLOW_ANONYMOUS": "false"})
    create(broker, with_events(body_for("auth", [], target.url), ["AUTH_FAILED"]))
    client_id = f"{uid}-intruder"
    c = paho_client(broker, client_id=client_id, protocol=4, connect=False)
    c.connect(expect_success=False)
    wait_for(lambda: len(events_for(target, client_id)) == 1, timeout=30, what="AUTH_FAILED")
    [event] = events_for(target, client_id)
    assert event["event"] == "AUTH_FAILED" and event["protocolVersion"] == "3.1.1"
    assert event["reason"], event
