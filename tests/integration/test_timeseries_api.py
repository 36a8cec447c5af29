"""/api/timeseries/{entityId}/values: the statistics series every node samples each minute into
the metadata store (SQLite embedded, PostgreSQL in a cluster) and any node serves, per node or
for the cluster (`total`)."""

from __future__ import annotations

import sqlite3
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for
from test_starlingctl import Ctl

pytestmark = pytest.mark.starlingd_only(reason="/api/timeseries is starlingd's")

TOKEN = "st4ts"
KEY_IDS = {"incomingMsgs": 1, "outgoingMsgs": 2, "droppedMsgs": 3, "sessions": 4,
           "subscriptions": 5, "retainedMsgs": 6}


def series(broker, entity: str, keys: str, start: int, end: int, **extra) -> tuple[int, dict]:
    query = urllib.parse.urlencode({"keys": keys, "startTs": start, "endTs": end, **extra})
    return rest.call(broker, "GET", f"/api/timeseries/{entity}/values?{query}", TOKEN)


def values(broker, entity: str, keys: str, start: int, end: int, **extra) -> dict:
    status, body = series(broker, entity, keys, start, end, **extra)
    assert status == 200, body
    return body


def preload(broker, rows: list[tuple[str, str, int, int]]) -> None:
    """Writes (node, key, ts, value) points into the embedded store of a stopped broker (a
    running one holds the file exclusively), then starts it again."""
    db = sqlite3.connect(broker.data_dir / "metadata.db")
    with db:
        db.executemany("INSERT INTO ts_kv (entity_id, key, ts, long_v) VALUES (?, ?, ?, ?)",
                       [(node, KEY_IDS[key], ts, value) for node, key, ts, value in rows])
    db.close()
    broker.start()


def stopped_broker(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN, "TB_SERVICE_ID": "stats-a",
                                 "HISTORICAL_DATA_REPORT_ENABLED": "false"})
    broker.stop()
    return broker


