"""/api/retained-msg (TBMQ's RetainedMsgController paths and shapes): list, read and delete
retained messages that paho-mqtt published. A DELETE is a tombstone on msg.retained: the message
is gone for new subscribers, after a restart, and on every node of a cluster; subscribers that
are connected receive nothing for it (unlike an empty retained PUBLISH)."""

from __future__ import annotations

import urllib.parse

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/retained-msg is starlingd's")

TOKEN = "r3tain"
PATH = "/api/retained-msg"


def one(topic: str) -> str:
    return f"{PATH}?topicName={urllib.parse.quote(topic, safe='')}"


def topics(broker, query: str = "") -> list[str]:
    status, page = rest.call(broker, "GET", f"{PATH}?pageSize=100&page=0{query}", TOKEN)
    assert status == 200, page
    return [m["topic"] for m in page["data"]]


def retained_on_subscribe(paho_client, broker, topic: str) -> list:
    """The retained messages a new subscriber to `topic`/# receives. They are sent when it
    subscribes; a plain message published afterwards on `topic`/end-marker, which the same
    subscription matches, arrives after them and marks the end."""
    sub = paho_client(broker, protocol=5)
    sub.subscribe(topic + "/#", qos=1)
    paho_client(broker, protocol=5).publish_and_wait(topic + "/end-marker", b"", qos=1)
    got = []
    while True:
        msg = sub.expect_message(timeout=10)
        if msg.topic == topic + "/end-marker":
            return got
        # A plain message published before the subscription may still be on its way through
        # msg.all (routing follows the log): only retained deliveries are what is asked.
        if msg.retain:
            got.append(msg)


def test_retained_messages_listed_read_and_deleted(broker_factory, paho_client, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    pub = paho_client(broker, protocol=5)
    base = f"{uid}/plant"
    pub.publish_and_wait(f"{base}/t1", b"21.5", qos=1, retain=True,
                         properties={"user_property": [("unit", "C")]})
    pub.publish_and_wait(f"{base}/t2", b"22.0", qos=0, retain=True)
    pub.publish_and_wait(f"{base}/deep/t3", b"x", qos=1, retain=True)

    assert topics(broker, f"&topicFilter={urllib.parse.quote(base + '/#')}") == [
        f"{base}/deep/t3", f"{base}/t1", f"{base}/t2"
    ]
    assert topics(broker, f"&topicFilter={urllib.parse.quote(base + '/+')}") == [
        f"{base}/t1", f"{base}/t2"
    ]
    assert topics(broker, f"&textSearch={urllib.parse.quote(base.upper() + '/T')}") == [
        f"{base}/t1", f"{base}/t2"
    ]
    status, msg = rest.call(broker, "GET", one(f"{base}/t1"), TOKEN)
    assert status == 200, msg
    assert msg["topic"] == f"{base}/t1" and msg["payload"] == "21.5" and msg["qos"] == 1
    assert msg["userProperties"] == {"props": [{"k": "unit", "v": "C"}]}
    assert msg["createdTime"] > 0

    live = paho_client(broker, protocol=5)
    live.subscribe(f"{base}/#", qos=1)
    assert len(live.expect_messages(3)) == 3, "the three retained messages"
    assert rest.call(broker, "DELETE", one(f"{base}/t1"), TOKEN) == (200, {})
    assert rest.call(broker, "DELETE", one(f"{base}/t1"), TOKEN)[0] == 404
    assert rest.call(broker, "GET", one(f"{base}/t1"), TOKEN)[0] == 404
    got = retained_on_subscribe(paho_client, broker, base)
    assert sorted(m.topic for m in got) == [f"{base}/deep/t3", f"{base}/t2"]
    # `live` got the end-marker too; nothing may come before it.
    assert live.expect_message(timeout=10).topic == f"{base}/end-marker", (
        "a REST delete sends nothing to subscribers"
    )

    broker.restart()
    assert topics(broker, f"&topicFilter={urllib.parse.quote(base + '/#')}") == [
        f"{base}/deep/t3", f"{base}/t2"
    ], "the deletion survives a restart"


def test_refusals_and_bad_input(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "GET", PATH, None)[0] == 401
    assert rest.call(broker, "DELETE", one("a/b"), "wrong")[0] == 401
    for query, name in (
        ("topicFilter=a%2F%23%2Fb", "topicFilter"),
        ("topicFilter=%24share%2Fg%2Fa", "topicFilter"),
        ("sortProperty=size", "sortProperty"),
        ("pageSize=5000", "pageSize"),
    ):
        status, body = rest.call(broker, "GET", f"{PATH}?{query}", TOKEN)
        assert status == 400 and body["message"].startswith(name), (query, body)
    assert rest.call(broker, "DELETE", PATH, TOKEN)[0] == 400
    assert rest.call(broker, "GET", one("no/such/topic"), TOKEN)[0] == 404
    assert rest.call(broker, "GET", one("a/+"), TOKEN)[0] == 404


def test_not_served_without_any_admin_credentials(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert rest.call(broker, "GET", PATH, None)[0] == 404


@pytest.mark.cluster
@requires_services
def test_any_node_lists_and_deletes_for_the_cluster(broker_factory, paho_client, uid):
    """Retained through node A, listed and deleted through node B (msg.retained is the only
    link); A drops it as its follower reads the tombstone."""
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    topic = f"{uid}/retained"
    paho_client(a, protocol=5).publish_and_wait(topic, b"on-a", qos=1, retain=True)
    wait_for(lambda: rest.call(b, "GET", one(topic), TOKEN)[0] == 200, what="B to mirror it")
    assert rest.call(b, "GET", one(topic), TOKEN)[1]["payload"] == "on-a"
    assert rest.call(b, "DELETE", one(topic), TOKEN) == (200, {})
    wait_for(lambda: rest.call(a, "GET", one(topic), TOKEN)[0] == 404, what="A to drop it")
    assert retained_on_subscribe(paho_client, a, topic) == []
