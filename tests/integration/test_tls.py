"""MQTT over TLS (listener.ssl): TLS 1.2 and 1.3, the TLS 1.3-only setting, client certificates
(mTLS) and certificate reload without a restart. Certificates are made at test time with the
openssl CLI (starling_it/pki.py). starlingd only: the Mosquitto fixture has no TLS listener.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import time

import pytest

from starling_it import codec
from starling_it.brokers import REPO_ROOT, BrokerError
from starling_it.pki import Pki
from starling_it.prometheus import metric_sum
from starling_it.raw_client import RawClient

pytestmark = pytest.mark.starlingd_only(reason="TLS listener configured through starlingd env")


@pytest.fixture
def pki(tmp_path) -> Pki:
    p = Pki(tmp_path / "pki")
    p.make_ca("ca")
    p.make_cert("server", "starling-server-1", "ca")
    p.make_cert("client", "device-1", "ca")
    p.make_ca("other-ca")
    p.make_cert("stranger", "device-1", "other-ca")
    return p


def tls_env(pki: Pki, **extra: str) -> dict[str, str]:
    env = {
        "LISTENER_SSL_ENABLED": "true",
        "LISTENER_SSL_PEM_CERT": str(pki.path("server.pem")),
        "LISTENER_SSL_PEM_KEY": str(pki.path("server.key")),
    }
    env.update(extra)
    return env


def client_context(pki: Pki, version: ssl.TLSVersion | None = None, cert: str | None = None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(pki.path("ca.pem")))
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    if cert is not None:
        ctx.load_cert_chain(str(pki.path(f"{cert}.pem")), str(pki.path(f"{cert}.key")))
    return ctx


def tls_connect_raw(broker, ctx: ssl.SSLContext, client_id: str) -> bytes:
    """Handshake, CONNECT, and return the first bytes the server sends back ("" = closed).
    A refused client certificate shows up as an SSL error (or a close) at the latest here,
    because with TLS 1.3 the server's verdict on it arrives after the client's handshake."""
    with socket.create_connection((broker.host, broker.ports["ssl"]), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(codec.connect(client_id, protocol=codec.MQTT311))
            return s.recv(4)


def wait_for(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)  # polling a condition with a deadline
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls12", "tls13"]
)
def test_publish_and_receive_over_tls(broker_factory, paho_client, pki, topic, version):
    broker = broker_factory(env=tls_env(pki))
    assert "ssl" in broker.ports and broker.ports["ssl"] != 0
    ctx = client_context(pki, version)
    sub = paho_client(broker, port=broker.ports["ssl"], tls_context=client_context(pki, version))
    assert sub.subscribe(topic, qos=1) == [1]
    pub = paho_client(broker, port=broker.ports["ssl"], tls_context=ctx)
    assert pub.publish_and_wait(topic, b"secret", qos=1) == 0
    msg = sub.expect_message()
    assert msg.payload == b"secret"
    # The plain TCP listener still works next to it.
    plain = paho_client(broker)
    assert plain.subscribe(topic + "/plain", qos=0) == [0]


def test_tls13_only_listener_refuses_tls12(broker_factory, paho_client, pki, uid):
    broker = broker_factory(env=tls_env(pki, LISTENER_SSL_PROTOCOL="TLSv1.3"))
    with pytest.raises(ssl.SSLError):
        tls_connect_raw(broker, client_context(pki, ssl.TLSVersion.TLSv1_2), uid)
    wait_for(
        lambda: metric_sum(broker.metrics(), "handshakeFailures_total") >= 1,
        what="handshakeFailures_total to count the refused handshake",
    )
    ok = tls_connect_raw(broker, client_context(pki, ssl.TLSVersion.TLSv1_3), uid)
    assert ok[:1] == b"\x20", "CONNACK expected over TLS 1.3"


def test_mtls_required_accepts_a_good_client_certificate_only(
    broker_factory, paho_client, pki, uid
):
    broker = broker_factory(
        env=tls_env(
            pki,
            LISTENER_SSL_CLIENT_AUTH="required",
            LISTENER_SSL_TRUST_STORE=str(pki.path("ca.pem")),
        )
    )
    good = paho_client(
        broker, port=broker.ports["ssl"], tls_context=client_context(pki, cert="client")
    )
    assert good.connack.reason_code == 0
    for cert in (None, "stranger"):
        try:
            first = tls_connect_raw(broker, client_context(pki, cert=cert), f"{uid}-{cert}")
        except (ssl.SSLError, ConnectionError, OSError):
            continue  # refused during or right after the handshake
        assert first == b"", f"client certificate {cert!r} got {first!r} instead of a refusal"


def test_missing_certificate_fails_start_naming_the_key(broker_factory, pki, tmp_path):
    broker = broker_factory(
        env=tls_env(pki, LISTENER_SSL_PEM_CERT=str(tmp_path / "missing.pem")), start=False
    )
    with pytest.raises(BrokerError):
        broker.start()
    assert "listener.ssl.config.credentials.pem.cert_file" in broker.log_text()


def test_unknown_protocol_fails_start_naming_the_key(broker_factory, pki):
    broker = broker_factory(env=tls_env(pki, LISTENER_SSL_PROTOCOL="TLSv1.1"), start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "listener.ssl.config.protocol" in broker.log_text()


def test_certificate_reload_without_restart(broker_factory, paho_client, pki, topic, tmp_path):
    live = tmp_path / "live"
    live.mkdir()
    shutil.copy(pki.path("server.pem"), live / "server.pem")
    shutil.copy(pki.path("server.key"), live / "server.key")
    broker = broker_factory(
        env=tls_env(
            pki,
            LISTENER_SSL_PEM_CERT=str(live / "server.pem"),
            LISTENER_SSL_PEM_KEY=str(live / "server.key"),
            LISTENER_SSL_RELOAD_INTERVAL="1",
        )
    )

    def served_cert() -> bytes:
        ctx = client_context(pki)
        with socket.create_connection((broker.host, broker.ports["ssl"]), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                return s.getpeercert(binary_form=True)

    def expiry_metric() -> float:
        return metric_sum(broker.metrics(), "tlsCertificateExpiry_seconds", listener="ssl")

    old_der = pki.der(pki.path("server.pem"))
    assert served_cert() == old_der
    assert expiry_metric() == pki.not_after(pki.path("server.pem"))
    old_client = paho_client(broker, port=broker.ports["ssl"], tls_context=client_context(pki))
    assert old_client.subscribe(topic, qos=1) == [1]

    # A new certificate, swapped in file by file as a cert-manager would (rename = atomic).
    staging = tmp_path / "staging"
    staging.mkdir()
    pki.make_cert("server", "starling-server-2", "ca", out_dir=staging, days=30)
    new_der = pki.der(staging / "server.pem")
    assert new_der != old_der
    new_not_after = pki.not_after(staging / "server.pem")
    os.replace(staging / "server.key", live / "server.key")
    os.replace(staging / "server.pem", live / "server.pem")
    wait_for(lambda: served_cert() == new_der, timeout=20, what="the new certificate")
    # tlsCertificateExpiry_seconds follows the served certificate (30 days now, not 2).
    assert expiry_metric() == new_not_after

    # The connection made before the reload is still up and served.
    pub = paho_client(broker, port=broker.ports["ssl"], tls_context=client_context(pki))
    assert pub.publish_and_wait(topic, b"after reload", qos=1) == 0
    assert old_client.expect_message().payload == b"after reload"

    # A broken file keeps the current credentials.
    (live / "server.pem").write_text("not a certificate\n")
    wait_for(
        lambda: "reloading TLS credentials failed" in broker.log_text(),
        timeout=20,
        what="the failed reload to be logged",
    )
    assert served_cert() == new_der


def test_sigterm_disconnects_tls_clients(broker_factory, paho_client, pki):
    broker = broker_factory(env=tls_env(pki))
    client = paho_client(broker, port=broker.ports["ssl"], tls_context=client_context(pki))
    assert broker.stop() == 0
    info = client.wait_for_disconnect()
    assert info.from_server and info.reason_code == codec.RC_SERVER_SHUTTING_DOWN, info


# ------------------------------------------------------------------ X_509 end to end (issue 6)

X509_CREDENTIALS = """\
    credentials:
      - name: device-1 by certificate
        credentials-type: X_509
        cert-cn: device-1
        pub: ["it/x509/allowed/.*"]
        sub: ["it/x509/allowed/.*"]
