"""The JWT provider against an attacker's tokens and a careless configuration (hardening issue,
item 9): the published example secret is refused at start-up, a token without exp is refused
unless the operator allows it, and a cached allow never outlives the token's exp.

Tokens are signed here with hmac (test_auth_jwt_http's helpers), independently of the broker.
starlingd only: the provider is configured through starlingd's YAML."""

from __future__ import annotations

import time

import pytest

from starling_it import codec
from starling_it.brokers import BrokerError
from test_auth_jwt_http import BAD_CREDENTIALS, JWT_ENV, hs256_token

pytestmark = pytest.mark.starlingd_only(reason="starlingd's security configuration")

EXAMPLE_SECRET = "please-change-this-32-char-jwt-secret"
LEEWAY_S = 5  # the provider's clock skew on exp


def test_the_example_secret_fails_start_naming_the_key(broker_factory):
    broker = broker_factory(env={**JWT_ENV, "SECURITY_MQTT_JWT_SECRET": EXAMPLE_SECRET}, start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "security.mqtt.jwt.secret: is the published example secret" in broker.log_text()


def test_a_token_without_exp_is_refused_by_default(broker_factory, raw_client, protocol, uid):
    broker = broker_factory(env=JWT_ENV)
    conn = raw_client(broker, protocol)
    ack = conn.connect(uid, username="any", password=hs256_token({"sub": uid}))
    assert ack.reason_code == BAD_CREDENTIALS[protocol]


def test_tokens_without_exp_pass_when_the_operator_allows_them(broker_factory, raw_client, uid):
    broker = broker_factory(env={**JWT_ENV, "SECURITY_MQTT_JWT_ALLOW_TOKENS_WITHOUT_EXP": "true"})
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid, username="any", password=hs256_token({"sub": uid})).reason_code == 0
    conn.disconnect()


@pytest.mark.slow
def test_a_cached_allow_does_not_outlive_the_tokens_exp(broker_factory, raw_client, uid):
    # The verdict cache keeps an allow for 60 s by default; this token expires in 2 s.
    broker = broker_factory(env=JWT_ENV)
    exp = int(time.time()) + 2
    token = hs256_token({"sub": uid, "exp": exp})
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid, username="any", password=token).reason_code == 0
    conn.disconnect()
    # Time is what is tested: wait until exp and the leeway have passed.
    time.sleep(max(0.0, exp + LEEWAY_S + 1 - time.time()))
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(uid, username="any", password=token)
    assert ack.reason_code == BAD_CREDENTIALS[codec.MQTT5], "an expired token was let in"
