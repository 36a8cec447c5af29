"""The admin console (ui/, served by starlingd at /) in a real headless Chromium, driven by
Playwright: log in (and be refused with a wrong password), find a connected paho client and
kick it (it gets DISCONNECT 0x98), create credentials and connect with them (and be refused
with another password), delete a retained message (a new subscriber no longer gets it), and
keep working across an expired access token, until the refresh token is refused too.

The WebSocket client page connects to the broker's WebSocket listener from the browser; what
it publishes reaches a mosquitto_sub, and what a paho client publishes shows up on the page.

Chromium is Debian's (`chromium`, installed by scripts/install-deps.sh); Playwright's own
browser download is not used. With STARLING_UI_SCREENSHOTS=<folder>, each page is saved there
as a PNG (docs/ui.md shows them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.parse
import uuid
from pathlib import Path

import pytest
from playwright import sync_api as playwright_api
from playwright.sync_api import expect

from starling_it import rest
from test_hostile_connections import wait_for

pytestmark = pytest.mark.starlingd_only(reason="the console is starlingd's")


USER = "console@example.com"
PASSWORD = "c0nsole-pass"
TOKEN = "console-token"
ADMINISTRATIVE_ACTION = 0x98
NOT_AUTHORIZED = (0x86, 0x87)  # bad user name or password, not authorized
NOT_AUTHORIZED_PUBACK = 0x87


def console_env(**extra: str) -> dict[str, str]:
    return {"SECURITY_ADMIN_USERNAME": USER, "SECURITY_ADMIN_PASSWORD": PASSWORD,
            "SECURITY_ADMIN_TOKEN": TOKEN, **extra}


@pytest.fixture(scope="module")
def chromium():
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    assert executable, "Debian's chromium is not installed: run scripts/install-deps.sh"
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable,
                                    args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


@pytest.fixture
def page(chromium, tmp_path):
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # Console errors other than the browser's note of an HTTP error status (a refused login
    # is one, on purpose).
    page.on("console", lambda m: errors.append(m.text) if m.type == "error"
            and not m.text.startswith("Failed to load resource") else None)
    yield page
    # What the page showed last, for a failure's report (the test's folder is kept by pytest).
    page.screenshot(path=str(tmp_path / "last-page.png"), full_page=True)
    print(f"last page: {tmp_path / 'last-page.png'}; toasts: {page.locator('#toasts').inner_text()!r}")
    context.close()
    assert not errors, f"the page threw: {errors}"


def screenshot(page, name: str) -> None:
    folder = os.environ.get("STARLING_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def url(broker, fragment: str = "") -> str:
    return f"http://{broker.host}:{broker.http_port}/{fragment}"


def subscriptions_of(broker, client_id: str) -> int | None:
    """The session's subscription count (GET /api/client-session), None while there is none."""
    status, body = rest.call(broker, "GET", "/api/client-session?clientId="
                             + urllib.parse.quote(client_id, safe=""), TOKEN)
    assert status in (200, 404), body
    return body["subscriptionsCount"] if status == 200 else None


def log_in(page, broker, password: str = PASSWORD) -> None:
    page.goto(url(broker))
    page.get_by_label("User name", exact=True).fill(USER)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Log in").click()


def go(page, name: str) -> None:
    """Follows a link of the navigation bar."""
    page.get_by_role("navigation").get_by_role("link", name=name, exact=True).click()


def confirm(page, label: str) -> None:
    page.locator("dialog").last.get_by_role("button", name=label).click()