"""


def x509_broker(broker_factory, pki: Pki, client_auth: str):
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    credentials: []\n" in text
    return broker_factory(
        env=tls_env(
            pki,
            LISTENER_SSL_CLIENT_AUTH=client_auth,
            LISTENER_SSL_TRUST_STORE=str(pki.path("ca.pem")),
            SECURITY_MQTT_SSL_ENABLED="true",
            SECURITY_MQTT_ALLOW_ANONYMOUS="false",
        ),
        config_text=text.replace("    credentials: []\n", X509_CREDENTIALS),
    )


def tls_raw_client(broker, ctx: ssl.SSLContext, protocol: int = codec.MQTT5):
    """A RawClient whose socket is the TLS stream (the class only uses sendall/recv)."""
    c = RawClient(broker.host, broker.ports["ssl"], protocol=protocol)
    c.sock = ctx.wrap_socket(c.sock, server_hostname="127.0.0.1")
    return c


@pytest.mark.parametrize("client_auth", ["requested", "required"])
def test_x509_certificate_authenticates_and_its_rules_apply(broker_factory, pki, uid, client_auth):
    broker = x509_broker(broker_factory, pki, client_auth)
    c = tls_raw_client(broker, client_context(pki, cert="client"))
    try:
        assert c.connect(uid).reason_code == 0, broker.log_tail()
        assert c.publish(f"it/x509/allowed/{uid}", b"yes", qos=1).reason_code == 0
        assert c.publish(f"it/x509/denied/{uid}", b"no", qos=1).reason_code == 0x87
    finally:
        c.close()
    assert metric_sum(broker.metrics(), "authSuccess_total", provider="X_509") == 1


def test_x509_certificate_without_credentials_is_refused(broker_factory, pki, uid):
    pki.make_cert("nobody", "device-without-credentials", "ca")
    broker = x509_broker(broker_factory, pki, "required")
    c = tls_raw_client(broker, client_context(pki, cert="nobody"))
    try:
        # A certificate was offered but no provider knows it: bad credentials, not anonymous.
        assert c.connect(uid).reason_code == 0x86
    finally:
        c.close()
    # The same broker accepts the certificate that has credentials (the refusal was the CN's).
    good = tls_raw_client(broker, client_context(pki, cert="client"))
    try:
        assert good.connect(uid + "-good").reason_code == 0
    finally:
        good.close()
