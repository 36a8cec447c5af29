"""TLS to Redis in cluster mode (redis.ssl.*): starlingd keeps the persistent DEVICE inboxes in
a redis-server that speaks only TLS and asks for client certificates; a paho device offline
while QoS 1 messages are published gets all of them when it resumes. With the wrong CA the
node does not get in: it waits, alive and not ready, and says why.

Needs the test services (Kafka, PostgreSQL), redis-server built with TLS (Debian's is) and the
openssl CLI; the TLS Redis is the test's own process."""

from __future__ import annotations

import shutil

import pytest

from starling_it.brokers import free_port
from starling_it.cluster import cluster_env, new_prefix, requires_services
from starling_it.pki import Pki
from starling_it.private_redis import PrivateRedis
from test_cluster_kafka import get_json
from test_hostile_connections import wait_for

pytestmark = [
    pytest.mark.starlingd_only(reason="cluster mode is starlingd's"),
    pytest.mark.cluster,
    requires_services,
]


@pytest.fixture
def tls_redis(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    pki = Pki(tmp_path / "pki")
    pki.make_ca("ca")
    pki.make_ca("other-ca")
    pki.make_cert("server", "redis", "ca")
    pki.make_cert("client", "starling", "ca")
    redis = PrivateRedis(tmp_path / "redis", [])
    redis._command = [shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", "0",
                      "--tls-port", str(redis.port), "--dir", str(tmp_path / "redis"),
                      "--save", "", "--appendonly", "no",
                      "--tls-cert-file", str(pki.path("server.pem")),
                      "--tls-key-file", str(pki.path("server.key")),
                      "--tls-ca-cert-file", str(pki.path("ca.pem")),
                      "--tls-auth-clients", "yes"]
    redis.start()
    yield redis, pki
    redis.close()


def tls_env(redis: PrivateRedis, pki: Pki, ca: str = "ca", **extra: str) -> dict[str, str]:
    return {
        "REDIS_HOST": "127.0.0.1",
        "REDIS_PORT": str(redis.port),
        "REDIS_SSL_ENABLED": "true",
        "REDIS_SSL_CERT_FILE": str(pki.path(f"{ca}.pem")),
        "REDIS_SSL_USER_CERT_FILE": str(pki.path("client.pem")),
        "REDIS_SSL_USER_KEY_FILE": str(pki.path("client.key")),
        "REDIS_CLIENT_CONNECT_TIMEOUT": "2000",
        **extra,
    }


@pytest.mark.timeout(180)
def test_offline_device_gets_everything_through_tls_redis(broker_factory, paho_client, uid,
                                                          tls_redis):
    redis, pki = tls_redis
    node = broker_factory(env=cluster_env(new_prefix(), "node-a", **tls_env(redis, pki)))
    device = paho_client(node, f"{uid}-dev", protocol=5, clean_start=False, session_expiry=3600)
    assert device.subscribe(f"tls/{uid}/data", qos=1) == [1]
    device.disconnect()
    publisher = paho_client(node, f"{uid}-pub", protocol=5)
    total = 30
    for seq in range(total):
        assert publisher.publish_and_wait(f"tls/{uid}/data", str(seq), qos=1, timeout=30) == 0
    back = paho_client(node, f"{uid}-dev", protocol=5, clean_start=False, session_expiry=3600)
    assert back.session_present
    received: set[str] = set()
    while len(received) < total:
        received.add(back.expect_message(timeout=60).payload.decode())
    assert received == {str(s) for s in range(total)}


@pytest.mark.timeout(120)
def test_wrong_ca_waits_not_ready_saying_why(broker_factory, tls_redis):
    redis, pki = tls_redis
    http_port = free_port()
    node = broker_factory(
        env=cluster_env(new_prefix(), "node-a",
                        **tls_env(redis, pki, ca="other-ca", HTTP_BIND_PORT=str(http_port))),
        start=False,
    )
    node.start(wait_ready=False)

    def reported_waiting() -> bool:
        status, body = get_json(http_port, "/actuator/health/readiness")
        startup = body.get("components", {}).get("startup", {})
        return status == 503 and startup.get("details", {}).get("waitingFor") == "Redis"

    wait_for(reported_waiting, timeout=30, what="readiness to report the wait for Redis")
    error = get_json(http_port, "/actuator/health/readiness")[1]["components"]["startup"][
        "details"]["error"]
    assert "TLS handshake" in error and "certificate" in error, error