def test_log_in_kick_a_client_add_credentials_and_delete_a_retained_message(
        broker_factory, paho_client, page):
    broker = broker_factory(env=console_env(SECURITY_MQTT_ALLOW_ANONYMOUS="false"))
    uid = uuid.uuid4().hex[:8]

    # The login page first; a wrong password is refused and says so.
    log_in(page, broker, password="wrong")
    page.get_by_role("alert").filter(has_text="Wrong user name or password").wait_for()
    assert "#/login" in page.url
    screenshot(page, "login")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Cluster").wait_for()
    page.locator("td").filter(has_text="UP").first.wait_for()
    assert page.get_by_text(USER).is_visible(), "the user's name is shown"

    # Credentials made in the console let a client in; another password does not.
    go(page, "Credentials")
    page.get_by_role("button", name="New credentials").click()
    form = page.locator("dialog")
    form.get_by_label("Name", exact=True).fill(f"ui device {uid}")
    form.get_by_label("User name", exact=True).fill(f"user-{uid}")
    form.get_by_label("Password", exact=True).fill("device-pw")
    form.get_by_label("May publish to (regular expressions)", exact=True).fill(f"{uid}/.*")
    screenshot(page, "credentials-new")
    form.get_by_role("button", name="Save").click()
    page.get_by_role("cell", name=f"ui device {uid}", exact=True).wait_for()
    screenshot(page, "credentials")

    refused = paho_client(broker, f"intruder-{uid}", connect=False, username=f"user-{uid}",
                          password="not-it")
    assert refused.connect(expect_success=False).reason_code in NOT_AUTHORIZED
    victim = paho_client(broker, f"victim-{uid}", username=f"user-{uid}", password="device-pw")
    victim.subscribe(f"{uid}/in", qos=1)

    # A retained message, browsed and deleted in the console.
    victim.publish_and_wait(f"{uid}/state", b'{"on": true}', qos=1, retain=True)

    # Find the client, open its session, disconnect it.
    go(page, "Sessions")
    page.get_by_label("Search by client id", exact=True).fill(f"victim-{uid}")
    row = page.get_by_role("row", name=f"Session victim-{uid}")
    row.wait_for()
    assert page.get_by_role("row").count() == 2, "the search keeps only that client"
    screenshot(page, "sessions")
    row.click()
    details = page.locator("dialog")
    details.get_by_text(f"{uid}/in").wait_for()
    details.get_by_text("MQTT 5.0").wait_for()
    screenshot(page, "session-details")

    # Its subscriptions edited in the console: a message on the added filter reaches it.
    details.get_by_role("button", name="Edit subscriptions").click()
    editor = page.get_by_label('Subscriptions, one "topic-filter qos" a line', exact=True)
    assert editor.input_value() == f"{uid}/in 1"
    editor.fill(f"{uid}/in 1\n{uid}/extra 1")
    page.locator("dialog").get_by_role("button", name="Save").click()
    page.get_by_text(f"Subscriptions of victim-{uid} saved.").wait_for()
    wait_for(lambda: subscriptions_of(broker, f"victim-{uid}") == 2, what="the new subscription")
    sender = paho_client(broker, f"sender-{uid}", username=f"user-{uid}", password="device-pw")
    sender.publish_and_wait(f"{uid}/extra", b"via the console's subscription", qos=1)
    assert victim.expect_message(timeout=10).payload == b"via the console's subscription"

    row.click()
    details.get_by_role("button", name="Disconnect").click()
    confirm(page, "Disconnect")
    info = victim.wait_for_disconnect()
    assert info.from_server and info.reason_code == ADMINISTRATIVE_ACTION
    page.get_by_text(f"victim-{uid} disconnected.").wait_for()

    go(page, "Retained messages")
    page.get_by_label("Topic filter", exact=True).fill(f"{uid}/#")
    page.get_by_role("button", name="Show").click()
    page.get_by_role("row", name=f"Retained message on {uid}/state").click()
    payload = page.locator("dialog pre")
    page.locator("dialog").get_by_role("tab", name="JSON").click()
    assert payload.inner_text() == '{\n  "on": true\n}'
    page.locator("dialog").get_by_role("tab", name="Hex").click()
    assert payload.inner_text().startswith("000000  7b 22 6f 6e 22")
    screenshot(page, "retained-message")
    page.locator("dialog").get_by_role("button", name="Delete").click()
    confirm(page, "Delete")
    page.get_by_text(f"Deleted the message retained on {uid}/state.").wait_for()
    topic = urllib.parse.quote(f"{uid}/state", safe="")
    wait_for(lambda: rest.call(broker, "GET", f"/api/retained-msg?topicName={topic}", TOKEN)[0]
             == 404, what="the retained message to go")
    late = paho_client(broker, f"late-{uid}", username=f"user-{uid}", password="device-pw")
    late.subscribe(f"{uid}/state", qos=1)
    late.expect_no_message(within=0.5)

    # The credentials edited in the console: new publish rules apply, the password (left empty
    # in the form) is kept.
    go(page, "Credentials")
    page.get_by_role("button", name=f"Edit ui device {uid}").click()
    form = page.locator("dialog")
    assert form.get_by_label("User name", exact=True).input_value() == f"user-{uid}"
    rules = form.get_by_label("May publish to (regular expressions)", exact=True)
    assert rules.input_value() == f"{uid}/.*"
    rules.fill(f"{uid}/only/.*")
    screenshot(page, "credentials-edit")
    form.get_by_role("button", name="Save").click()
    page.get_by_text(f"Saved username|user-{uid}.").nth(1).wait_for()  # the second save
    edited = paho_client(broker, f"edited-{uid}", username=f"user-{uid}", password="device-pw")
    assert edited.publish_and_wait(f"{uid}/only/x", b"allowed", qos=1) < 0x80
    assert edited.publish_and_wait(f"{uid}/state", b"refused", qos=1) == NOT_AUTHORIZED_PUBACK

    # The home page counts what is there.
    go(page, "Home")
    page.locator(".tile").filter(has_text="Credentials").get_by_text("1").wait_for()
    screenshot(page, "home")


