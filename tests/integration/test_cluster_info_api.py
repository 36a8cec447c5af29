"""/api/app/cluster-info: any node lists the cluster's nodes from their heartbeats on sys.nodes
(never by calling them): version, uptime, connected clients, health. A node that stops cleanly
leaves the list; one that is killed is reported UNREACHABLE after three heartbeat intervals."""

from __future__ import annotations

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="/api/app/cluster-info is starlingd's")

TOKEN = "c1uster"
PATH = "/api/app/cluster-info"


def info(broker) -> dict:
    status, body = rest.call(broker, "GET", PATH, TOKEN)
    assert status == 200, body
    return body


def by_id(broker) -> dict[str, dict]:
    return {n["nodeId"]: n for n in info(broker)["nodes"]}


def test_embedded_node_reports_itself(broker_factory, paho_client):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    paho_client(broker, protocol=5)
    body = info(broker)
    assert len(body["nodes"]) == 1
    node = body["nodes"][0]
    assert node["self"] is True and node["health"] == "UP" and node["sessions"] == 1
    assert node["version"] == body["version"] and node["version"]
    assert node["startedAt"] > 0 and node["uptimeSeconds"] >= 0 and node["lastSeen"] > 0
    assert body["totalSessions"] == 1
    assert rest.call(broker, "GET", PATH, None)[0] == 401


@pytest.mark.cluster
@requires_services
def test_every_node_sees_the_cluster(broker_factory, paho_client):
    a, b, c = start_nodes(broker_factory, 3, SECURITY_ADMIN_TOKEN=TOKEN,
                          TB_SERVICE_HEARTBEAT_INTERVAL="300")
    paho_client(b, protocol=5)
    paho_client(b, protocol=5)
    paho_client(c, protocol=5)
    want = {"node-a": 0, "node-b": 2, "node-c": 1}
    for node in (a, b, c):
        wait_for(lambda node=node: {k: v["sessions"] for k, v in by_id(node).items()} == want,
                 timeout=15, what="every node's heartbeat with its session count")
    nodes = by_id(a)
    assert nodes["node-a"]["self"] and not nodes["node-b"]["self"]
    assert all(n["health"] == "UP" for n in nodes.values())
    assert info(a)["totalSessions"] == 3

    c.stop()  # clean stop: a tombstone, the node leaves the list
    wait_for(lambda: "node-c" not in by_id(a), timeout=15, what="node-c to leave")
    b.kill()  # no tombstone: reported UNREACHABLE after three missed heartbeats
    wait_for(lambda: by_id(a).get("node-b", {}).get("health") == "UNREACHABLE", timeout=15,
             what="node-b to be reported unreachable")
    assert info(a)["totalSessions"] == 0
