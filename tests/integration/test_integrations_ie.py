"""starling-ie, the integration executor run apart from the brokers (cluster mode): a broker
node with integrations.executor.enabled=false routes matching messages to msg.ie.<id> but sends
nothing itself; two starling-ie processes share each integration's consumer group, so one of
them sends (in order, to a local HTTP target), its status reaches the broker's API over
ie.uplink, and after a SIGKILL of the sender the other one delivers everything that was
acknowledged to the publisher. A starling-ie outside cluster mode refuses to start, naming the
key; SIGTERM stops one cleanly."""

from __future__ import annotations

import pytest

from starling_it.brokers import StarlingIeProcess
from starling_it.cluster import cluster_env, new_prefix, requires_services
from test_hostile_connections import wait_for
from test_integrations import (TOKEN, body_for, create,
                               kill_the_sender_while_the_target_refuses,
                               payloads_in_first_arrival_order, sent_by, status_of,
                               target)  # noqa: F401 (target: a fixture)

pytestmark = [pytest.mark.starlingd_only(reason="starling-ie is Starling's"), requires_services]

# Status reports (and the broker's heartbeats) every 500 ms, so a dead reporter's status goes
# stale in 1.5 s.
FAST = {"TB_SERVICE_HEARTBEAT_INTERVAL": "500"}


@pytest.fixture
def executors(tmp_path):
    started: list[StarlingIeProcess] = []

    def make(prefix: str, service_id: str) -> StarlingIeProcess:
        ie = StarlingIeProcess(tmp_path / service_id, cluster_env(prefix, service_id, **FAST))
        started.append(ie)
        return ie.start()

    yield make
    for ie in started:
        ie.close()


def test_executors_apart_from_the_broker_send_report_and_take_over(
        broker_factory, paho_client, target, executors, uid):  # noqa: F811
    prefix = new_prefix()
    node = broker_factory(env=cluster_env(prefix, "node-a", SECURITY_ADMIN_TOKEN=TOKEN,
                                          INTEGRATIONS_EXECUTOR_ENABLED="false", **FAST))
    ies = [executors(prefix, "ie-1"), executors(prefix, "ie-2")]
    made = create(node, body_for("apart", [f"{uid}/#"], target.url, maxRetries=1000,
                                 retryBackoffMs=50, retryBackoffMaxMs=200))

    pub = paho_client(node, protocol=5)
    for i in range(20):
        assert pub.publish_and_wait(f"{uid}/x", f"{i}".encode(), qos=1) < 0x80
    # The executors read the definition within their refresh period (10 s).
    wait_for(lambda: target.count() >= 20, timeout=60, what="the first 20 messages")
    assert payloads_in_first_arrival_order(target) == [str(i) for i in range(20)]

    # The broker's API shows the owner's status, reported over ie.uplink.
    wait_for(lambda: status_of(node, made["id"])["sent"] == 20, timeout=30,
             what="the executor's status on the broker's API")
    st = status_of(node, made["id"])
    assert st["state"] == "ACTIVE" and st["reportedBy"] in ("ie-1", "ie-2"), st
    assert st["reportedAt"] > 0, st
    owner = next(ie for ie in ies if ie.extra_env["TB_SERVICE_ID"] == st["reportedBy"])
    standby = ies[1] if owner is ies[0] else ies[0]
    # Exactly one process sent them; the broker node, which runs no executor, none.
    assert sent_by(owner, made["id"]) == 20
    assert sent_by(standby, made["id"]) == 0
    assert sent_by(node, made["id"]) == 0

    # The target refuses while 30 more are acknowledged; the sender is SIGKILLed; the other
    # executor takes the partition over and delivers all of them, in order.
    kill_the_sender_while_the_target_refuses(target, pub, f"{uid}/x", owner, 20, 50)
    survivor_id = standby.extra_env["TB_SERVICE_ID"]
    wait_for(lambda: status_of(node, made["id"])["reportedBy"] == survivor_id, timeout=30,
             what="the survivor's status on the broker's API")
    assert status_of(node, made["id"])["state"] == "ACTIVE"
    assert standby.stop() == 0


def test_starling_ie_outside_cluster_mode_refuses_to_start(tmp_path):
    ie = StarlingIeProcess(tmp_path / "ie", {"STARLING_MODE": "embedded"})
    ie.start(wait_ready=False)
    ie.proc.wait(timeout=30)
    assert ie.proc.returncode != 0
    assert "starling.mode" in ie.log_text() and "cluster mode only" in ie.log_text()
