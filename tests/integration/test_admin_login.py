"""Admin login of the management API (/api/auth/login, /api/auth/token, /api/auth/user): the
first admin from the environment, JWTs accepted on every /api route and by every node of a
cluster, refresh, refusal of the wrong kind of token, the per-address limit on failed logins,
and keys and users that survive a restart. Driven over plain HTTP (http.client), so the
source address of each call can be chosen."""

from __future__ import annotations

import base64
import http.client
import json

import pytest

from starling_it import openapi
from starling_it.brokers import BrokerError
from starling_it.cluster import requires_services, start_nodes

pytestmark = pytest.mark.starlingd_only(reason="/api/auth is starlingd's")

USER = "ops@example.com"
PASSWORD = "corr3ct-h0rse"


def admin_env(**extra: str) -> dict[str, str]:
    return {"SECURITY_ADMIN_USERNAME": USER, "SECURITY_ADMIN_PASSWORD": PASSWORD, **extra}


def call(broker, method: str, path: str, body=None, token: str | None = None,
         header: str = "X-Authorization", source: str = "127.0.0.1"):
    """(status, JSON body, headers) of one call from `source`, the answer checked against
    docs/openapi.json."""
    conn = http.client.HTTPConnection(broker.host, broker.http_port, timeout=10,
                                      source_address=(source, 0))
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers[header] = f"Bearer {token}"
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        parsed = openapi.validate_response(method, path, resp.status, raw,
                                           resp.getheader("Content-Type"))
        return resp.status, parsed, resp
    finally:
        conn.close()


def login(broker, password: str = PASSWORD, source: str = "127.0.0.1", user: str = USER):
    return call(broker, "POST", "/api/auth/login", {"username": user, "password": password},
                source=source)


def claims(token: str) -> dict:
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_login_gives_tokens_that_open_the_api(broker_factory):
    broker = broker_factory(env=admin_env())
    status, pair, _ = login(broker)
    assert status == 200, pair
    access, refresh = pair["token"], pair["refreshToken"]
    assert claims(access)["sub"] == USER and claims(access)["scopes"] == ["SYS_ADMIN"]
    assert claims(refresh)["scopes"] == ["REFRESH_TOKEN"]
    assert claims(access)["exp"] - claims(access)["iat"] == 9000

    # TBMQ's header and the standard one both carry it, on any /api route.
    for header in ("X-Authorization", "Authorization"):
        status, level, _ = call(broker, "GET", "/api/app/log-level", token=access, header=header)
        assert status == 200 and level["level"], level
    status, me, _ = call(broker, "GET", "/api/auth/user", token=access)
    assert status == 200 and me["username"] == USER and me["serviceAccount"] is False
    assert me["expiresAt"] == claims(access)["exp"] * 1000

    # A refresh token is not an access token; a token changed by one byte is nothing.
    assert call(broker, "GET", "/api/app/log-level", token=refresh)[0] == 401
    head, body, sig = access.split(".")
    forged_claims = base64.urlsafe_b64encode(
        json.dumps({**claims(access), "sub": "someone-else"}).encode()).rstrip(b"=").decode()
    assert call(broker, "GET", "/api/app/log-level", token=f"{head}.{forged_claims}.{sig}")[0] == 401
    assert call(broker, "GET", "/api/app/log-level", token=access[:-2] + "xx")[0] == 401
    unsigned = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    assert call(broker, "GET", "/api/app/log-level", token=f"{unsigned}.{body}.")[0] == 401
    assert call(broker, "GET", "/api/app/log-level")[0] == 401

    # Refresh: a new working pair; an access token is not a refresh token.
    status, again, _ = call(broker, "POST", "/api/auth/token", {"refreshToken": refresh})
    assert status == 200, again
    assert call(broker, "GET", "/api/app/log-level", token=again["token"])[0] == 200
    assert call(broker, "POST", "/api/auth/token", {"refreshToken": access})[0] == 401
    assert call(broker, "POST", "/api/auth/token", {"refresh": refresh})[0] == 400

    # Every refusal is in the log, with the caller's address.
    assert "api: refused GET /api/app/log-level from 127.0.0.1" in broker.log_text()


def test_wrong_passwords_are_refused_and_limited_per_address(broker_factory):
    broker = broker_factory(env=admin_env(SECURITY_ADMIN_FAILED_LOGINS_PER_ADDRESS="3:600"))
    assert login(broker, "wrong", source="127.0.0.2")[0] == 401
    assert login(broker, "wrong", source="127.0.0.2", user="nobody@example.com")[0] == 401
    assert login(broker, "wrong", source="127.0.0.2")[0] == 401
    # The address used its three failures: refused before any check, even the right password.
    status, body, resp = login(broker, PASSWORD, source="127.0.0.2")
    assert status == 429, body
    assert int(resp.getheader("Retry-After")) > 0
    # Another address is not affected.
    assert login(broker, PASSWORD, source="127.0.0.3")[0] == 200
    assert login(broker, PASSWORD, source="127.0.0.3", user="nobody@example.com")[0] == 401
    log = broker.log_text()
    assert "login refused for ops@example.com from 127.0.0.2: wrong user name or password" in log
    assert "login refused for ops@example.com from 127.0.0.2: too many failed logins" in log
    assert PASSWORD not in log and "wrong\n" not in log


def test_the_static_token_still_works_beside_login(broker_factory):
    broker = broker_factory(env=admin_env(SECURITY_ADMIN_TOKEN="s3rvice"))
    status, me, _ = call(broker, "GET", "/api/auth/user", token="s3rvice")
    assert status == 200 and me == {"username": None, "authority": "SYS_ADMIN",
                                    "serviceAccount": True, "expiresAt": None}
    assert login(broker)[0] == 200


def test_tokens_and_the_first_admin_survive_a_restart(broker_factory):
    """The generated signing key is kept in the metadata store, and the first admin is made
    only while there is none: a changed SECURITY_ADMIN_PASSWORD does not reset a password."""
    broker = broker_factory(env=admin_env())
    status, pair, _ = login(broker)
    assert status == 200
    broker.stop()
    broker.extra_env["SECURITY_ADMIN_PASSWORD"] = "another-one"
    broker.start()
    assert call(broker, "GET", "/api/app/log-level", token=pair["token"])[0] == 200
    assert call(broker, "POST", "/api/auth/token", {"refreshToken": pair["refreshToken"]})[0] == 200
    assert login(broker, "another-one")[0] == 401
    assert login(broker)[0] == 200


def test_a_short_signing_key_fails_start_up_naming_the_key(broker_factory):
    broker = broker_factory(env=admin_env(JWT_TOKEN_SIGNING_KEY="too-short"), start=False)
    with pytest.raises(BrokerError):
        broker.start()
    assert "security.jwt.token-signing-key" in broker.log_text()
    assert "shorter than 32 bytes" in broker.log_text()


@requires_services
@pytest.mark.timeout(240)
def test_a_token_from_one_node_opens_every_node(broker_factory):
    """The key generated by the first node is in PostgreSQL; the second uses it."""
    a, b = start_nodes(broker_factory, 2, **admin_env())
    status, pair, _ = login(a)
    assert status == 200, pair
    assert call(b, "GET", "/api/app/log-level", token=pair["token"])[0] == 200
    assert call(b, "POST", "/api/auth/token", {"refreshToken": pair["refreshToken"]})[0] == 200
    assert login(b)[0] == 200
