"""/api/unauthorized/client (TBMQ's UnauthorizedClientController paths and shapes): the log of
refused CONNECTs, read and cleared through REST. The refusals come from paho-mqtt, a client
Starling did not write; in a cluster the rows live in the shared PostgreSQL, so a refusal on
one node is listed and deleted through another."""

from __future__ import annotations

import urllib.parse

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/unauthorized/client is starlingd's")

TOKEN = "un4uth"
PATH = "/api/unauthorized/client"


def secured_env(**extra: str) -> dict[str, str]:
    return {"SECURITY_ADMIN_TOKEN": TOKEN, "SECURITY_MQTT_ALLOW_ANONYMOUS": "false", **extra}


def refuse(paho_client, broker, client_id: str) -> None:
    """A CONNECT with credentials nobody has: refused, and logged by the broker."""
    c = paho_client(
        broker, client_id=client_id, protocol=5, connect=False, username="mallory", password="pw"
    )
    assert c.connect(expect_success=False).reason_code != 0


def item(client_id: str) -> str:
    return f"{PATH}/{urllib.parse.quote(client_id, safe='')}"


def listed(broker, query: str = "") -> dict:
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=100&page=0{query}", TOKEN)
    assert status == 200, page
    return page


def wait_listed(broker, client_id: str) -> None:
    """Rows are written after the CONNACK (asynchronously, as in TBMQ)."""
    wait_for(
        lambda: rest.call(broker, "GET", item(client_id), TOKEN)[0] == 200,
        what=f"an unauthorized-client row for {client_id}",
    )


def test_refused_connects_are_listed_found_and_deleted(broker_factory, paho_client, uid):
    broker = broker_factory(env=secured_env())
    ids = [f"{uid}/plant+{i}" for i in range(3)]  # '/', '+' must survive the path encoding
    for client_id in ids:
        refuse(paho_client, broker, client_id)
    for client_id in ids:
        wait_listed(broker, client_id)

    page = listed(broker)
    assert page["totalElements"] == 3 and page["hasNext"] is False, page
    assert sorted(row["clientId"] for row in page["data"]) == ids
    stamps = [row["ts"] for row in page["data"]]
    assert stamps == sorted(stamps, reverse=True), "newest first"
    status, row = rest.call(broker, "GET", item(ids[0]), TOKEN)
    assert status == 200
    assert row["clientId"] == ids[0]
    assert row["ipAddress"] == "127.0.0.1"
    assert row["username"] == "mallory"
    assert row["passwordProvided"] is True and row["tlsUsed"] is False
    assert row["reason"] and row["ts"] > 0

    two = listed(broker, "&textSearch=" + urllib.parse.quote(f"{uid}/PLANT+1".upper()))
    assert [r["clientId"] for r in two["data"]] == [ids[1]], "textSearch ignores case"
    first = rest.call(broker, "GET", f"{PATH}?pageSize=2&page=0", TOKEN)[1]
    assert len(first["data"]) == 2 and first["totalPages"] == 2 and first["hasNext"] is True

    assert rest.call(broker, "DELETE", item(ids[0]), TOKEN) == (200, {})
    assert rest.call(broker, "DELETE", item(ids[0]), TOKEN)[0] == 404
    assert rest.call(broker, "GET", item(ids[0]), TOKEN)[0] == 404
    assert listed(broker)["totalElements"] == 2

    broker.restart()
    assert sorted(r["clientId"] for r in listed(broker)["data"]) == ids[1:], (
        "the log and the deletion survive a restart"
    )
    assert rest.call(broker, "DELETE", PATH, TOKEN) == (200, {"deleted": 2})
    assert listed(broker)["totalElements"] == 0


def test_refusals_and_bad_input(broker_factory, paho_client, uid):
    broker = broker_factory(env=secured_env())
    refuse(paho_client, broker, uid)
    wait_listed(broker, uid)
    for method, path in (("GET", PATH), ("GET", item(uid)), ("DELETE", item(uid)), ("DELETE", PATH)):
        assert rest.call(broker, method, path, None)[0] == 401, (method, path)
        assert rest.call(broker, method, path, "wrong")[0] == 401, (method, path)
    assert listed(broker)["totalElements"] == 1, "a refused DELETE removed a row"
    for query, name in (("pageSize=0", "pageSize"), ("page=-1", "page"), ("pageSize=x", "pageSize")):
        status, body = rest.call(broker, "GET", f"{PATH}?{query}", TOKEN)
        assert status == 400 and body["message"].startswith(name), (query, body)
    assert rest.call(broker, "GET", item("no-such-client"), TOKEN)[0] == 404


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "GET", PATH, None)[0] == 404


@pytest.mark.cluster
@requires_services
def test_any_node_answers_for_the_whole_cluster(broker_factory, paho_client, uid):
    """Refused on node A, listed and deleted through node B: PostgreSQL is the one log."""
    a, b = start_nodes(broker_factory, 2, **secured_env())
    refuse(paho_client, a, uid)
    wait_listed(b, uid)
    assert [r["clientId"] for r in listed(b)["data"]] == [uid]
    assert rest.call(b, "DELETE", item(uid), TOKEN) == (200, {})
    assert rest.call(a, "GET", item(uid), TOKEN)[0] == 404
    assert listed(a)["totalElements"] == 0
