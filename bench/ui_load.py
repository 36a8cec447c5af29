"""How fast the admin console opens (docs/ui.md): a starlingd (STARLINGD, or the debug build) on
loopback, Debian's headless Chromium; three fresh browser contexts, each timing the login page
until its form is shown, logging in until the home page lists the node, and a reload of the
sessions page until its table is shown.
    STARLINGD=build/release/src/app/starlingd .venv/bin/python bench/ui_load.py"""
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))
from starling_it.brokers import StarlingdBroker
from playwright.sync_api import sync_playwright
b = StarlingdBroker(Path(tempfile.mkdtemp()), env={"SECURITY_ADMIN_USERNAME": "a@b.c", "SECURITY_ADMIN_PASSWORD": "pw123456"})
b.start()
try:
    with sync_playwright() as p:
        br = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for run in range(3):
            ctx = br.new_context(); pg = ctx.new_page()
            t = time.monotonic(); pg.goto(f"http://127.0.0.1:{b.http_port}/"); pg.get_by_role("button", name="Log in").wait_for()
            login = time.monotonic() - t
            pg.get_by_label("User name", exact=True).fill("a@b.c"); pg.get_by_label("Password", exact=True).fill("pw123456")
            t = time.monotonic(); pg.get_by_role("button", name="Log in").click(); pg.locator("td").filter(has_text="UP").first.wait_for()
            home = time.monotonic() - t
            t = time.monotonic(); pg.goto(f"http://127.0.0.1:{b.http_port}/#/sessions"); pg.reload(); pg.get_by_role("button", name="Next ›").wait_for()
            sess = time.monotonic() - t
            print(f"run {run}: login page {login*1000:.0f} ms, log in → home with nodes {home*1000:.0f} ms, reload sessions {sess*1000:.0f} ms")
            ctx.close()
        br.close()
finally:
    b.close()