def test_an_expired_access_token_is_refreshed_and_a_refused_refresh_logs_out(
        broker_factory, page):
    broker = broker_factory(env=console_env())
    log_in(page, broker)
    page.get_by_role("heading", name="Cluster").wait_for()

    # An access token the server refuses (as an expired one is): the console trades the
    # refresh token for a new pair and the page loads.
    before = page.evaluate("JSON.parse(localStorage.getItem('starling.tokens'))")
    page.evaluate("""() => {
        const t = JSON.parse(localStorage.getItem('starling.tokens'));
        t.token = t.token.slice(0, -4) + 'AAAA';
        localStorage.setItem('starling.tokens', JSON.stringify(t));
    }""")
    page.goto(url(broker, "#/sessions"))
    page.reload()  # a new document reads the stored pair
    page.get_by_role("heading", name="Sessions").wait_for()
    page.get_by_role("button", name="Next ›").wait_for()
    after = page.evaluate("JSON.parse(localStorage.getItem('starling.tokens'))")
    assert after["refreshToken"] != before["refreshToken"], "a new pair was issued"
    assert page.locator(".error").count() == 0

    # Both refused: the session is over, the login page shows and the tokens are gone.
    page.evaluate("""() => localStorage.setItem('starling.tokens',
        JSON.stringify({token: 'x.y.z', refreshToken: 'x.y.z'}))""")
    page.goto(url(broker, "#/credentials"))
    page.reload()
    page.get_by_role("button", name="Log in").wait_for()
    assert page.evaluate("localStorage.getItem('starling.tokens')") is None

    # Logging in again lands where the user was going; logging out ends it.
    page.get_by_label("User name", exact=True).fill(USER)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Credentials").wait_for()
    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Log in").wait_for()
    assert page.evaluate("localStorage.getItem('starling.tokens')") is None


def test_the_console_is_served_only_where_the_api_is(broker_factory, chromium):
    # No admin token and no admin login: no /api, so no console.
    broker = broker_factory(env={"SECURITY_ADMIN_LOGIN_ENABLED": "false"})
    assert broker._get("/api/auth/user")[0] == 404
    assert broker._get("/")[0] == 404
    assert broker._get("/ui/app.js")[0] == 404
    served = broker_factory(env=console_env())
    status, body = served._get("/")
    assert status == 200 and b'<script type="module" src="/ui/app.js">' in body
    status, _ = served._get("/ui/app.js")
    assert status == 200


