"""/api/app/shared/subs (TBMQ's ApplicationSharedSubscriptionController): create, list, read,
update and delete the definitions that give msg.app.shared.<filter> its partition count; any
node of a cluster answers from PostgreSQL."""

from __future__ import annotations

import urllib.parse

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes

pytestmark = pytest.mark.starlingd_only(reason="/api/app/shared/subs is starlingd's")

TOKEN = "sh4red"
PATH = "/api/app/shared/subs"


def one(entity_id: str) -> str:
    return f"{PATH}/{urllib.parse.quote(entity_id, safe='')}"


def topics(broker, query: str = "") -> list[str]:
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=100&page=0{query}", TOKEN)
    assert status == 200, page
    return [e["topic"] for e in page["data"]]


def test_definitions_created_listed_updated_and_deleted(broker_factory, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    status, made = rest.call(broker, "POST", PATH, TOKEN,
                             {"topic": f"{uid}/+/temp", "partitions": 4, "name": "temps"})
    assert status == 200, made
    assert made["topic"] == f"{uid}/+/temp" and made["partitions"] == 4
    assert made["name"] == "temps" and made["createdTime"] > 0 and len(made["id"]) == 36
    status, other = rest.call(broker, "POST", PATH, TOKEN, {"topic": f"{uid}/alarms/#",
                                                            "partitions": 1})
    assert status == 200 and other["name"] == ""

    assert topics(broker, f"&textSearch={urllib.parse.quote(uid.upper())}") == [
        f"{uid}/+/temp", f"{uid}/alarms/#"]
    assert rest.call(broker, "GET", one(made["id"]), TOKEN) == (200, made)

    # The topic is the key: saving it again updates the same entity.
    status, updated = rest.call(broker, "POST", PATH, TOKEN,
                                {"topic": f"{uid}/+/temp", "partitions": 8, "name": "t2"})
    assert status == 200
    assert (updated["id"], updated["partitions"], updated["name"]) == (made["id"], 8, "t2")
    # With its id: the same; an unknown id is a 404, and an id cannot move to another topic
    # (found by the schemathesis fuzz run: it was a 503 from the store's constraint).
    status, by_id = rest.call(broker, "POST", PATH, TOKEN,
                              {"id": made["id"], "topic": f"{uid}/+/temp", "partitions": 9})
    assert status == 200 and by_id["partitions"] == 9 and by_id["id"] == made["id"], by_id
    assert rest.call(broker, "POST", PATH, TOKEN,
                     {"id": "no-such-id", "topic": f"{uid}/x", "partitions": 1})[0] == 404
    status, answer = rest.call(broker, "POST", PATH, TOKEN,
                               {"id": made["id"], "topic": f"{uid}/moved", "partitions": 1})
    assert status == 409 and answer["message"].startswith("topic"), answer

    assert rest.call(broker, "DELETE", one(made["id"]), TOKEN) == (200, {})
    assert rest.call(broker, "DELETE", one(made["id"]), TOKEN)[0] == 404
    assert rest.call(broker, "GET", one(made["id"]), TOKEN)[0] == 404
    broker.restart()
    assert topics(broker, f"&textSearch={urllib.parse.quote(uid)}") == [f"{uid}/alarms/#"]


def test_bad_input_is_refused_naming_the_field(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "GET", PATH, None)[0] == 401
    for body, field in (
        ("nope", "body"),
        ({"partitions": 1}, "topic"),
        ({"topic": "a/#/b", "partitions": 1}, "topic"),
        ({"topic": "a+", "partitions": 1}, "topic"),
        ({"topic": "$share/g/a", "partitions": 1}, "topic"),
        ({"topic": "a"}, "partitions"),
        ({"topic": "a", "partitions": 0}, "partitions"),
        ({"topic": "a", "partitions": 10001}, "partitions"),
        ({"topic": "a", "partitions": 1, "name": 5}, "name"),
        ({"topic": "a", "partitions": 1, "id": ""}, "id"),
    ):
        status, answer = rest.call(broker, "POST", PATH, TOKEN, body)
        assert status == 400 and answer["message"].startswith(field), (body, answer)
    assert rest.call(broker, "GET", f"{PATH}?pageSize=0", TOKEN)[0] == 400
    assert rest.call(broker, "GET", one("no-such-id"), TOKEN)[0] == 404


@pytest.mark.cluster
@requires_services
def test_any_node_answers_for_the_cluster(broker_factory, uid):
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    status, made = rest.call(a, "POST", PATH, TOKEN, {"topic": f"{uid}/x", "partitions": 3})
    assert status == 200, made
    assert rest.call(b, "GET", one(made["id"]), TOKEN) == (200, made)
    assert rest.call(b, "DELETE", one(made["id"]), TOKEN) == (200, {})
    assert rest.call(a, "GET", one(made["id"]), TOKEN)[0] == 404
