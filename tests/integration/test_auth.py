"""Authentication and authorization (issue 6 §2-3): MQTT_BASIC credentials from the YAML
configuration, anonymous access, topic rules, blocked clients, the unauthorized-client log.

starlingd only: the credentials, rules and blocked clients come from starlingd's YAML."""

from __future__ import annotations

import sqlite3

import pytest

from starling_it import codec, rest
from starling_it.brokers import REPO_ROOT, make_broker

pytestmark = pytest.mark.starlingd_only(reason="starlingd's security configuration")

CREDENTIALS = """\
    credentials:
      - name: alice
        credentials-type: MQTT_BASIC
        username: alice
        password: alice-pw
        pub: ["it/acl/allowed/.*"]
        sub: ["it/acl/allowed/.*"]
      - name: watcher
        type: APPLICATION
        credentials-type: MQTT_BASIC
        username: watcher
        password: "${WATCHER_PASSWORD:watcher-pw}"
      - name: device by client id
        credentials-type: MQTT_BASIC
        client-id: dev-by-id
        password: dev-pw
      - name: mixed
        credentials-type: MQTT_BASIC
        client-id: mixed-dev
        username: mixed-user
        password: mixed-pw
"""

BLOCKED = """\
    blocked-clients:
      - type: CLIENT_ID
        value: blocked-dev
        description: blocked in test_auth
      - type: USERNAME
        value: blocked-user
"""

BAD_CREDENTIALS = {codec.MQTT5: 0x86, codec.MQTT311: 0x04}
NOT_AUTHORIZED = {codec.MQTT5: 0x87, codec.MQTT311: 0x05}
BANNED = {codec.MQTT5: 0x8A, codec.MQTT311: 0x05}


def security_config() -> str:
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    credentials: []\n" in text and "    blocked-clients: []\n" in text
    return text.replace("    credentials: []\n", CREDENTIALS).replace(
        "    blocked-clients: []\n", BLOCKED
    )


def secured_broker(factory, strategy: str = "BOTH"):
    return factory(
        env={
            "SECURITY_MQTT_ALLOW_ANONYMOUS": "false",
            "SECURITY_MQTT_BASIC_AUTH_STRATEGY": strategy,
        },
        config_text=security_config(),
    )


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """One broker with credentials, rules and blocked clients for the module's tests."""
    broker = make_broker(
        tmp_path_factory.mktemp("secured"),
        env={"SECURITY_MQTT_ALLOW_ANONYMOUS": "false"},
        config_text=security_config(),
    )
    broker.start()
    yield broker
    broker.close()


def unauthorized_rows(broker, client_id: str) -> list[tuple]:
    """The unauthorized-client log rows of ``client_id``. The embedded store holds its SQLite
    file exclusively while it runs: stop the broker first (a graceful stop drains the writes)."""
    assert not broker.running, "stop the broker before reading its metadata store"
    db = sqlite3.connect(f"file:{broker.data_dir / 'metadata.db'}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT client_id, ip_address, username, password_provided, reason"
            " FROM unauthorized_client WHERE client_id = ?",
            (client_id,),
        ).fetchall()
    finally:
        db.close()


def dropped_not_authorized(broker) -> float:
    return broker.metrics().get(
        ("droppedMsgs_total", frozenset({("reason", "not_authorized")})), 0.0
    )


# ----------------------------------------------------------------------------- CONNECT


