"""/api/client-session (TBMQ's ClientSessionController paths and shapes): list, read, disconnect
and remove the sessions of paho-mqtt clients. A disconnect is DISCONNECT 0x98 (Administrative
action) to an MQTT 5 client, after which its will goes and a persistent session stays; a
removal ends an offline session as its expiry would. In a cluster any node lists every
session and acts on a session held by another node through that node's client.disconnect
topic, never by calling it."""

from __future__ import annotations

import urllib.parse

import pytest

from starling_it import rest
from starling_it.client import persistent
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/client-session is starlingd's")

TOKEN = "s3ssions"
PATH = "/api/client-session"
ADMINISTRATIVE_ACTION = 0x98


def q(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def session(broker, client_id: str) -> dict | None:
    status, body = rest.call(broker, "GET", f"{PATH}?clientId={q(client_id)}", TOKEN)
    assert status in (200, 404), body
    return body if status == 200 else None


def listed(broker, query: str) -> list[str]:
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=100&page=0&{query}", TOKEN)
    assert status == 200, page
    return [s["clientId"] for s in page["data"]]


def act(broker, action: str, client_id: str, session_id: str | None = None) -> int:
    path = f"{PATH}/{action}?clientId={q(client_id)}"
    if session_id is not None:
        path += f"&sessionId={q(session_id)}"
    return rest.call(broker, "DELETE", path, TOKEN)[0]


def state(broker, client_id: str) -> str | None:
    s = session(broker, client_id)
    return None if s is None else s["connectionState"]


def test_sessions_listed_inspected_disconnected_and_removed(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    dev_id, old_id = f"{uid}-Dev", f"{uid}-old"
    dev = paho_client(broker, dev_id, protocol=5, **persistent(5),
                      will={"topic": f"{uid}/will", "payload": b"gone", "qos": 1})
    dev.subscribe(f"{uid}/dev/#", qos=1)
    dev.subscribe(f"$share/grp/{uid}/shared", qos=0)
    old = paho_client(broker, old_id, protocol=4)
    old.subscribe(f"{uid}/old", qos=1)
    watcher = paho_client(broker, protocol=5)
    watcher.subscribe(f"{uid}/will", qos=1)

    s = session(broker, dev_id)
    assert s["connectionState"] == "CONNECTED" and s["clientType"] == "DEVICE"
    assert s["mqttVersion"] == "5.0" and s["persistent"] is True
    assert s["sessionExpiryInterval"] == 300 and s["subscriptionsCount"] == 2
    assert s["clientIpAdr"].startswith("127.0.0.1:") and s["connectedAt"] > 0
    assert s["id"] == dev_id and s["nodeId"]
    o = session(broker, old_id)
    assert o["mqttVersion"] == "3.1.1" and o["persistent"] is False
    assert o["subscriptionsCount"] == 1

    # Filters and sorting (every other session of this broker is the watcher's).
    assert listed(broker, f"textSearch={q(uid.upper())}") == [dev_id, old_id]
    assert listed(broker, f"textSearch={q(uid)}&sortOrder=DESC") == [old_id, dev_id]
    assert listed(broker, f"textSearch={q(uid)}&sortProperty=subscriptionsCount"
                          "&sortOrder=DESC") == [dev_id, old_id]
    assert listed(broker, "connectionState=DISCONNECTED") == []
    assert listed(broker, f"textSearch={q(uid)}&clientType=APPLICATION") == []
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=1&page=0&textSearch={q(uid)}",
                             TOKEN)
    assert status == 200 and page["totalElements"] == 2 and page["hasNext"] is True

    status, d = rest.call(broker, "GET", f"{PATH}/details?clientId={q(dev_id)}", TOKEN)
    assert status == 200, d
    assert sorted((x["topicFilter"], x["qos"]) for x in d["subscriptions"]) == [
        (f"$share/grp/{uid}/shared", "AT_MOST_ONCE"), (f"{uid}/dev/#", "AT_LEAST_ONCE")]
    assert d["inFlight"] == 0 and d["queued"] == 0

    # Disconnect: DISCONNECT 0x98, the will goes, the persistent session stays.
    assert act(broker, "remove", dev_id) == 409, "a connected session is not removed"
    assert act(broker, "disconnect", dev_id) == 200
    info = dev.wait_for_disconnect()
    assert info.from_server and info.reason_code == ADMINISTRATIVE_ACTION
    assert watcher.expect_message(timeout=10).payload == b"gone"
    wait_for(lambda: state(broker, dev_id) == "DISCONNECTED", what="the session to go offline")
    assert session(broker, dev_id)["disconnectedAt"] > 0
    assert act(broker, "disconnect", dev_id) == 409, "not connected any more"
    assert listed(broker, "connectionState=DISCONNECTED") == [dev_id]

    # Still there: a message for it is kept and delivered on resumption.
    pub = paho_client(broker, protocol=5)
    pub.publish_and_wait(f"{uid}/dev/1", b"kept", qos=1)
    back = paho_client(broker, dev_id, protocol=5, **persistent(5))
    assert back.session_present
    assert back.expect_message(timeout=10).payload == b"kept"
    back.disconnect()
    wait_for(lambda: state(broker, dev_id) == "DISCONNECTED", what="the session to go offline")

    # Remove: the session ends; a message published meanwhile is not kept for it.
    assert act(broker, "remove", dev_id, session_id="not-its-session") == 404
    assert act(broker, "remove", dev_id) == 200
    wait_for(lambda: session(broker, dev_id) is None, what="the session to go")
    assert act(broker, "remove", dev_id) == 404
    pub.publish_and_wait(f"{uid}/dev/2", b"dropped", qos=1)
    again = paho_client(broker, dev_id, protocol=5, **persistent(5))
    assert not again.session_present
    again.expect_no_message(within=0.5)

    # MQTT 3.1.1 has no DISCONNECT from the server: the connection is closed.
    assert act(broker, "disconnect", old_id) == 200
    assert not old.wait_for_disconnect().from_server
    wait_for(lambda: session(broker, old_id) is None, what="the clean session to end")


def test_refusals_and_bad_input(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "GET", PATH, None)[0] == 401
    assert rest.call(broker, "DELETE", f"{PATH}/disconnect?clientId=x", "wrong")[0] == 401
    for query, name in (
        ("sortProperty=size", "sortProperty"),
        ("sortOrder=UP", "sortOrder"),
        ("connectionState=ONLINE", "connectionState"),
        ("clientType=SENSOR", "clientType"),
        ("pageSize=0", "pageSize"),
        ("page=-1", "page"),
        ("clientId=%zz", ""),
    ):
        status, body = rest.call(broker, "GET", f"{PATH}?{query}", TOKEN)
        assert status == 400 and body["message"].startswith(name), (query, body)
    for action in ("disconnect", "remove"):
        assert rest.call(broker, "DELETE", f"{PATH}/{action}", TOKEN)[0] == 400
        assert rest.call(broker, "DELETE", f"{PATH}/{action}?clientId=", TOKEN)[0] == 400
        assert act(broker, action, "no-such-client") == 404
    assert rest.call(broker, "GET", f"{PATH}/details", TOKEN)[0] == 400
    assert rest.call(broker, "GET", f"{PATH}/details?clientId=nobody", TOKEN)[0] == 404
    assert rest.call(broker, "GET", f"{PATH}?clientId=nobody", TOKEN)[0] == 404


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "GET", PATH, None)[0] == 404