def test_points_are_served_per_node_and_combined_for_the_cluster(broker_factory):
    """Points of two nodes written into the embedded store while the broker is down (it holds
    the file exclusively while up) are served after the restart: per node, summed for `total`
    (the largest for the mirrored keys), aggregated, ordered and limited."""
    broker = stopped_broker(broker_factory)
    base = 1_700_000_040_000  # a minute boundary
    rows = []
    for minute in range(4):
        ts = base + minute * 60_000
        rows += [("stats-a", "incomingMsgs", ts, 10 + minute),
                 ("stats-b", "incomingMsgs", ts, 100),
                 ("stats-a", "subscriptions", ts, 50 + minute),
                 ("stats-b", "subscriptions", ts, 49)]
    preload(broker, rows)
    end = base + 3 * 60_000

    node = values(broker, "stats-a", "incomingMsgs", base, end, orderBy="ASC")
    assert [p["value"] for p in node["incomingMsgs"]] == [10, 11, 12, 13]
    assert [p["ts"] for p in node["incomingMsgs"]] == [base + m * 60_000 for m in range(4)]

    total = values(broker, "total", "incomingMsgs,subscriptions,retainedMsgs", base, end)
    assert [p["value"] for p in total["incomingMsgs"]] == [113, 112, 111, 110]  # newest first
    assert [p["value"] for p in total["subscriptions"]] == [53, 52, 51, 50]  # max, not sum
    assert total["retainedMsgs"] == []

    summed = values(broker, "total", "incomingMsgs", base, end, agg="SUM", interval=120_000,
                    orderBy="ASC")
    assert summed["incomingMsgs"] == [{"ts": base, "value": 221},
                                      {"ts": base + 120_000, "value": 225}]
    newest = values(broker, "stats-b", "subscriptions", base, end, limit=1)
    assert newest["subscriptions"] == [{"ts": end, "value": 49}]
    assert values(broker, "stats-c", "sessions", base, end) == {"sessions": []}

    status, body = series(broker, "total", "incomingMsgs,cpuUsage", base, end)
    assert status == 400 and "cpuUsage" in body["message"]
    status, body = series(broker, "total", "sessions", end, base)
    assert status == 400 and "endTs" in body["message"]
    status, body = series(broker, "total", "sessions", base, end, agg="SUM")
    assert status == 400 and "interval" in body["message"]
    query = f"keys=sessions&startTs={base}&endTs={end}"
    assert rest.call(broker, "GET", f"/api/timeseries/total/values?{query}", None)[0] == 401
    # Not TBMQ's /values path: 404 (a raw call, since the document has no such path).
    req = urllib.request.Request(f"http://{broker.host}:{broker.http_port}/api/timeseries/total"
                                 f"?{query}", headers={"Authorization": f"Bearer {TOKEN}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)
    assert refused.value.code == 404


def test_starlingctl_stats_prints_the_cluster_and_one_node(broker_factory, tmp_path):
    broker = stopped_broker(broker_factory)
    minute = int(time.time() * 1000) // 60_000 * 60_000
    rows = []
    for back in (1, 2, 3, 4):  # the four minutes before this one
        ts = minute - back * 60_000
        rows += [("stats-a", "outgoingMsgs", ts, back), ("stats-b", "outgoingMsgs", ts, 10),
                 ("stats-a", "sessions", ts, 7), ("stats-b", "sessions", ts, 2)]
    rows.append(("stats-a", "outgoingMsgs", minute - 7200_000, 999))  # before --since 1h
    preload(broker, rows)
    ctl = Ctl(tmp_path).use(broker, TOKEN)

    total = ctl.json("stats")
    assert [p["value"] for p in total["outgoingMsgs"]] == [14, 13, 12, 11]  # oldest first
    assert [p["value"] for p in total["sessions"]] == [9, 9, 9, 9]
    node = ctl.json("stats", "--node", "stats-a", "--every", "1h")
    assert sum(p["value"] for p in node["outgoingMsgs"]) == 10  # summed buckets
    assert {p["value"] for p in node["sessions"]} == {7}  # the largest per bucket
    table = ctl.run("stats", "--since", "10m").stdout
    assert "SESSIONS" in table and "14" in table and "cluster" in table
    assert "--since" in ctl.run("stats", "--since", "x", rc=2).stderr


@pytest.mark.cluster
@requires_services
# Two waits for a sampling boundary (each up to a minute after start-up): more than the suite's
# default 60 s per test.
@pytest.mark.timeout(240)
def test_every_node_samples_and_any_node_serves_the_cluster(broker_factory, paho_client):
    """Two nodes sharing PostgreSQL each write their own minute points; node A answers for
    both. Waits for a sampling boundary (at most a minute)."""
    started = int(time.time() * 1000)
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    publisher = paho_client(a, protocol=5)
    paho_client(a, protocol=5)
    paho_client(b, protocol=5)
    for i in range(10):
        assert publisher.publish_and_wait(f"stats/{started}/{i}", b"x", qos=1) == 0

    def total_sessions() -> list[int]:
        now = int(time.time() * 1000)
        return [p["value"] for p in values(a, "total", "sessions", started - 60_000, now)["sessions"]]

    # A sample taken after all three clients connected: 2 on node A, 1 on node B.
    wait_for(lambda: 3 in total_sessions(), timeout=90,
             what="a sampled minute with both nodes' sessions")
    now = int(time.time() * 1000)
    per_node = {n: values(b, n, "sessions,incomingMsgs", started - 60_000, now)
                for n in ("node-a", "node-b")}
    assert 2 in [p["value"] for p in per_node["node-a"]["sessions"]]
    assert 1 in [p["value"] for p in per_node["node-b"]["sessions"]]
    # Node A received the ten PUBLISH packets, counted in its points (no minute is counted twice).
    wait_for(lambda: sum(p["value"] for p in values(
        b, "node-a", "incomingMsgs", started - 60_000, int(time.time() * 1000))["incomingMsgs"])
        >= 10, timeout=90, what="node A's incomingMsgs to reach 10")
    incoming_b = values(b, "node-b", "incomingMsgs", started - 60_000, int(time.time() * 1000))
    assert sum(p["value"] for p in incoming_b["incomingMsgs"]) == 0