def test_the_websocket_client_publishes_to_mosquitto_sub_and_shows_what_arrives(
        broker_factory, paho_client, page):
    broker = broker_factory(env=console_env())
    uid = uuid.uuid4().hex[:8]
    mosquitto_sub = shutil.which("mosquitto_sub")
    assert mosquitto_sub, "mosquitto-clients is not installed: run scripts/install-deps.sh"
    sub = subprocess.Popen(
        [mosquitto_sub, "-h", broker.host, "-p", str(broker.port), "-V", "mqttv5",
         "-i", f"mosquitto-sub-{uid}", "-t", f"{uid}/from-console", "-C", "1", "-W", "60",
         "-F", "%t %p %P"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: subscriptions_of(broker, f"mosquitto-sub-{uid}") == 1,
                 what="mosquitto_sub to subscribe")

        log_in(page, broker)
        go(page, "WebSocket client")
        page.get_by_label("Broker URL", exact=True).fill(f"ws://{broker.host}:{broker.ports['ws']}/mqtt")
        page.get_by_label("Client id", exact=True).fill(f"console-{uid}")
        page.get_by_role("button", name="Connect", exact=True).click()
        page.get_by_text("Status: connected (MQTT 5.0").wait_for()

        page.get_by_label("Topic filter", exact=True).fill(f"{uid}/to-console/#")
        page.get_by_label("Subscribe QoS", exact=True).select_option("1")
        page.get_by_role("button", name="Subscribe", exact=True).click()
        page.get_by_text(f"Subscribed to {uid}/to-console/#.").wait_for()

        page.get_by_label("Topic", exact=True).fill(f"{uid}/from-console")
        page.get_by_label("Payload", exact=True).fill("hello from the browser")
        page.get_by_label("Publish QoS", exact=True).select_option("1")
        page.get_by_text("MQTT 5 properties").click()
        page.get_by_label("User properties (one key=value a line)", exact=True).fill("origin=console")
        page.get_by_role("button", name="Publish", exact=True).click()
        out, err = sub.communicate(timeout=30)
        assert sub.returncode == 0, err
        assert out.strip() == f"{uid}/from-console hello from the browser origin:console", out

        # A message from a paho client arrives on the page with its properties.
        pub = paho_client(broker, f"pub-{uid}")
        pub.publish_and_wait(f"{uid}/to-console/a", b'{"t": 21.5}', qos=1,
                             properties={"content_type": "application/json",
                                         "user_property": [("unit", "C")]})
        item = page.locator(".message").filter(has_text=f"{uid}/to-console/a")
        item.wait_for()
        assert item.locator(".payload").inner_text() == '{"t": 21.5}'
        properties = item.locator(".properties").inner_text()
        assert '"contentType":"application/json"' in properties and '"unit":"C"' in properties
        screenshot(page, "ws-client")

        # The console's client is an ordinary session: listed, and kicked like any other.
        assert subscriptions_of(broker, f"console-{uid}") == 1
        page.get_by_role("button", name="Disconnect", exact=True).click()
        page.get_by_text("Status: disconnected").wait_for()
    finally:
        if sub.poll() is None:
            sub.kill()
            sub.wait()


def test_block_a_client_see_it_refused_and_the_other_pages(broker_factory, paho_client, page):
    broker = broker_factory(env=console_env())
    uid = uuid.uuid4().hex[:8]
    log_in(page, broker)
    page.get_by_role("heading", name="Cluster").wait_for()

    # A client blocked by id in the console is refused; it shows among unauthorized clients.
    go(page, "Blocked clients")
    page.get_by_role("button", name="Block a client").click()
    form = page.locator("dialog")
    form.get_by_label("Value", exact=True).fill(f"banned-{uid}")
    form.get_by_label("Description", exact=True).fill("console test")
    form.get_by_role("button", name="Block").click()
    page.get_by_role("cell", name=f"banned-{uid}", exact=True).wait_for()
    screenshot(page, "blocked")
    banned = paho_client(broker, f"banned-{uid}", connect=False)
    assert banned.connect(expect_success=False).reason_code >= 0x80

    go(page, "Unauthorized clients")
    page.get_by_label("Search refused clients", exact=True).fill(f"banned-{uid}")
    page.get_by_role("cell", name=f"banned-{uid}", exact=True).wait_for()
    screenshot(page, "unauthorized")

    # Unblocked: it connects again.
    go(page, "Blocked clients")
    page.get_by_role("button", name=f"Unblock banned-{uid}").click()
    confirm(page, "Unblock")
    page.get_by_text(f"Unblocked banned-{uid}.").wait_for()
    again = paho_client(broker, f"banned-{uid}", connect=False)
    assert again.connect(expect_success=False).reason_code == 0

    # A shared-subscription definition made and deleted in the console.
    go(page, "Shared subscriptions")
    page.get_by_role("button", name="New shared subscription").click()
    page.locator("dialog").get_by_label("Topic filter", exact=True).fill(f"{uid}/shared/#")
    page.locator("dialog").get_by_label("Partitions", exact=True).fill("3")
    page.locator("dialog").get_by_role("button", name="Save").click()
    page.get_by_role("cell", name=f"{uid}/shared/#", exact=True).wait_for()
    screenshot(page, "shared-subscriptions")
    status, defs = rest.call(broker, "GET", "/api/app/shared/subs?pageSize=100&page=0", TOKEN)
    assert status == 200 and [(d["topic"], d["partitions"]) for d in defs["data"]] == [
        (f"{uid}/shared/#", 3)]
    page.get_by_role("button", name=f"Delete {uid}/shared/#").click()
    confirm(page, "Delete")
    page.get_by_text(f"Deleted {uid}/shared/#.").wait_for()
    assert rest.call(broker, "GET", "/api/app/shared/subs?pageSize=100&page=0", TOKEN)[1][
        "data"] == []

    # Monitoring draws its charts for the cluster and for the node, over each range.
    go(page, "Monitoring")
    page.locator("svg.chart").nth(1).wait_for()
    for label in ("Last 24 hours", "Last 7 days"):
        page.get_by_label("Time range", exact=True).select_option(label=label)
        page.locator("svg.chart").nth(1).wait_for()
    page.get_by_label("Node", exact=True).select_option(index=1)
    page.locator("svg.chart").nth(1).wait_for()
    assert page.locator(".error").count() == 0
    screenshot(page, "monitoring")

    # Dark (the system's, then forced light by the Theme button) and a phone's width, where a
    # table's rows become labelled cards.
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size({"width": 390, "height": 844})
    go(page, "Unauthorized clients")
    page.get_by_text(f"banned-{uid}", exact=True).wait_for()  # a cell's name now has its label
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(background) == "rgb(20, 23, 27)"
    assert page.evaluate("getComputedStyle(document.querySelector('thead')).display") == "none"
    screenshot(page, "phone-dark")
    page.get_by_role("button", name="Theme: system").click()  # → light, whatever the system says
    assert page.evaluate(background) == "rgb(246, 247, 249)"


def test_the_console_is_usable_from_the_keyboard(broker_factory, paho_client, page):
    """Log in, reach a session and open and close its details with the keyboard alone: Tab moves
    through the controls, Enter follows a link or opens a focused row, Escape closes a dialog
    and gives focus back to the row."""
    broker = broker_factory(env=console_env())
    uid = uuid.uuid4().hex[:8]
    paho_client(broker, f"keyboard-{uid}")
    page.goto(url(broker))
    user = page.get_by_label("User name", exact=True)
    user.wait_for()
    # The login page focuses its first field.
    expect(user).to_be_focused()
    page.keyboard.type(USER)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.get_by_role("heading", name="Cluster").wait_for()

    def tab_to(locator, limit: int = 60) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if locator.evaluate("e => e === document.activeElement"):
                return
        raise AssertionError(f"Tab never reached {locator}")

    sessions = page.get_by_role("navigation").get_by_role("link", name="Sessions", exact=True)
    tab_to(sessions)
    page.keyboard.press("Enter")
    search = page.get_by_label("Search by client id", exact=True)
    tab_to(search)
    page.keyboard.type(f"keyboard-{uid}")
    row = page.get_by_role("row", name=f"Session keyboard-{uid}")
    row.wait_for()
    expect(page.locator("tbody tr")).to_have_count(1)
    tab_to(row)
    page.keyboard.press("Enter")
    details = page.locator("dialog[open]")
    details.get_by_text("MQTT 5.0").wait_for()
    page.keyboard.press("Escape")
    details.wait_for(state="detached")
    assert page.locator("dialog[open]").count() == 0
    expect(row).to_be_focused()
