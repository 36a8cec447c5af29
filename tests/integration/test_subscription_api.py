"""/api/subscription (TBMQ's SubscriptionController): read a session's subscriptions and replace
them — for a connected client (what it receives changes at once, nothing is sent to it) and for
an offline persistent session (it finds the new set, and what the set matched meanwhile, when
it resumes) — on any node of a cluster."""

from __future__ import annotations

import urllib.parse

import pytest

from starling_it import rest
from starling_it.client import persistent
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/subscription is starlingd's")

TOKEN = "sub5"
PATH = "/api/subscription"


def subscriptions(broker, client_id: str) -> list[tuple[str, str]] | None:
    status, body = rest.call(broker, "GET", f"{PATH}?clientId={urllib.parse.quote(client_id)}",
                             TOKEN)
    assert status in (200, 404), body
    return None if status == 404 else sorted((s["topicFilter"], s["qos"]) for s in body)


def replace(broker, client_id: str, subs: list) -> tuple[int, dict]:
    return rest.call(broker, "POST", PATH, TOKEN, {"clientId": client_id, "subscriptions": subs})


def test_a_connected_clients_subscriptions_replaced(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    client = paho_client(broker, f"{uid}-c", protocol=5)
    client.subscribe(f"{uid}/old", qos=1)
    assert subscriptions(broker, f"{uid}-c") == [(f"{uid}/old", "AT_LEAST_ONCE")]

    status, body = replace(broker, f"{uid}-c", [
        {"topicFilter": f"{uid}/new/#", "qos": "EXACTLY_ONCE"},
        {"topicFilter": f"$share/g/{uid}/jobs", "qos": 0},
    ])
    assert status == 200 and body == {"clientId": f"{uid}-c", "subscriptions": 2}, body
    assert subscriptions(broker, f"{uid}-c") == [
        (f"$share/g/{uid}/jobs", "AT_MOST_ONCE"), (f"{uid}/new/#", "EXACTLY_ONCE")]
    pub = paho_client(broker, protocol=5)
    pub.publish_and_wait(f"{uid}/old", b"gone", qos=1)
    pub.publish_and_wait(f"{uid}/new/1", b"fresh", qos=2)
    pub.publish_and_wait(f"{uid}/jobs", b"job", qos=1)
    got = sorted((m.topic, m.payload, m.qos) for m in client.expect_messages(2))
    assert got == [(f"{uid}/jobs", b"job", 0), (f"{uid}/new/1", b"fresh", 2)]
    client.expect_no_message(within=0.5)

    assert replace(broker, f"{uid}-c", [])[0] == 200
    assert subscriptions(broker, f"{uid}-c") == []


def test_an_offline_sessions_subscriptions_replaced(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    client_id = f"{uid}-p"
    first = paho_client(broker, client_id, protocol=5, **persistent(5))
    first.subscribe(f"{uid}/a", qos=1)
    first.disconnect()
    wait_for(lambda: rest.call(broker, "GET", f"/api/client-session?clientId={client_id}",
                               TOKEN)[1].get("connectionState") == "DISCONNECTED",
             what="the session to go offline")
    assert replace(broker, client_id, [{"topicFilter": f"{uid}/b", "qos": 1}])[0] == 200
    pub = paho_client(broker, protocol=5)
    pub.publish_and_wait(f"{uid}/a", b"not-any-more", qos=1)
    pub.publish_and_wait(f"{uid}/b", b"kept", qos=1)
    back = paho_client(broker, client_id, protocol=5, **persistent(5))
    assert back.session_present
    assert back.expect_message(timeout=10).payload == b"kept"
    back.expect_no_message(within=0.5)
    back.disconnect()
    broker.restart()
    assert subscriptions(broker, client_id) == [(f"{uid}/b", "AT_LEAST_ONCE")], (
        "the new set was written to client.subscriptions")


def every_subscription(broker, query: str = "") -> dict:
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=2{query}", TOKEN)
    assert status == 200, page
    return page


def test_every_sessions_subscriptions_listed_in_pages(broker_factory, paho_client, uid):
    """GET ?pageSize=: the subscriptions of every session, connected and offline, ordered by
    client id then filter, paged, with textSearch on the filter."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    a = paho_client(broker, f"{uid}-a", protocol=5)
    a.subscribe(f"{uid}/temp/#", qos=1)
    a.subscribe(f"$share/g/{uid}/alarms", qos=0)
    b = paho_client(broker, f"{uid}-b", protocol=5, **persistent(5))
    b.subscribe(f"{uid}/TEMP/x", qos=2)
    b.disconnect()
    wait_for(lambda: every_subscription(broker)["totalElements"] == 3,
             what="the three subscriptions to be mirrored")
    first = every_subscription(broker, "&page=0")
    second = every_subscription(broker, "&page=1")
    assert first["totalPages"] == 2 and first["hasNext"] and not second["hasNext"]
    rows = [(r["clientId"], r["topicFilter"], r["qos"]) for r in first["data"] + second["data"]]
    assert rows == [
        (f"{uid}-a", f"$share/g/{uid}/alarms", "AT_MOST_ONCE"),
        (f"{uid}-a", f"{uid}/temp/#", "AT_LEAST_ONCE"),
        (f"{uid}-b", f"{uid}/TEMP/x", "EXACTLY_ONCE"),
    ]
    found = every_subscription(broker, "&textSearch=temp")
    assert [r["clientId"] for r in found["data"]] == [f"{uid}-a", f"{uid}-b"]
    assert rest.call(broker, "GET", f"{PATH}?pageSize=0", TOKEN)[0] == 400


def test_bad_input_is_refused_naming_the_field(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    paho_client(broker, f"{uid}-x", protocol=5)
    assert rest.call(broker, "GET", f"{PATH}?clientId=x", None)[0] == 401
    assert rest.call(broker, "GET", PATH, TOKEN)[0] == 400
    assert subscriptions(broker, "nobody") is None
    assert replace(broker, "nobody", [])[0] == 404
    for subs, field in (
        ("nope", "subscriptions"),
        ([{"qos": 1}], "subscriptions[0].topicFilter"),
        ([{"topicFilter": "a/#/b", "qos": 1}], "subscriptions[0].topicFilter"),
        ([{"topicFilter": "a", "qos": 3}], "subscriptions[0].qos"),
        ([{"topicFilter": "a", "qos": "ONCE"}], "subscriptions[0].qos"),
        ([{"topicFilter": "a", "qos": 1}, {"topicFilter": "$share/g", "qos": 1}],
         "subscriptions[1].topicFilter"),
        ([{"topicFilter": "$share/g/a", "qos": 1, "options": {"noLocal": True}}],
         "subscriptions[0].options.noLocal"),
        ([{"topicFilter": "a", "qos": 1, "options": {"retainHandling": 3}}],
         "subscriptions[0].options.retainHandling"),
        ([{"topicFilter": "a", "qos": 1, "subscriptionId": 0}], "subscriptions[0].subscriptionId"),
    ):
        status, body = replace(broker, f"{uid}-x", subs)
        assert status == 400 and body["message"].startswith(field), (subs, body)
    status, body = rest.call(broker, "POST", PATH, TOKEN, {"subscriptions": []})
    assert status == 400 and body["message"].startswith("clientId")


@pytest.mark.cluster
@requires_services
def test_replaced_through_another_node(broker_factory, paho_client, uid):
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    client_id = f"{uid}-on-b"
    client = paho_client(b, client_id, protocol=5)
    client.subscribe(f"{uid}/old", qos=1)
    wait_for(lambda: subscriptions(a, client_id) == [(f"{uid}/old", "AT_LEAST_ONCE")],
             timeout=15, what="A to mirror the session and its subscription")
    assert replace(a, client_id, [{"topicFilter": f"{uid}/new", "qos": 1}])[0] == 200
    wait_for(lambda: subscriptions(a, client_id) == [(f"{uid}/new", "AT_LEAST_ONCE")],
             timeout=15, what="B to apply it and A to mirror the new set")
    assert subscriptions(b, client_id) == [(f"{uid}/new", "AT_LEAST_ONCE")]
    rest.call(a, "POST", "/api/mqtt/publish", TOKEN, {"topic": f"{uid}/new", "payload": "x",
                                                      "qos": 1})
    assert client.expect_message(timeout=10).payload == b"x"
