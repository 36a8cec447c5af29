"""The JWT and HTTP authentication providers in the running broker (issue 6).

Tokens are made here with hmac/base64 (HS256) and the openssl CLI (RS256), so the broker's
verification is checked against an independent implementation. The JWKS endpoint and the HTTP
authentication service are python http.server threads in the test process.

starlingd only: the providers are configured through starlingd's YAML."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from starling_it import codec
from starling_it.brokers import REPO_ROOT, BrokerError, free_port
from starling_it.prometheus import metric_sum

pytestmark = pytest.mark.starlingd_only(reason="starlingd's security configuration")

SECRET = "integration-test-secret-of-at-least-32-bytes"
BAD_CREDENTIALS = {codec.MQTT5: 0x86, codec.MQTT311: 0x04}
NOT_AUTHORIZED = {codec.MQTT5: 0x87, codec.MQTT311: 0x05}


# ----------------------------------------------------------------------------- helpers


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signing_input(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return b64u(json.dumps(header).encode()) + "." + b64u(json.dumps(claims).encode())


def hs256_token(claims: dict[str, Any], secret: str = SECRET) -> str:
    head = signing_input({"alg": "HS256", "typ": "JWT"}, claims)
    sig = hmac.new(secret.encode(), head.encode(), hashlib.sha256).digest()
    return head + "." + b64u(sig)


def rs256_token(claims: dict[str, Any], key_file: Path, kid: str) -> str:
    head = signing_input({"alg": "RS256", "typ": "JWT", "kid": kid}, claims)
    sig = subprocess.run(
        ["openssl", "dgst", "-sha256", "-sign", str(key_file)],
        input=head.encode(),
        capture_output=True,
        check=True,
    ).stdout
    return head + "." + b64u(sig)


def rsa_jwk(key_file: Path, kid: str) -> dict[str, str]:
    out = subprocess.run(
        ["openssl", "rsa", "-in", str(key_file), "-noout", "-modulus"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout
    modulus = bytes.fromhex(out.strip().split("=", 1)[1])
    return {"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64u(modulus), "e": "AQAB"}


def claims(**extra: Any) -> dict[str, Any]:
    return {"exp": int(time.time()) + 600, **extra}


def yaml_config(replacements: dict[str, str]) -> str:
    """starling.yml with some of its lines replaced (maps and lists have no variable)."""
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    for old, new in replacements.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


class http_service:
    """An HTTP server thread answering with `respond(path, body) -> (status, body)`; it records
    every request body it received."""

    def __init__(self, respond: Callable[[str, bytes], tuple[int, bytes]]) -> None:
        self.received: list[bytes] = []
        service = self

        class handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                service.received.append(body)
                status, answer = respond(self.path, body)
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(answer)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[..., http_service]]:
    started: list[http_service] = []

    def start(respond: Callable[[str, bytes], tuple[int, bytes]]) -> http_service:
        started.append(http_service(respond))
        return started[-1]

    yield start
    for service in started:
        service.close()


# ----------------------------------------------------------------------------- JWT (HS256)

JWT_ENV = {
    "SECURITY_MQTT_AUTH_PROVIDERS": "JWT",
    "SECURITY_MQTT_JWT_ENABLED": "true",
    "SECURITY_MQTT_JWT_SECRET": SECRET,
    "SECURITY_MQTT_JWT_PUB_AUTH_RULE_CLAIM": "pub",
    "SECURITY_MQTT_ALLOW_ANONYMOUS": "false",
}


@pytest.fixture(scope="module")
def jwt_broker(tmp_path_factory):
    from starling_it.brokers import make_broker

    broker = make_broker(
        tmp_path_factory.mktemp("jwt"),
        env=JWT_ENV,
        # Tokens must name the client: a token cannot be replayed under another client id.
        config_text=yaml_config(
            {"      auth-claims: {}\n": '      auth-claims: {sub: "${clientId}"}\n'}
        ),
    )
    broker.start()
    yield broker
    broker.close()


def test_jwt_valid_token_is_accepted(jwt_broker, raw_client, protocol, uid):
    conn = raw_client(jwt_broker, protocol)
    assert conn.connect(uid, username="any", password=hs256_token(claims(sub=uid))).reason_code == 0
    conn.disconnect()


def test_jwt_expired_token_is_bad_credentials(jwt_broker, raw_client, protocol, uid):
    token = hs256_token({"sub": uid, "exp": int(time.time()) - 120})
    conn = raw_client(jwt_broker, protocol)
    ack = conn.connect(uid, username="any", password=token)
    assert ack.reason_code == BAD_CREDENTIALS[protocol]


def test_jwt_wrong_signature_is_refused(jwt_broker, raw_client, protocol, uid):
    token = hs256_token(claims(sub=uid), secret="another-secret-that-is-32-bytes-long!!")
    conn = raw_client(jwt_broker, protocol)
    ack = conn.connect(uid, username="any", password=token)
    assert ack.reason_code == BAD_CREDENTIALS[protocol]


def test_jwt_claim_for_another_client_is_not_authorized(jwt_broker, raw_client, uid):
    conn = raw_client(jwt_broker, codec.MQTT5)
    ack = conn.connect(uid, username="any", password=hs256_token(claims(sub="someone-else")))
    assert ack.reason_code == NOT_AUTHORIZED[codec.MQTT5]


def test_jwt_pub_rule_claim_denies_other_topics(jwt_broker, raw_client, uid):
    token = hs256_token(claims(sub=uid, pub=[f"it/jwt/{uid}/allowed/.*"]))
    conn = raw_client(jwt_broker, codec.MQTT5)
    assert conn.connect(uid, username="any", password=token).reason_code == 0
    assert conn.publish(f"it/jwt/{uid}/allowed/x", b"yes", qos=1).reason_code == 0
    assert conn.publish(f"it/jwt/{uid}/denied/x", b"no", qos=1).reason_code == 0x87
    conn.disconnect()


def test_jwt_short_secret_fails_start_naming_the_key(broker_factory):
    broker = broker_factory(env={**JWT_ENV, "SECURITY_MQTT_JWT_SECRET": "short"}, start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "security.mqtt.jwt.secret: must be at least 32 bytes" in broker.log_text()


def test_http_bad_endpoint_fails_start_naming_the_key(broker_factory):
    env = {
        "SECURITY_MQTT_AUTH_PROVIDERS": "HTTP",
        "SECURITY_MQTT_HTTP_ENABLED": "true",
        "SECURITY_MQTT_HTTP_ENDPOINT": "ftp://auth.example",
    }
    broker = broker_factory(env=env, start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "security.mqtt.http.endpoint: 'ftp://auth.example'" in broker.log_text()


# ----------------------------------------------------------------------------- JWT (JWKS)


def test_jwks_rs256_token_with_its_kid_is_accepted(
    broker_factory, raw_client, serve, tmp_path, uid
):
    key = tmp_path / "rsa.pem"
    subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
         str(key)],
        check=True,
        capture_output=True,
    )
    document = json.dumps({"keys": [rsa_jwk(key, "kid-1")]}).encode()
    jwks = serve(lambda path, body: (200, document))
    broker = broker_factory(
        env={
            **JWT_ENV,
            "SECURITY_MQTT_JWT_VERIFIER": "JWKS",
            "SECURITY_MQTT_JWT_JWKS_ENDPOINT": f"http://127.0.0.1:{jwks.port}/jwks.json",
        }
    )
    conn = raw_client(broker, codec.MQTT5)
    token = rs256_token(claims(sub=uid), key, "kid-1")
    assert conn.connect(uid, username="any", password=token).reason_code == 0
    conn.disconnect()

    # An HS256 token is not accepted by a JWKS (RSA) verifier, whatever its secret.
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(f"{uid}-hs", username="any", password=hs256_token(claims()))
    assert ack.reason_code == BAD_CREDENTIALS[codec.MQTT5]
    assert len(jwks.received) >= 1
    # SIGTERM stops the JWKS refresh timer and exits cleanly.
    assert broker.stop() == 0


# ----------------------------------------------------------------------------- HTTP


def http_answer(path: str, body: bytes) -> tuple[int, bytes]:
    request = json.loads(body)
    if request["user"] == "good":
        return 200, json.dumps({"clientType": "APPLICATION"}).encode()
    if request["user"] == "bad":
        return 401, b""
    return 500, b"boom"


def http_broker(broker_factory, port: int):
    return broker_factory(
        env={
            "SECURITY_MQTT_AUTH_PROVIDERS": "HTTP",
            "SECURITY_MQTT_HTTP_ENABLED": "true",
            "SECURITY_MQTT_HTTP_ENDPOINT": f"http://127.0.0.1:{port}/auth",
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "false",
            "SECURITY_MQTT_AUTH_CACHE_TTL_MS": "0",
        },
        config_text=yaml_config(
            {
                '      request-body: "${SECURITY_MQTT_HTTP_REQUEST_BODY:}"\n': (
                    "      request-body: '{\"id\": \"${clientId}\", \"user\": \"${username}\", "
                    "\"pw\": \"${password}\"}'\n"
                )
            }
        ),
    )


def provider_failures(broker) -> float:
    return metric_sum(broker.metrics(), "authFailures_total", provider="HTTP",
                      reason="provider_failure")


def test_http_answers_decide(broker_factory, raw_client, serve, protocol, uid):
    service = serve(http_answer)
    broker = http_broker(broker_factory, service.port)

    conn = raw_client(broker, protocol)
    assert conn.connect(uid, username="good", password='p"w').reason_code == 0
    conn.disconnect()
    # The configured template, filled and JSON-escaped.
    assert json.loads(service.received[0]) == {"id": uid, "user": "good", "pw": 'p"w'}

    conn = raw_client(broker, protocol)
    ack = conn.connect(f"{uid}-b", username="bad", password="x")
    assert ack.reason_code == BAD_CREDENTIALS[protocol]

    before = provider_failures(broker)
    conn = raw_client(broker, protocol)
    ack = conn.connect(f"{uid}-e", username="error", password="x")
    assert ack.reason_code == NOT_AUTHORIZED[protocol]
    assert provider_failures(broker) == before + 1
    assert broker.stop() == 0


def test_http_endpoint_down_fails_closed_and_counts(broker_factory, raw_client, uid):
    broker = http_broker(broker_factory, free_port())  # nothing listens there
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid, username="good", password="x")
    assert ack.reason_code == NOT_AUTHORIZED[codec.MQTT5]
    assert provider_failures(broker) == 1
