"""starlingctl (tools/starlingctl), the command line over the management REST API, run as a
subprocess against a real starlingd: its login and config file, what each command sends and
prints, and its exit codes (0 ok, 1 the node answered an error, 2 usage or no node). The
effects are checked from the MQTT side with paho-mqtt where there is one (a kicked client gets
DISCONNECT 0x98, a banned one CONNACK 0x8A, a published message arrives)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from starling_it.client import persistent
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="starlingctl drives starlingd's API")

SCRIPT = Path(__file__).resolve().parents[2] / "tools/starlingctl/starlingctl"
TOKEN = "ctl-t0ken"
ADMINISTRATIVE_ACTION = 0x98
BANNED = 0x8A


class Ctl:
    """Runs starlingctl with its own config file (under tmp_path) and environment."""

    def __init__(self, tmp_path: Path) -> None:
        self.config = tmp_path / "ctl" / "config.json"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("STARLING_URL", "STARLING_TOKEN", "XDG_CONFIG_HOME")}
        self.env["STARLINGCTL_CONFIG"] = str(self.config)

    def use(self, broker, token: str = TOKEN) -> Ctl:
        """Points at `broker` through the environment (the config file stays empty)."""
        self.env["STARLING_URL"] = url(broker)
        self.env["STARLING_TOKEN"] = token
        return self

    def run(self, *args: str, rc: int | None = 0) -> subprocess.CompletedProcess:
        """The finished process; its exit code must be `rc` unless that is None."""
        done = subprocess.run([sys.executable, str(SCRIPT), *args], env=self.env, check=False,
                              capture_output=True, text=True, timeout=30)
        if rc is not None:
            assert done.returncode == rc, (args, done.returncode, done.stdout, done.stderr)
        return done

    def json(self, *args: str):
        return json.loads(self.run(*args, "--json").stdout)

    def fails(self, *args: str, rc: int = 1) -> str:
        """stderr of a run that must exit with `rc`."""
        return self.run(*args, rc=rc).stderr


@pytest.fixture
def ctl(tmp_path) -> Ctl:
    return Ctl(tmp_path)


def url(broker) -> str:
    return f"http://{broker.host}:{broker.http_port}"


def api_broker(broker_factory, **env: str):
    return broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN, **env})


def row_of(output: str, first_cell: str) -> list[str]:
    """The cells of the table row that starts with `first_cell`."""
    for line in output.splitlines():
        cells = line.split()
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row for {first_cell} in:\n{output}")


def test_login_saves_a_private_config_and_logout_deletes_it(broker_factory, ctl):
    broker = api_broker(broker_factory)
    err = ctl.fails("login", "--url", url(broker), "--token", "nope")
    assert "wrong token" in err
    assert not ctl.config.exists()

    out = ctl.run("login", "--url", url(broker), "--token", TOKEN).stdout
    assert str(ctl.config) in out
    assert stat.S_IMODE(ctl.config.stat().st_mode) == 0o600
    assert stat.S_IMODE(ctl.config.parent.stat().st_mode) == 0o700, "the directory it made"
    assert json.loads(ctl.config.read_text()) == {"url": url(broker), "token": TOKEN}

    # The saved URL and token are used when neither flags nor environment give them...
    assert "data" in ctl.json("sessions", "ls")
    # ...the saved token goes to the saved URL only, never to another one...
    assert "no node token configured" in ctl.fails("sessions", "ls", "--url",
                                                   "http://127.0.0.1:1", rc=2)
    # ...and the environment wins over the file, the command line over both.
    ctl.env["STARLING_TOKEN"] = "wrong"
    assert "(HTTP 401)" in ctl.fails("sessions", "ls")
    assert "data" in ctl.json("sessions", "ls", "--token", TOKEN)
    del ctl.env["STARLING_TOKEN"]

    ctl.run("logout")
    assert not ctl.config.exists()
    assert "starlingctl login" in ctl.fails("sessions", "ls", rc=2)


def test_login_with_a_password_saves_tokens_and_refreshes_them(broker_factory, ctl):
    """`login --username`: the password from STARLING_PASSWORD or --password-stdin, the pair
    saved; an access token the node refuses (here: replaced by junk, as an expired one) is
    renewed with the refresh token, and the new pair saved."""
    broker = broker_factory(env={"SECURITY_ADMIN_USERNAME": "ops",
                                 "SECURITY_ADMIN_PASSWORD": "s3cret-pw"})
    ctl.env["STARLING_PASSWORD"] = "wrong"
    assert "wrong user name or password" in ctl.fails("login", "--url", url(broker),
                                                      "--username", "ops")
    assert not ctl.config.exists()
    ctl.env["STARLING_PASSWORD"] = "s3cret-pw"
    ctl.run("login", "--url", url(broker), "--username", "ops")
    saved = json.loads(ctl.config.read_text())
    assert saved["url"] == url(broker) and saved["token"] and saved["refreshToken"]
    assert stat.S_IMODE(ctl.config.stat().st_mode) == 0o600
    assert "data" in ctl.json("sessions", "ls")

    del ctl.env["STARLING_PASSWORD"]
    done = subprocess.run([sys.executable, str(SCRIPT), "login", "--url", url(broker),
                           "--username", "ops", "--password-stdin"], env=ctl.env, check=False,
                          input="s3cret-pw\n", capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr

    stale = json.loads(ctl.config.read_text())
    ctl.config.write_text(json.dumps({**stale, "token": "expired.junk.token"}))
    assert "data" in ctl.json("sessions", "ls")
    renewed = json.loads(ctl.config.read_text())
    assert renewed["token"] not in ("expired.junk.token", stale["token"])
    assert renewed["refreshToken"] != stale["refreshToken"]

    # A refresh token the node refuses too: told to log in again.
    ctl.config.write_text(json.dumps({**renewed, "token": "x.y.z", "refreshToken": "x.y.z"}))
    assert "the saved login expired" in ctl.fails("sessions", "ls")


def test_login_to_a_node_without_an_admin_token(broker_factory, ctl):
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    err = ctl.fails("login", "--url", url(broker), "--token", TOKEN)
    assert "no admin token" in err and "security.admin-token" in err
    assert not ctl.config.exists()


def test_sessions_listed_shown_kicked_and_removed(broker_factory, paho_client, ctl, uid):
    broker = api_broker(broker_factory)
    ctl.use(broker)
    dev_id, app_id = f"{uid}-dev", f"{uid}-other"
    dev = paho_client(broker, dev_id, protocol=5, **persistent(5))
    dev.subscribe(f"{uid}/dev/#", qos=1)
    paho_client(broker, app_id, protocol=4)

    out = ctl.run("sessions", "ls").stdout
    assert out.splitlines()[0].split()[:3] == ["CLIENT", "ID", "STATE"]
    dev_row = row_of(out, dev_id)
    assert dev_row[1:3] == ["CONNECTED", "DEVICE"] and "5.0" in dev_row
    assert row_of(out, app_id)[1] == "CONNECTED" and "3.1.1" in row_of(out, app_id)
    assert dev_row[-1].endswith("Z"), "SINCE is an ISO-8601 UTC time"

    page = ctl.json("sessions", "ls", "--search", uid)
    assert [s["clientId"] for s in page["data"]] == [dev_id, app_id]
    page = ctl.json("sessions", "ls", "--search", uid, "--sort", "clientId", "--desc")
    assert [s["clientId"] for s in page["data"]] == [app_id, dev_id]
    page = ctl.json("sessions", "ls", "--search", uid, "--page-size", "1", "--all")
    assert [s["clientId"] for s in page["data"]] == [dev_id, app_id]
    assert ctl.json("sessions", "ls", "--disconnected")["data"] == []

    details = ctl.json("sessions", "show", dev_id)
    assert [x["topicFilter"] for x in details["subscriptions"]] == [f"{uid}/dev/#"]
    out = ctl.run("sessions", "show", dev_id).stdout
    assert f"{uid}/dev/#" in out and "AT_LEAST_ONCE" in out

    # A connected session is not removed; the API's 409 is exit 1 with its message.
    assert "disconnect the client first (HTTP 409)" in ctl.fails("sessions", "rm", dev_id)
    assert "no such session (HTTP 404)" in ctl.fails("sessions", "kick", dev_id,
                                                     "--session", "not-its-session")
    assert dev_id in ctl.run("sessions", "kick", dev_id).stdout
    info = dev.wait_for_disconnect()
    assert info.from_server and info.reason_code == ADMINISTRATIVE_ACTION
    wait_for(lambda: [s["clientId"] for s in ctl.json("sessions", "ls", "--disconnected")["data"]]
             == [dev_id], what="the session to go offline")

    ctl.run("sessions", "rm", dev_id)
    wait_for(lambda: ctl.run("sessions", "show", dev_id, rc=None).returncode == 1,
             what="the session to go")
    assert "no such session (HTTP 404)" in ctl.fails("sessions", "show", dev_id)


def test_retained_listed_read_and_deleted(broker_factory, paho_client, ctl, uid):
    broker = api_broker(broker_factory)
    ctl.use(broker)
    topic = f"{uid}/plant/t1"
    long_payload = "x" * 100
    pub = paho_client(broker, protocol=5)
    pub.publish_and_wait(topic, b"21.5", qos=1, retain=True,
                         properties={"user_property": [("unit", "C")]})
    pub.publish_and_wait(f"{uid}/plant/long", long_payload.encode(), qos=0, retain=True)

    out = ctl.run("retained", "ls", "--filter", f"{uid}/#").stdout
    assert row_of(out, topic)[1] == "1" and row_of(out, topic)[-1] == "21.5"
    long_cell = row_of(out, f"{uid}/plant/long")[-1]
    assert len(long_cell) == 40 and long_cell.endswith("..."), "payloads cut to 40 characters"
    page = ctl.json("retained", "ls", "--filter", f"{uid}/+/t1")
    assert [m["topic"] for m in page["data"]] == [topic]
    assert ctl.json("retained", "ls", "--search", "NO-SUCH-TOPIC")["data"] == []

    msg = ctl.json("retained", "get", topic)
    assert msg["payload"] == "21.5" and msg["userProperties"] == {"props": [{"k": "unit",
                                                                            "v": "C"}]}
    out = ctl.run("retained", "get", topic).stdout
    assert "21.5" in out and "unit=C" in out

    ctl.run("retained", "rm", topic)
    assert "(HTTP 404)" in ctl.fails("retained", "get", topic)
    assert "(HTTP 404)" in ctl.fails("retained", "rm", topic)
    assert [m["topic"] for m in ctl.json("retained", "ls", "--filter", f"{uid}/#")["data"]] == [
        f"{uid}/plant/long"]


def test_ban_refuses_the_client_until_unban(broker_factory, paho_client, ctl, uid):
    broker = api_broker(broker_factory)
    ctl.use(broker)
    before = time.time() * 1000
    out = ctl.run("ban", "client", uid, "--ttl", "1h", "--description", "x").stdout
    assert uid in out and "until" in out

    refused = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert refused.connect(expect_success=False).reason_code == BANNED

    rules = ctl.json("bans", "ls")["data"]
    assert len(rules) == 1, rules
    rule = rules[0]
    assert (rule["type"], rule["value"], rule["description"]) == ("CLIENT_ID", uid, "x")
    hour = 3600 * 1000
    assert before + hour - 60_000 <= rule["expirationTime"] <= time.time() * 1000 + hour + 60_000
    assert row_of(ctl.run("bans", "ls", "--all").stdout, "CLIENT_ID")[1] == uid

    # A regex rule needs what it is matched against; it never expires without --ttl.
    ctl.fails("ban", "regex", f"^{uid}-.*", rc=2)
    ctl.fails("ban", "client", uid, "--ttl", "soon", rc=2)
    rule = ctl.json("ban", "regex", f"^{uid}-re.*", "--target", "username")
    assert rule["regexMatchTarget"] == "BY_USERNAME" and rule["expirationTime"] == 0
    ctl.run("unban", "regex", f"^{uid}-re.*")

    ctl.run("unban", "client", uid)
    assert "(HTTP 404)" in ctl.fails("unban", "client", uid)
    assert ctl.json("bans", "ls")["data"] == []
    allowed = paho_client(broker, client_id=uid, protocol=5, connect=False)
    assert allowed.connect().reason_code == 0


def test_unauthorized_listed_removed_and_cleared(broker_factory, paho_client, ctl, uid):
    broker = api_broker(broker_factory, SECURITY_MQTT_ALLOW_ANONYMOUS="false")
    ctl.use(broker)
    ids = [f"{uid}/gw+1", f"{uid}/gw+2"]  # '/' and '+' must survive the path encoding
    for client_id in ids:
        c = paho_client(broker, client_id=client_id, protocol=5, connect=False,
                        username="mallory", password="pw")
        assert c.connect(expect_success=False).reason_code != 0
    # Rows are written after the CONNACK. This test's uid starts with '-' (pytest's name for
    # it is cut from the left), so values are passed as --search=VALUE and after `--`, as the
    # README says to do for any value that starts with '-'.
    assert uid.startswith("-")
    search = f"--search={uid}"
    wait_for(lambda: len(ctl.json("unauthorized", "ls", search)["data"]) == 2,
             what="both refusals in the log")
    out = ctl.run("unauthorized", "ls", search).stdout
    assert "mallory" in row_of(out, ids[0])

    ctl.run("unauthorized", "rm", "--", ids[0])
    assert [r["clientId"] for r in ctl.json("unauthorized", "ls", "--all")["data"]] == [ids[1]]
    assert "(HTTP 404)" in ctl.fails("unauthorized", "rm", "--", ids[0])
    assert "removed 1 rows" in ctl.run("unauthorized", "clear").stdout
    assert ctl.json("unauthorized", "ls")["data"] == []


def test_log_level_read_and_set(broker_factory, ctl):
    broker = api_broker(broker_factory, STARLING_LOG_LEVEL="info")
    ctl.use(broker)
    assert ctl.run("log-level", "debug").stdout.strip() == "debug (was info)"
    assert ctl.run("log-level").stdout.strip() == "debug"
    assert ctl.json("log-level")["level"] == "debug"
    assert ctl.json("log-level", "info") == {"level": "info", "previous": "debug"}
    assert ctl.run("log-level").stdout.strip() == "info"
    assert "level: unknown level" in ctl.fails("log-level", "loud")


def test_errors_and_exit_codes(broker_factory, ctl):
    broker = api_broker(broker_factory)
    err = ctl.fails("--url", "http://127.0.0.1:1", "--token", TOKEN, "sessions", "ls", rc=2)
    assert "cannot reach http://127.0.0.1:1" in err and "connection refused" in err
    ctl.use(broker)
    err = ctl.fails("sessions", "ls", "--sort", "nope")
    assert err.startswith("starlingctl: sortProperty: ") and err.rstrip().endswith("(HTTP 400)")
    assert "(HTTP 401)" in ctl.fails("sessions", "ls", "--token", "wrong")
    # Usage errors are argparse's: exit 2 before any call.
    ctl.fails("sessions", "ls", "--connected", "--disconnected", rc=2)
    ctl.fails("sessions", "ls", "--page-size", "0", rc=2)
    ctl.fails("no-such-command", rc=2)
    # --url after the command works as well as before it.
    ctl.fails("sessions", "ls", "--url", "http://127.0.0.1:1", rc=2)


def test_publish_reaches_a_subscriber(broker_factory, paho_client, ctl, uid, tmp_path):
    broker = api_broker(broker_factory)
    ctl.use(broker)
    sub = paho_client(broker, protocol=5)
    sub.subscribe(f"{uid}/#", qos=1)

    ctl.run("publish", f"{uid}/text", "hello", "--qos", "1", "--user-property", "unit=C",
            "--content-type", "text/plain", "--expiry", "60")
    msg = sub.expect_message(timeout=10)
    assert (msg.topic, msg.payload, msg.qos) == (f"{uid}/text", b"hello", 1)
    assert ("unit", "C") in msg.properties.get("user_property", [])
    assert msg.properties.get("content_type") == "text/plain"

    blob = bytes(range(256)) * 4
    path = tmp_path / "blob.bin"
    path.write_bytes(blob)
    ctl.run("publish", f"{uid}/bin", "--file", str(path), "--qos", "1")
    msg = sub.expect_message(timeout=10)
    assert msg.topic == f"{uid}/bin" and msg.payload == blob, "byte-exact"

    ctl.fails("publish", f"{uid}/x", "--user-property", "no-equals-sign", rc=2)


def test_cluster_lists_the_single_node(broker_factory, paho_client, ctl):
    broker = api_broker(broker_factory)
    ctl.use(broker)
    paho_client(broker, protocol=5)
    info = ctl.json("cluster")
    assert len(info["nodes"]) == 1 and info["nodes"][0]["self"] is True
    node = info["nodes"][0]
    assert node["health"] == "UP" and node["sessions"] >= 1
    out = ctl.run("cluster").stdout
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["NODE", "VERSION", "HEALTH"]
    assert "UP" in lines[1].split() and lines[1].split()[0] == node["nodeId"]
