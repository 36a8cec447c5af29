"""X_509 identity comes from the verified certificate chain only, end to end against starlingd.

The attack: a device holds a certificate CN ``device-7`` signed by the trusted CA, for which no
credentials exist. It appends a certificate CN ``gw-1`` to the chain it sends over TLS (one it
made itself, self-signed, or a genuine gateway certificate, which is public and needs no key to
append). X_509 credentials exist for ``gw-[0-9]+`` only. The broker used to read a CN from every
certificate the client sent, so the device was let in as a gateway and could publish to
``gateways/...``. It must be refused, whether the listener verified the chain (no provider
trust store) or the X_509 provider verified it itself (``security.mqtt.ssl.trust-store``).
Certificates are made at test time with the openssl CLI (starling_it/pki.py).
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from starling_it.brokers import REPO_ROOT
from starling_it.pki import Pki
from starling_it.prometheus import metric_sum

pytestmark = pytest.mark.starlingd_only(reason="TLS listener and X_509 provider of starlingd")

GATEWAY_CREDENTIALS = """\
    credentials:
      - name: gateways
        type: APPLICATION
        credentials-type: X_509
        cert-cn-regex: "gw-[0-9]+"
        pub: ["gateways/.*"]
        sub: ["gateways/.*"]
"""


@pytest.fixture
def pki(tmp_path) -> Pki:
    p = Pki(tmp_path / "pki")
    p.make_ca("ca")
    p.make_cert("server", "starling-server-1", "ca")
    p.make_cert("device", "device-7", "ca")
    p.make_cert("gateway", "gw-1", "ca")  # the genuine gateway's certificate
    p.make_ca("gw-1")  # gw-1.pem: self-signed, CN gw-1, made by the attacker
    return p


def chain_file(pki: Pki, name: str, *pems: str) -> Path:
    """``<name>.pem``: the given PEM files concatenated (leaf first, then what is appended)."""
    path = pki.path(f"{name}.pem")
    path.write_text("".join(pki.path(p).read_text() for p in pems))
    return path


def client_context(pki: Pki, chain: Path, key: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(pki.path("ca.pem")))
    ctx.load_cert_chain(str(chain), str(pki.path(key)))
    return ctx


def gateway_broker(broker_factory, pki: Pki, client_auth: str, provider_trust_store: bool):
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    credentials: []\n" in text
    env = {
        "LISTENER_SSL_ENABLED": "true",
        "LISTENER_SSL_PEM_CERT": str(pki.path("server.pem")),
        "LISTENER_SSL_PEM_KEY": str(pki.path("server.key")),
        "LISTENER_SSL_CLIENT_AUTH": client_auth,
        "LISTENER_SSL_TRUST_STORE": str(pki.path("ca.pem")),
        "SECURITY_MQTT_SSL_ENABLED": "true",
        "SECURITY_MQTT_ALLOW_ANONYMOUS": "false",
    }
    if provider_trust_store:
        env["SECURITY_MQTT_SSL_TRUST_STORE"] = str(pki.path("ca.pem"))
    config_text = text.replace("    credentials: []\n", GATEWAY_CREDENTIALS)
    return broker_factory(env=env, config_text=config_text)


@pytest.mark.parametrize(
    "client_auth,provider_trust_store",
    [("required", False), ("requested", False), ("required", True), ("requested", True)],
    ids=["listener-verified-required", "listener-verified-requested",
         "provider-verified-required", "provider-verified-requested"],
)
def test_appended_gateway_certificate_does_not_make_a_device_a_gateway(
    broker_factory, paho_client, pki, uid, client_auth, provider_trust_store
):
    broker = gateway_broker(broker_factory, pki, client_auth, provider_trust_store)
    port = broker.ports["ssl"]

    # The control: the genuine gateway certificate is a gateway.
    gateway = paho_client(
        broker, client_id=f"{uid}-gw", port=port,
        tls_context=client_context(pki, pki.path("gateway.pem"), "gateway.key"),
    )
    assert gateway.publish_and_wait(f"gateways/{uid}", b"ok", qos=1) == 0

    # The attack, with a forged (self-signed) and with the genuine gw-1 certificate appended.
    for appended in ("gw-1.pem", "gateway.pem"):
        chain = chain_file(pki, f"device-plus-{appended[:-4]}", "device.pem", appended)
        device = paho_client(
            broker, client_id=f"{uid}-{appended[:-4]}", port=port, connect=False,
            tls_context=client_context(pki, chain, "device.key"),
        )
        connack = device.connect(expect_success=False)
        # A certificate was offered and no provider accepted it: bad credentials (0x86).
        assert connack.reason_code == 0x86, (
            f"device-7 with {appended} appended: CONNACK 0x{connack.reason_code:02x}\n"
            + broker.log_tail()
        )
        device.close()
    assert metric_sum(broker.metrics(), "authSuccess_total", provider="X_509") == 1
