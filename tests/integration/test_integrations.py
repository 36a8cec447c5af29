"""HTTP integrations (/api/integration): messages published by paho-mqtt clients that match an
integration's topic filters reach an HTTP server this test runs, in order per topic, through the
integration's own log topic msg.ie.<id> — retried while the target fails, kept across a SIGKILL
of starlingd, never holding up MQTT subscribers — and the REST API creates, lists, updates,
checks and deletes integrations, refusing bad input with a 400 naming the field."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator

import pytest

from starling_it import rest
from starling_it.cluster import requires_services, start_nodes
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="integrations are starlingd's")

TOKEN = "int3grate"


class HttpTarget:
    """A local HTTP server that records every request it is sent. ``fail_next`` requests are
    answered 500 first (then 200); ``always_fail`` answers every request 503."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict] = []  # {"method", "path", "headers", "body"}
        self.fail_next = 0
        self.always_fail = False
        self.refused = 0
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with target.lock:
                    fail = target.always_fail or target.fail_next > 0
                    if target.fail_next > 0:
                        target.fail_next -= 1
                    if fail:
                        target.refused += 1
                    else:
                        target.requests.append({"method": self.command, "path": self.path,
                                                "headers": dict(self.headers), "body": body})
                code = 503 if fail else 200
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_PUT = do_PATCH = _handle

            def log_message(self, *args) -> None:  # keep pytest output quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/ingest"

    def bodies(self) -> list[dict]:
        with self.lock:
            return [json.loads(r["body"]) for r in self.requests]

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    t = HttpTarget()
    yield t
    t.close()