def test_right_password_is_accepted(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    assert conn.connect(uid, username="alice", password="alice-pw").reason_code == 0
    conn.disconnect()


def test_password_from_environment_placeholder(secured, raw_client, uid):
    conn = raw_client(secured, codec.MQTT5)
    assert conn.connect(uid, username="watcher", password="watcher-pw").reason_code == 0
    conn.disconnect()


def test_wrong_password_is_bad_credentials(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    ack = conn.connect(uid, username="alice", password="not-alice-pw")
    assert ack.reason_code == BAD_CREDENTIALS[protocol]
    conn.expect_closed()


def test_unknown_user_is_refused(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    ack = conn.connect(uid, username="mallory", password="whatever")
    assert ack.reason_code == BAD_CREDENTIALS[protocol]


def test_anonymous_is_refused_when_disabled(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    ack = conn.connect(uid)
    assert ack.reason_code == NOT_AUTHORIZED[protocol]
    conn.expect_closed()


def test_anonymous_is_accepted_when_allowed(broker_factory, raw_client, uid):
    broker = broker_factory(env={"SECURITY_MQTT_ALLOW_ANONYMOUS": "true"})
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid).reason_code == 0


def test_client_id_and_mixed_credentials_with_strategy_both(secured, raw_client, protocol):
    conn = raw_client(secured, protocol)
    # 3.1.1 allows a password only with a user name (MQTT-3.1.2-22): any name will do, the
    # client id finds the credentials.
    username = "anyone" if protocol == codec.MQTT311 else None
    assert conn.connect("dev-by-id", username=username, password="dev-pw").reason_code == 0
    conn.disconnect()
    conn = raw_client(secured, protocol)
    ack = conn.connect("mixed-dev", username="mixed-user", password="mixed-pw")
    assert ack.reason_code == 0
    conn.disconnect()
    # mixed credentials belong to that client id only.
    conn = raw_client(secured, protocol)
    ack = conn.connect("other-dev", username="mixed-user", password="mixed-pw")
    assert ack.reason_code == BAD_CREDENTIALS[protocol]


@pytest.mark.parametrize(
    "strategy, accepted, refused",
    [
        ("CLIENT_ID", ("dev-by-id", None, "dev-pw"), ("x-1", "alice", "alice-pw")),
        ("USERNAME", ("x-2", "alice", "alice-pw"), ("dev-by-id", None, "dev-pw")),
    ],
)
def test_auth_strategy_chooses_the_credentials(
    broker_factory, raw_client, strategy, accepted, refused
):
    broker = secured_broker(broker_factory, strategy)
    client_id, username, password = accepted
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(client_id, username=username, password=password).reason_code == 0
    conn.disconnect()
    client_id, username, password = refused
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(client_id, username=username, password=password)
    assert ack.reason_code in (0x86, 0x87), f"{strategy} must not look up {refused}"


def test_blocked_clients_get_banned(secured, raw_client, protocol):
    conn = raw_client(secured, protocol)
    assert conn.connect("blocked-dev", username="alice", password="alice-pw").reason_code == (
        BANNED[protocol]
    )
    conn.expect_closed()
    conn = raw_client(secured, protocol)
    ack = conn.connect(f"some-dev-{protocol}", username="blocked-user", password="x")
    assert ack.reason_code == BANNED[protocol]


def test_refused_clients_are_logged_and_recorded(broker_factory, raw_client, uid):
    broker = secured_broker(broker_factory)
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid, username="alice", password="wrong").reason_code == 0x86
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect("blocked-dev").reason_code == 0x8A
    assert broker.stop() == 0
    rows = unauthorized_rows(broker, uid)
    assert len(rows) == 1, f"no unauthorized-client row for {uid}"
    client_id, ip, username, password_provided, reason = rows[0]
    assert (client_id, ip, username, bool(password_provided)) == (uid, "127.0.0.1", "alice", True)
    assert "wrong password" in reason
    [blocked] = unauthorized_rows(broker, "blocked-dev")
    assert "blocked in test_auth" in blocked[4]
    log = broker.log_text()
    assert f"client refused: id={uid} address=127.0.0.1:" in log
    assert "client refused: id=blocked-dev" in log


def test_will_on_a_denied_topic_refuses_the_connect(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    will = codec.Will(topic="it/acl/denied/will", payload=b"bye")
    ack = conn.connect(uid, username="alice", password="alice-pw", will=will)
    assert ack.reason_code == NOT_AUTHORIZED[protocol]


# ----------------------------------------------------------------------------- topics


def test_publish_to_a_denied_topic(secured, raw_client, protocol, uid):
    watcher = raw_client(secured, codec.MQTT5)
    assert watcher.connect(f"{uid}-w", username="watcher", password="watcher-pw").reason_code == 0
    assert watcher.subscribe("it/acl/#", qos=1).reason_codes == [1]
    before = dropped_not_authorized(secured)

    pub = raw_client(secured, protocol)
    assert pub.connect(uid, username="alice", password="alice-pw").reason_code == 0
    ack = pub.publish(f"it/acl/denied/{uid}", b"no", qos=1)
    if protocol == codec.MQTT5:
        assert ack.reason_code == 0x87
    else:
        # v3 cannot say no: the message is acknowledged (so the client does not resend it
        # forever) and dropped.
        assert ack.packet_id
    pub.publish(f"it/acl/denied/{uid}", b"no", qos=0)
    assert pub.publish(f"it/acl/allowed/{uid}", b"yes", qos=1).reason_code == 0

    got = watcher.expect_publish()
    assert (got.topic, got.payload) == (f"it/acl/allowed/{uid}", b"yes")
    watcher.ack(got)
    watcher.expect_nothing(0.5)
    assert dropped_not_authorized(secured) == before + 2


def test_v3_qos2_publish_to_a_denied_topic_completes(secured, raw_client, uid):
    pub = raw_client(secured, codec.MQTT311)
    assert pub.connect(uid, username="alice", password="alice-pw").reason_code == 0
    comp = pub.publish(f"it/acl/denied/{uid}", b"no", qos=2)
    assert comp.packet_id
    assert pub.is_open()


def test_subscribe_to_a_denied_filter(secured, raw_client, protocol, uid):
    conn = raw_client(secured, protocol)
    assert conn.connect(uid, username="alice", password="alice-pw").reason_code == 0
    denied = 0x87 if protocol == codec.MQTT5 else 0x80
    assert conn.subscribe("it/acl/denied/#", qos=1).reason_codes == [denied]
    assert conn.subscribe(f"it/acl/allowed/{uid}", qos=1).reason_codes == [1]
    assert conn.is_open()


def test_auth_metrics(secured, raw_client, uid):
    conn = raw_client(secured, codec.MQTT5)
    assert conn.connect(uid, username="alice", password="nope-nope").reason_code == 0x86
    metrics = secured.metrics()
    failures = sum(
        v
        for (name, labels), v in metrics.items()
        if name == "authFailures_total" and ("provider", "MQTT_BASIC") in labels
    )
    assert failures >= 1
    assert metrics.get(("authLatency_seconds_count", frozenset()), 0) >= 1


# ----------------------------------------------------------------------------- REST API


def api(broker, method: str, path: str, body=None, token: str | None = "t0ken"):
    """Calls the credentials REST API; returns (status, parsed JSON body), the answer checked
    against docs/openapi.json (starling_it.rest)."""
    return rest.call(broker, method, path, token, body)


def test_credentials_rest_api(broker_factory, raw_client, uid):
    broker = broker_factory(
        env={"SECURITY_MQTT_ALLOW_ANONYMOUS": "false", "SECURITY_ADMIN_TOKEN": "t0ken"}
    )
    path = "/api/mqtt/client/credentials"
    assert api(broker, "GET", path, token=None)[0] == 401
    assert api(broker, "GET", path, token="wrong")[0] == 401
    assert api(broker, "POST", path, {"clientType": "DEVICE"})[0] == 400  # no name
    # Members of the wrong JSON type are a 400 naming the member, never a 500.
    for body, member in (
        ({"name": 1, "credentialsType": "MQTT_BASIC"}, "name"),
        ({"name": "n", "clientType": True}, "clientType"),
        (
            {
                "name": "n",
                "credentialsType": "X_509",
                "credentialsValue": {"certCnPattern": "gw", "certCnIsRegex": "gw-[0-9]+"},
            },
            "certCnIsRegex",
        ),
    ):
        status, answer = api(broker, "POST", path, body)
        assert status == 400 and member in answer["message"], (body, answer)

    status, saved = api(
        broker,
        "POST",
        path,
        {
            "name": "rest",
            "clientType": "DEVICE",
            "credentialsType": "MQTT_BASIC",
            "credentialsValue": '{"userName": "rest-user", "password": "rest-pw",'
            ' "authRules": {"pubAuthRulePatterns": ["rest/.*"]}}',
        },
    )
    assert status == 200, saved
    assert saved["credentialsId"] == "username|rest-user"
    assert saved["credentialsValue"]["password"] == "***"

    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid, username="rest-user", password="rest-pw").reason_code == 0
    assert conn.publish("rest/ok", b"x", qos=1).reason_code == 0
    assert conn.publish("other", b"x", qos=1).reason_code == 0x87
    conn.disconnect()

    status, page = api(broker, "GET", f"{path}?pageSize=10&page=0")
    assert status == 200
    assert [c["credentialsId"] for c in page["data"]] == ["username|rest-user"]
    assert page["hasNext"] is False and page["totalElements"] == 1 and page["totalPages"] == 1

    status, _ = api(broker, "DELETE", f"{path}/username%7Crest-user")
    assert status == 200
    # The change applies at once: the authentication cache was cleared.
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(uid, username="rest-user", password="rest-pw").reason_code == 0x86


def test_credentials_are_read_paged_updated_and_imported_in_bulk(broker_factory, raw_client, uid):
    """The rest of /api/mqtt/client/credentials: the stored row in every answer, PageData with
    totals, one by id (a '+' in it stays a '+'), a password change, 404 for what is absent, and
    bulk import from CSV and JSON with per-line errors — each change checked by a CONNECT."""
    broker = broker_factory(
        env={"SECURITY_MQTT_ALLOW_ANONYMOUS": "false", "SECURITY_ADMIN_TOKEN": "t0ken"}
    )
    path = "/api/mqtt/client/credentials"
    body = {"name": "plus", "credentialsType": "MQTT_BASIC",
            "credentialsValue": {"userName": "a+b", "password": "pw-1"}}
    status, made = api(broker, "POST", path, body)
    assert status == 200 and len(made["id"]) == 36 and made["createdTime"] > 0, made
    status, again = api(broker, "POST", path, {**body, "name": "plus, renamed"})
    assert status == 200 and again["id"] == made["id"], "an update keeps the row's id"
    assert again["createdTime"] == made["createdTime"] and again["name"] == "plus, renamed"

    one = f"{path}/username%7Ca+b"
    status, got = api(broker, "GET", one)
    assert status == 200 and got["credentialsId"] == "username|a+b", got
    assert api(broker, "GET", f"{path}/username%7Cnobody")[0] == 404
    assert api(broker, "POST", f"{path}/username%7Cnobody", {"newPassword": "x"})[0] == 404
    assert api(broker, "POST", one, {"password": "x"})[0] == 400

    status, changed = api(broker, "POST", one, {"newPassword": "pw-2"})
    assert status == 200 and changed["credentialsValue"]["password"] == "***", changed
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-1", username="a+b", password="pw-1").reason_code == 0x86
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-2", username="a+b", password="pw-2").reason_code == 0
    conn.disconnect()

    # A row read, edited and sent back as it is shown ("***" for the password) keeps its
    # password; "***" for credentials with no password (or none stored) is refused.
    edited = {**got, "name": "plus, edited"}
    edited["credentialsValue"] = {**changed["credentialsValue"],
                                  "authRules": {"pubAuthRulePatterns": ["edited/.*"]}}
    status, saved = api(broker, "POST", path, edited)
    assert status == 200 and saved["name"] == "plus, edited", saved
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-2b", username="a+b", password="pw-2").reason_code == 0
    assert conn.publish("edited/x", b"x", qos=1).reason_code == 0
    assert conn.publish("other/x", b"x", qos=1).reason_code == 0x87
    conn.disconnect()
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-2c", username="a+b", password="***").reason_code == 0x86
    status, refused = api(broker, "POST", path, {
        "name": "new", "credentialsType": "MQTT_BASIC",
        "credentialsValue": {"userName": f"{uid}-nobody", "password": "***"}})
    assert status == 400 and "keeps the stored password" in refused["message"], refused

    csv = (
        "name,credentialsType,userName,password,pubAuthRulePatterns\r\n"
        'bulk-1,MQTT_BASIC,bulk-1,pw,"bulk/1/.*;alarms/.*"\r\n'
        "bulk-2,MQTT_BASIC,bulk-2,pw,\r\n"
        "broken,NOPE,x,pw,\r\n"
    )
    status, report = import_csv(broker, f"{path}/bulk_import", csv)
    assert status == 200, report
    assert (report["total"], report["saved"], report["failed"]) == (3, 2, 1), report
    assert [e["line"] for e in report["errors"]] == [4], report
    conn = raw_client(broker, codec.MQTT5)
    assert conn.connect(f"{uid}-3", username="bulk-1", password="pw").reason_code == 0
    assert conn.publish("alarms/x", b"x", qos=1).reason_code == 0
    assert conn.publish("bulk/2/x", b"x", qos=1).reason_code == 0x87
    conn.disconnect()
    status, report = api(broker, "POST", f"{path}/bulk_import",
                         [{"name": "json-1", "credentialsType": "MQTT_BASIC",
                           "credentialsValue": {"userName": "json-1", "password": "pw"}},
                          {"credentialsType": "MQTT_BASIC"}])
    assert status == 200 and report["saved"] == 1 and report["errors"][0]["line"] == 2, report
    assert import_csv(broker, f"{path}/bulk_import", "name,colour\r\nx,red\r\n")[0] == 400
    assert import_csv(broker, f"{path}/bulk_import", 'name\r\n"open\r\n')[0] == 400

    status, page = api(broker, "GET", f"{path}?pageSize=2&page=1")
    assert status == 200, page
    assert page["totalElements"] == 4 and page["totalPages"] == 2 and page["hasNext"] is False
    assert len(page["data"]) == 2
    for bad in ("pageSize=0", "pageSize=many", "page=-1"):
        status, answer = api(broker, "GET", f"{path}?{bad}")
        assert status == 400 and answer["message"].startswith(bad.split("=")[0]), (bad, answer)

    assert api(broker, "DELETE", one)[0] == 200
    assert api(broker, "DELETE", one)[0] == 404


def import_csv(broker, path: str, text: str):
    return rest.call(broker, "POST", path, "t0ken", text, content_type="text/csv")


def test_rest_api_is_off_without_any_admin_credentials(broker_factory):
    """No static token and admin login turned off: nobody could call /api, so no route exists
    (404), rather than routes that refuse everyone."""
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert api(broker, "GET", "/api/mqtt/client/credentials")[0] == 404


def test_rest_api_needs_a_token_by_default(broker):
    """Admin login is on by default, so /api exists, and refuses a call without a token."""
    assert api(broker, "GET", "/api/mqtt/client/credentials", token=None)[0] == 401


def test_blocked_client_rest_api_blocks_unblocks_and_keeps_rules(broker_factory, paho_client, uid):
    """/api/blockedClient (TBMQ's paths and shapes): a rule refuses the next CONNECT at once,
    survives a restart (client.blocked), and its removal lets the client in again — checked
    with paho-mqtt, whose CONNACK reason the broker did not write for itself."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": "t0ken"})
    path = "/api/blockedClient"
    assert api(broker, "GET", path, token=None)[0] == 401
    assert api(broker, "POST", path, {"type": "CLIENT_ID", "value": uid}, token="wrong")[0] == 401
    status, rule = api(
        broker,
        "POST",
        path,
        {"type": "CLIENT_ID", "value": uid, "expirationTime": 0, "description": "by the test"},
    )
    assert status == 200 and rule["value"] == uid, rule
    status, page = api(broker, "GET", f"{path}?pageSize=10&page=0")
    assert status == 200 and [r["value"] for r in page["data"]] == [uid]

    refused = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert refused.connect(expect_success=False).reason_code == 0x8A  # Banned

    broker.restart()
    refused = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert refused.connect(expect_success=False).reason_code == 0x8A, "rule lost in a restart"

    assert api(broker, "DELETE", f"{path}?type=CLIENT_ID&value={uid}")[0] == 200
    assert api(broker, "DELETE", f"{path}?type=CLIENT_ID&value={uid}")[0] == 404
    allowed = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert allowed.connect().reason_code == 0
    broker.restart()
    allowed = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert allowed.connect().reason_code == 0, "the removal was lost in a restart"