@pytest.mark.cluster
@requires_services
def test_any_node_sees_and_acts_on_every_session(broker_factory, paho_client, uid):
    """A client on node B is listed by A and C, disconnected through A (DISCONNECT 0x98 from
    B), and its offline session removed through C."""
    a, b, c = start_nodes(broker_factory, 3, SECURITY_ADMIN_TOKEN=TOKEN)
    client_id = f"{uid}-on-b"
    client = paho_client(b, client_id, protocol=5, **persistent(5))
    client.subscribe(f"{uid}/x/#", qos=1)
    for node in (a, c):
        wait_for(lambda node=node: (session(node, client_id) or {}).get("subscriptionsCount") == 1,
                 what="the session and its subscription in every node's mirror")
        s = session(node, client_id)
        assert s["nodeId"] == "node-b" and s["connectionState"] == "CONNECTED"
        assert s["mqttVersion"] == "5.0" and s["clientIpAdr"].startswith("127.0.0.1:")
    status, d = rest.call(a, "GET", f"{PATH}/details?clientId={q(client_id)}", TOKEN)
    assert status == 200 and [x["topicFilter"] for x in d["subscriptions"]] == [f"{uid}/x/#"]
    assert d["inFlight"] is None, "counts are known only to the node that holds the session"
    status, d = rest.call(b, "GET", f"{PATH}/details?clientId={q(client_id)}", TOKEN)
    assert status == 200 and d["inFlight"] == 0

    assert act(a, "disconnect", client_id, session_id="stale") == 404
    assert act(a, "disconnect", client_id, session_id=session(a, client_id)["sessionId"]) == 200
    info = client.wait_for_disconnect(timeout=15)
    assert info.from_server and info.reason_code == ADMINISTRATIVE_ACTION
    wait_for(lambda: state(c, client_id) == "DISCONNECTED", timeout=15,
             what="C to see the session offline")

    assert act(c, "remove", client_id) == 200
    for node in (a, b, c):
        wait_for(lambda node=node: session(node, client_id) is None, timeout=15,
                 what="every node to drop the session")
    again = paho_client(b, client_id, protocol=5, **persistent(5))
    assert not again.session_present