def free_port() -> int:
    """A port nothing listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def body_for(name: str, filters: list[str], url: str, **client) -> dict:
    return {"name": name, "type": "HTTP",
            "configuration": {"topicFilters": filters,
                              "clientConfiguration": {"restEndpointUrl": url, **client}}}


def create(broker, body) -> dict:
    status, made = rest.call(broker, "POST", "/api/integration", TOKEN, body)
    assert status == 200, made
    return made


def one(entity_id: str) -> str:
    return f"/api/integration/{urllib.parse.quote(entity_id, safe='')}"


def status_of(broker, entity_id: str) -> dict:
    status, got = rest.call(broker, "GET", one(entity_id), TOKEN)
    assert status == 200, got
    return got["status"]


def test_matching_messages_reach_the_target_in_order(broker_factory, paho_client, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    made = create(broker, body_for("to-target", [f"{uid}/telemetry/#"], target.url,
                                   headers={"X-Api-Key": "k-1"}))
    assert made["status"]["state"] in ("ACTIVE", "PENDING"), made
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)
    pub = paho_client(broker, client_id=f"{uid}-pub", protocol=5)
    total = 60
    for i in range(total):
        pub.publish_and_wait(f"{uid}/telemetry/t{i % 3}", f"m{i}".encode(), qos=1,
                             properties={"user_property": [("seq", str(i))]})
    pub.publish_and_wait(f"{uid}/other", b"not for the integration", qos=1)

    # MQTT delivery is unaffected: the subscriber has every message.
    assert len(sub.expect_messages(total + 1, timeout=20)) == total + 1
    wait_for(lambda: target.count() >= total, timeout=30, what=f"{total} HTTP requests")
    bodies = target.bodies()
    got = [base64.b64decode(b["payload"]).decode() for b in bodies]
    assert sorted(got) == sorted(f"m{i}" for i in range(total)), "duplicated or missing"
    # Order is per MQTT topic, as for subscribers (msg.all is partitioned by topic).
    for t in range(3):
        of_topic = [int(b["properties"]["userProperties"][0]["value"]) for b in bodies
                    if b["topic"] == f"{uid}/telemetry/t{t}"]
        assert of_topic == list(range(t, total, 3)), f"topic t{t} out of order: {of_topic}"
    first = next(b for b in bodies if b["payload"] == base64.b64encode(b"m0").decode())
    assert first["topic"] == f"{uid}/telemetry/t0" and first["qos"] == 1
    assert first["clientId"] == f"{uid}-pub" and first["retain"] is False and first["ts"] > 0
    assert first["properties"]["userProperties"] == [{"key": "seq", "value": "0"}]
    with target.lock:
        headers = target.requests[0]["headers"]
        assert target.requests[0]["method"] == "POST" and target.requests[0]["path"] == "/ingest"
    assert headers.get("X-Api-Key") == "k-1"
    assert headers.get("Content-Type") == "application/json"
    wait_for(lambda: status_of(broker, made["id"])["sent"] == total, timeout=10,
             what="status.sent")
    st = status_of(broker, made["id"])
    assert st["state"] == "ACTIVE" and st["failed"] == 0, st


def test_text_payload_with_put_and_bearer_token(broker_factory, paho_client, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    create(broker, body_for("text", [f"{uid}/+"], target.url, requestMethod="PUT",
                            payloadContentType="TEXT",
                            credentials={"type": "bearer", "token": "s3cret"}))
    pub = paho_client(broker, protocol=4)
    pub.publish_and_wait(f"{uid}/a", "héllo".encode(), qos=1)
    wait_for(lambda: target.count() == 1, timeout=20, what="the request")
    with target.lock:
        req = target.requests[0]
    assert req["method"] == "PUT" and req["body"] == "héllo".encode()
    assert req["headers"]["Authorization"] == "Bearer s3cret"
    assert req["headers"]["Content-Type"].startswith("text/plain")


def test_failing_target_is_retried_until_it_answers(broker_factory, paho_client, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    target.fail_next = 4
    made = create(broker, body_for("retry", [f"{uid}/#"], target.url, maxRetries=10,
                                   retryBackoffMs=20, retryBackoffMaxMs=100))
    pub = paho_client(broker, protocol=5)
    for i in range(10):
        pub.publish_and_wait(f"{uid}/x", f"{i}".encode(), qos=1)
    wait_for(lambda: target.count() >= 10, timeout=30, what="10 delivered requests")
    assert target.refused == 4
    got = [base64.b64decode(b["payload"]).decode() for b in target.bodies()]
    assert got == [str(i) for i in range(10)], got
    wait_for(lambda: status_of(broker, made["id"])["sent"] == 10, timeout=10, what="sent")
    st = status_of(broker, made["id"])
    assert st["retried"] >= 4 and st["failed"] == 0, st
    assert st["lastError"] and "503" in st["lastError"], st


def test_dead_target_fails_visibly_without_holding_up_subscribers(broker_factory, paho_client,
                                                                  uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    dead = f"http://127.0.0.1:{free_port()}/nowhere"
    made = create(broker, body_for("dead", [f"{uid}/#"], dead, maxRetries=1000,
                                   retryBackoffMs=50, retryBackoffMaxMs=200))
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)
    pub = paho_client(broker, protocol=5)
    for i in range(30):
        pub.publish_and_wait(f"{uid}/d", f"{i}".encode(), qos=1)
    assert [m.payload for m in sub.expect_messages(30, timeout=20)] == [
        f"{i}".encode() for i in range(30)]
    wait_for(lambda: status_of(broker, made["id"])["state"] == "FAILING", timeout=20,
             what="state FAILING")
    # integrationLag shows the 30 messages waiting (the first one is being retried).
    wait_for(lambda: status_of(broker, made["id"])["lag"] == 30, timeout=20, what="lag 30")
    st = status_of(broker, made["id"])
    assert st["lastError"] and st["lastErrorTime"] > 0 and st["sent"] == 0, st
    # The cause, not just "failed": nothing listens on that port.
    assert "refused" in st["lastError"].lower(), st


def test_acknowledged_messages_reach_the_target_after_sigkill(broker_factory, paho_client,
                                                             target, uid):
    """The target refuses everything while 40 QoS 1 messages are acknowledged; starlingd is
    SIGKILLed and restarted on the same data dir; once the target answers, all 40 arrive (at
    least once, in order of first arrival)."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    target.always_fail = True
    create(broker, body_for("durable", [f"{uid}/#"], target.url, maxRetries=1000,
                            retryBackoffMs=50, retryBackoffMaxMs=200))
    pub = paho_client(broker, protocol=5)
    for i in range(40):
        assert pub.publish_and_wait(f"{uid}/k", f"{i}".encode(), qos=1) < 0x80
    wait_for(lambda: target.refused > 0, timeout=20, what="the first refused request")
    pub.close()
    broker.kill()
    with target.lock:
        target.always_fail = False
    broker.start()
    wait_for(lambda: len({b["payload"] for b in target.bodies()}) >= 40, timeout=60,
             what="all 40 messages after the restart")
    firsts: list[str] = []
    for b in target.bodies():
        p = base64.b64decode(b["payload"]).decode()
        if p not in firsts:
            firsts.append(p)
    assert firsts == [str(i) for i in range(40)], firsts


@pytest.mark.timeout(150)
def test_messages_acknowledged_right_before_sigkill_reach_the_target(broker_factory, paho_client,
                                                                      target, uid):
    """400 QoS 1 messages published back to back, starlingd SIGKILLed at the last PUBACK: the
    router has not copied all of them to the integration's topic yet, so the restarted node
    routes the rest again — and must know the integration when it does (its definitions are
    read before the router starts). Every one arrives."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    create(broker, body_for("burst", [f"{uid}/#"], target.url, maxRetries=1000,
                            retryBackoffMs=50, retryBackoffMaxMs=200))
    pub = paho_client(broker, protocol=5)
    mids = [pub.publish(f"{uid}/k", f"{i}".encode(), qos=1).mid for i in range(400)]
    for mid in mids:
        assert pub._wait_for(pub._acks, mid, 30, "PUBACK") < 0x80
    broker.kill()
    pub.close()
    broker.start()
    wait_for(lambda: len({b["payload"] for b in target.bodies()}) >= 400, timeout=90,
             what="all 400 messages after the restart")


def test_disabled_integration_sends_nothing(broker_factory, paho_client, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    body = body_for("toggle", [f"{uid}/#"], target.url)
    body["enabled"] = False
    made = create(broker, body)
    assert made["status"]["state"] == "DISABLED"
    pub = paho_client(broker, protocol=5)
    pub.publish_and_wait(f"{uid}/a", b"while disabled", qos=1)
    body["id"] = made["id"]
    body["enabled"] = True
    again = create(broker, body)
    assert again["createdTime"] == made["createdTime"]
    pub.publish_and_wait(f"{uid}/a", b"after enabling", qos=1)
    wait_for(lambda: target.count() >= 1, timeout=20, what="a request")
    assert [base64.b64decode(b["payload"]) for b in target.bodies()] == [b"after enabling"]


def test_crud_check_and_validation(broker_factory, target, uid):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "GET", "/api/integrations", None)[0] == 401
    a = create(broker, body_for(f"{uid}-alpha", ["a/#"], target.url))
    b = create(broker, body_for(f"{uid}-beta", ["b/#"], target.url))
    assert len(a["id"]) == 36 and a["createdTime"] > 0 and a["enabled"] is True
    status, page = rest.call(broker, "GET",
                             f"/api/integrations?pageSize=10&page=0&textSearch={uid.upper()}",
                             TOKEN)
    assert status == 200 and [e["id"] for e in page["data"]] == [a["id"], b["id"]], page
    assert page["totalElements"] == 2 and page["hasNext"] is False
    status, page = rest.call(broker, "GET",
                             f"/api/integrations?pageSize=1&page=1&textSearch={uid}", TOKEN)
    assert status == 200 and [e["id"] for e in page["data"]] == [b["id"]], page

    status, got = rest.call(broker, "GET", one(a["id"]), TOKEN)
    assert status == 200 and got["configuration"] == a["configuration"], got
    renamed = body_for(f"{uid}-alpha2", ["a/+"], target.url)
    renamed["id"] = a["id"]
    updated = create(broker, renamed)
    assert (updated["id"], updated["createdTime"], updated["name"]) == (
        a["id"], a["createdTime"], f"{uid}-alpha2")
    missing = body_for("x", ["a"], target.url)
    missing["id"] = "no-such-integration"
    assert rest.call(broker, "POST", "/api/integration", TOKEN, missing)[0] == 404

    assert rest.call(broker, "POST", "/api/integration/check", TOKEN,
                     body_for("c", ["a"], target.url)) == (200, {})
    status, answer = rest.call(broker, "POST", "/api/integration/check", TOKEN,
                               body_for("c", ["a"], f"http://127.0.0.1:{free_port()}/"))
    assert status == 400 and answer["message"].startswith("target:"), answer

    for bad, field in (
        ("nope", "body"),
        ({"type": "HTTP", "configuration": {}}, "name"),
        (body_for("n", [], target.url), "configuration.topicFilters"),
        (body_for("n", ["a/#/b"], target.url), "configuration.topicFilters"),
        (body_for("n", ["a"], "ftp://x/"), "configuration.clientConfiguration.restEndpointUrl"),
        (body_for("n", ["a"], target.url, requestMethod="GET"),
         "configuration.clientConfiguration.requestMethod"),
        (body_for("n", ["a"], target.url, maxParallelRequestsCount=0),
         "configuration.clientConfiguration.maxParallelRequestsCount"),
        ({**body_for("n", ["a"], target.url), "type": "SMTP"}, "type"),
        # An MQTT integration needs the far broker's host.
        ({**body_for("n", ["a"], target.url), "type": "MQTT"}, "configuration.clientConfiguration.host"),
        # A KAFKA integration needs the Kafka fields, not an HTTP endpoint.
        ({**body_for("n", ["a"], target.url), "type": "KAFKA"},
         "configuration.clientConfiguration.bootstrapServers"),
    ):
        status, answer = rest.call(broker, "POST", "/api/integration", TOKEN, bad)
        assert status == 400 and answer["message"].startswith(field), (bad, answer)

    assert rest.call(broker, "DELETE", one(b["id"]), TOKEN) == (200, {})
    assert rest.call(broker, "DELETE", one(b["id"]), TOKEN)[0] == 404
    assert rest.call(broker, "GET", one(b["id"]), TOKEN)[0] == 404
    # A graceful stop with a running executor exits 0 (the service once outlived the router
    # matcher it clears: a use-after-free at exit that only the exit code showed).
    assert broker.stop() == 0
    broker.start()
    status, page = rest.call(broker, "GET", f"/api/integrations?pageSize=10&page=0&textSearch={uid}",
                             TOKEN)
    assert status == 200 and [e["name"] for e in page["data"]] == [f"{uid}-alpha2"], page


def payloads_in_first_arrival_order(target: HttpTarget) -> list[str]:
    firsts: list[str] = []
    for b in target.bodies():
        p = base64.b64decode(b["payload"]).decode()
        if p not in firsts:
            firsts.append(p)
    return firsts


def kill_the_sender_while_the_target_refuses(target: HttpTarget, pub, topic: str, owner,
                                             first: int, total: int) -> None:
    """The target refuses everything while messages `first`..`total`-1 are acknowledged to
    `pub`; the sending process `owner` is SIGKILLed as its retries fail; the target answers
    again, and every message 0..`total`-1 must reach it, first arrivals in order (the new owner
    resends what the killed one had not committed)."""
    with target.lock:
        target.always_fail = True
    for i in range(first, total):
        assert pub.publish_and_wait(topic, f"{i}".encode(), qos=1) < 0x80
    wait_for(lambda: target.refused > 0, timeout=30, what="a refused request")
    owner.kill()
    with target.lock:
        target.always_fail = False
    wait_for(lambda: len(payloads_in_first_arrival_order(target)) >= total, timeout=120,
             what=f"all {total} messages after the sender was killed")
    assert payloads_in_first_arrival_order(target) == [str(i) for i in range(total)]


def service_id(node) -> str:
    return node.extra_env["TB_SERVICE_ID"]


def runs_executor(process, integration_id: str) -> bool:
    """Whether the process has applied the integration's definition: it then routes by it and
    runs an executor for it, whose integrationUp series exists."""
    return any(name == "integrationUp" and ("integration", integration_id) in labels
               for (name, labels) in process.metrics())


def one_sender(nodes: list, integration_id: str) -> tuple:
    """Waits until every node runs an executor for the integration (other nodes read a new
    definition within their 10 s refresh; until then they do not route to it) and every node's
    API reports the same one owner, ACTIVE (its status travels over ie.uplink), one of the
    nodes; returns (owner, the other)."""
    by_id = {service_id(n): n for n in nodes}
    wait_for(lambda: all(runs_executor(n, integration_id) for n in nodes), timeout=60,
             what="every node running the integration")

    def agreed_owner() -> str | None:
        views = [status_of(n, integration_id) for n in nodes]
        reporters = {v["reportedBy"] for v in views}
        if len(reporters) == 1 and all(v["state"] == "ACTIVE" for v in views):
            return reporters.pop()
        return None

    wait_for(lambda: agreed_owner() in by_id, timeout=60, what="one sender all nodes agree on")
    owner = by_id[agreed_owner()]
    return owner, nodes[1] if owner is nodes[0] else nodes[0]


def sent_by(process, integration_id: str) -> float:
    """integrationMsgs_total{result="sent"} of this process for the integration (0: none)."""
    want = frozenset({("integration", integration_id), ("result", "sent")})
    return sum(value for (name, labels), value in process.metrics().items()
               if name == "integrationMsgs_total" and want <= labels)


@requires_services
def test_cluster_has_one_sender_and_another_node_takes_over_after_sigkill(
        broker_factory, paho_client, target, uid):
    """Two nodes on Kafka and PostgreSQL: an integration created on one reaches the other within
    its refresh period; exactly one node sends (both APIs name it, and only its counters move).
    The target then refuses everything while 30 more messages are acknowledged; the sending node
    is SIGKILLed; the survivor takes the integration's partition over and delivers all of
    them."""
    nodes = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN)
    made = create(nodes[0], body_for("cluster", [f"{uid}/#"], target.url, maxRetries=1000,
                                     retryBackoffMs=50, retryBackoffMaxMs=200))

    owner, survivor = one_sender(nodes, made["id"])
    pub = paho_client(survivor, protocol=5)
    for i in range(20):
        pub.publish_and_wait(f"{uid}/x", f"{i}".encode(), qos=1)
    wait_for(lambda: target.count() >= 20, timeout=30, what="the first 20 messages")
    assert payloads_in_first_arrival_order(target) == [str(i) for i in range(20)]
    assert sent_by(owner, made["id"]) == 20 and sent_by(survivor, made["id"]) == 0

    kill_the_sender_while_the_target_refuses(target, pub, f"{uid}/x", owner, 20, 50)
    wait_for(lambda: status_of(survivor, made["id"])["reportedBy"] == service_id(survivor),
             timeout=30, what="the survivor sending")
    assert status_of(survivor, made["id"])["state"] == "ACTIVE"


@requires_services
def test_changes_reach_the_other_node_at_once(broker_factory, paho_client, target, uid):
    """Two nodes that read the store only every 10 minutes: an integration created, disabled,
    enabled and deleted through one node's API reaches the other within seconds, through the
    ie.downlink.* records — the other node routes to it (a message published there arrives),
    then stops, starts and stops running it."""
    a, b = start_nodes(broker_factory, 2, SECURITY_ADMIN_TOKEN=TOKEN,
                       INTEGRATIONS_REFRESH_INTERVAL="600000")
    made = create(a, body_for("noticed", [f"{uid}/#"], target.url))
    wait_for(lambda: runs_executor(b, made["id"]), timeout=20, what="node b applying the new one")
    pub = paho_client(b, protocol=5)
    assert pub.publish_and_wait(f"{uid}/x", b"via b", qos=1) < 0x80
    wait_for(lambda: target.count() >= 1, timeout=30, what="the message published to node b")

    def save(enabled: bool) -> None:
        body = body_for("noticed", [f"{uid}/#"], target.url)
        body.update(id=made["id"], enabled=enabled)
        status, got = rest.call(a, "POST", "/api/integration", TOKEN, body)
        assert status == 200, got

    save(enabled=False)
    wait_for(lambda: not runs_executor(b, made["id"]), timeout=20, what="node b stopping it")
    save(enabled=True)
    wait_for(lambda: runs_executor(b, made["id"]), timeout=20, what="node b running it again")
    status, got = rest.call(a, "DELETE", one(made["id"]), TOKEN)
    assert status == 200, got
    wait_for(lambda: not runs_executor(b, made["id"]), timeout=20, what="node b dropping it")
