"""The console in a real browser: headless Chromium, driven by Playwright, against a real
``avatar-sim serve`` process (HAR-35, and the console's own ids).

One served simulator (a real child process on a free loopback port, its clock at
``TIME_FACTOR``) and one browser serve the whole module; each test opens its own browser context,
so no page memory is shared. Sessions are made through ``/v1`` with keys of their own (a key holds
one live session at a time). Every wait is bounded in wall time; the page polls every second.

Where Playwright or a Chromium cannot be found the tests skip, saying how to install them
(``.ci/run`` installs Debian's ``chromium``). Playwright never downloads a browser here: it is
pointed at the system's.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.serve.console import CONSOLE_PATH
from tests.serve.support import Served, receiver, served

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the console's browser tests need Playwright: pip install playwright (in [dev])",
)
expect = sync_api.expect

#: Simulated seconds run four times faster than the wall clock: a session boots in about half a
#: wall second, and a 600 s idle timeout still takes minutes of wall time, so only the page's
#: controls end sessions within a test.
TIME_FACTOR = "0.25"
#: Wall milliseconds the page gets to show a change (it polls every second).
SHOWN_WITHIN_MS = 10_000
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: What Chromium needs on a closed machine, as root: no sandbox, no GPU, no calls home.
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
INSTALL = (
    "no Chromium found for the console's browser tests: install one (Debian or Ubuntu: "
    "`apt-get install chromium`; CI's .ci/run does) or set AVATAR_SIM_CHROMIUM to a Chromium "
    "or Chrome binary"
)
#: Set to a path to keep a screenshot of the console (how docs/console.png is made).
SCREENSHOT_ENV = "AVATAR_SIM_CONSOLE_SCREENSHOT"
#: Records any Content-Security-Policy violation the page reports (injected by the test tool,
#: not by the page, so the policy does not apply to it).
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + event.blockedURI);
});
"""

pytestmark = pytest.mark.req("HAR-35")


def find_chromium() -> str | None:
    """``AVATAR_SIM_CHROMIUM`` if set, else the first Chromium or Chrome on the ``PATH``."""
    chosen = os.environ.get("AVATAR_SIM_CHROMIUM")
    if chosen:
        return chosen if Path(chosen).is_file() else None
    for name in BROWSERS:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = find_chromium()
    if executable is None:
        pytest.skip(INSTALL)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=list(FLAGS))
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("console"), "--time-factor", TIME_FACTOR) as running:
        yield running


class Console:
    """One browser page on the console, and the served simulator behind it."""

    def __init__(self, page: Any, server: Served) -> None:
        self.page = page
        self.server = server
        self.http = server.client()
        self.sent: list[dict[str, Any]] = []  # every request the page made
        page.on("request", lambda r: self.sent.append({"url": r.url, "headers": r.headers}))
        page.add_init_script(WATCH)
        page.goto(server.base_url + CONSOLE_PATH)

    def log_in(self, token: str | None = None) -> None:
        self.page.fill("#token", token or self.server.keys["admin_token"])
        self.page.click("text=Open the console")

    @property
    def admin(self) -> dict[str, str]:
        return self.server.admin_headers

    def key(self, plan: str = "enterprise") -> str:
        """A fresh unrestricted key of the organization on ``plan``."""
        org = self.server.org(plan)["id"]
        made = self.http.post("/_sim/keys", json={"org_id": org}, headers=self.admin)
        assert made.status_code == 201, made.text
        return str(made.json()["key"])

    def create(self, plan: str = "enterprise", **body: Any) -> tuple[dict[str, Any], str]:
        """A session made through /v1 with a fresh key; its resource and the key."""
        key = self.key(plan)
        payload = {
            "avatar_id": "av_stock_mock",
            "idle_timeout_seconds": 600,
            "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "console"},
            **body,
        }
        created = self.http.post(
            "/v1/sessions", json=payload, headers={"Authorization": f"Bearer {key}"}
        )
        assert created.status_code == 201, created.text
        return dict(created.json()), key

    def row(self, session_id: str) -> Any:
        return self.page.locator(f'#organizations tr[data-session="{session_id}"]')

    def status(self, session_id: str) -> str:
        found = self.http.get(f"/_sim/sessions/{session_id}", headers=self.admin)
        return str(found.json()["status"])

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__violations"))


@pytest.fixture
def console(browser: Any, server: Served) -> Iterator[Console]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    opened = Console(context.new_page(), server)
    try:
        yield opened
        assert opened.violations() == []  # the page itself keeps to its policy
    finally:
        opened.http.close()
        context.close()


@pytest.mark.req("HAR-33", "HAR-30")
def test_without_the_token_the_page_shows_nothing(console: Console) -> None:
    page = console.page
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#console")).to_be_hidden()
    console.log_in("simadmin_not-the-token")
    expect(page.locator("#login-error")).to_contain_text("refused this token")
    expect(page.locator("#console")).to_be_hidden()
    page.wait_for_timeout(1500)  # a poll would have happened by now
    data = [r for r in console.sent if "/_sim/" in r["url"] and CONSOLE_PATH not in r["url"]]
    # One request: the wrong token, tried once; the server refused it and nothing else was asked.
    assert [r["url"].removeprefix(console.server.base_url) for r in data] == ["/_sim/served"]
    assert data[0]["headers"]["authorization"] == "Bearer simadmin_not-the-token"
    shown = page.locator("body").inner_text()
    assert not re.search(r"(sess|org|req)_[0-9A-Z]{6}|sk_live_", shown)
    for panel in ("#organizations", "#history", "#deliveries", "#active-faults", "#pool-chart"):
        assert page.locator(panel).inner_html() == ""


@pytest.mark.req("HAR-33", "HAR-34", "HAR-31")
def test_created_sessions_appear_live_with_their_statuses(console: Console) -> None:
    page = console.page
    console.log_in()
    expect(page.locator("#connection")).to_have_text("live")
    page.evaluate("window.__loaded_once = true")  # gone if the page ever reloads
    started = time.monotonic()
    first, _ = console.create("enterprise")
    second, _ = console.create("starter")
    for session in (first, second):
        expect(console.row(session["id"])).to_be_visible(timeout=SHOWN_WITHIN_MS)
        expect(console.row(session["id"]).locator("td.status")).to_have_text(
            "running", timeout=SHOWN_WITHIN_MS
        )
        assert console.status(session["id"]) == "running"
    assert time.monotonic() - started < SHOWN_WITHIN_MS / 1000
    starter = page.locator(f'.org[data-org="{console.server.org("starter")["id"]}"]')
    expect(starter.locator(".counts")).to_contain_text("running")
    # The clock and the pool move with the server, and the page never reloaded to show it.
    expect(page.locator("#clock-factor")).to_contain_text(f"time factor {TIME_FACTOR}")
    before = page.locator("#clock-now").inner_text()
    expect(page.locator("#clock-now")).not_to_have_text(before, timeout=SHOWN_WITHIN_MS)
    expect(page.locator("#pool-now")).to_contain_text("busy")
    assert page.locator("#pool-chart polyline.busy").count() == 1
    assert page.evaluate("window.__loaded_once") is True
    # The token never left the page's memory: no cookie, no storage, not in the address.
    token = console.server.keys["admin_token"]
    assert page.evaluate("document.cookie") == ""
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert token not in page.url
    assert all(token not in r["url"] for r in console.sent)
    assert page.locator("#token").input_value() == ""
    page.reload()
    expect(page.locator("#login")).to_be_visible()  # a reload forgets it
    expect(page.locator("#console")).to_be_hidden()


@pytest.mark.req("HAR-34", "SIM-1")
def test_advancing_the_clock_from_the_page_ends_a_session(console: Console) -> None:
    page = console.page
    console.log_in()
    session, _ = console.create(idle_timeout_seconds=120)
    status = console.row(session["id"]).locator("td.status")
    expect(status).to_have_text("running", timeout=SHOWN_WITHIN_MS)
    page.fill("#advance-seconds", "200")
    page.click("#advance-form button")
    expect(page.locator("#advance-result")).to_contain_text("advanced 200 s")
    expect(status).to_have_text("ended", timeout=SHOWN_WITHIN_MS)
    console.row(session["id"]).locator("a.session-link").click()
    history = page.locator("#history")
    expect(history.locator('tr[data-type="session.ended"]')).to_contain_text("reason: idle_timeout")
    billed = console.http.get(f"/_sim/sessions/{session['id']}", headers=console.admin).json()
    seconds = billed["usage"]["billable_seconds"]
    assert seconds > 0
    expect(page.locator("#history-summary")).to_contain_text(f"{seconds} billable s")
    assert f"#session/{session['id']}" in page.url


@pytest.mark.req("HAR-34", "SIM-9")
def test_injecting_worker_crash_fails_the_session_with_its_reason(console: Console) -> None:
    page = console.page
    console.log_in()
    session, _ = console.create()
    status = console.row(session["id"]).locator("td.status")
    expect(status).to_have_text("running", timeout=SHOWN_WITHIN_MS)
    form = page.locator('form[data-fault="worker_crash"]')
    form.locator('input[name="session_id"]').fill(session["id"])
    form.locator("button").click()
    expect(page.locator("#fault-result")).to_have_text("worker_crash injected")
    expect(status).to_have_text("failed", timeout=SHOWN_WITHIN_MS)
    expect(console.row(session["id"])).to_contain_text("worker_lost")
    expect(page.locator('#active-faults li[data-fault="worker_crash"]')).to_be_visible()
    console.row(session["id"]).locator("a.session-link").click()
    failed = page.locator('#history tr[data-type="session.failed"]')
    expect(failed).to_contain_text("code: worker_lost")
    assert console.status(session["id"]) == "failed"
    # The row's own button does the same to another session.
    other, _ = console.create()
    expect(console.row(other["id"]).locator("td.status")).to_have_text(
        "running", timeout=SHOWN_WITHIN_MS
    )
    console.row(other["id"]).locator("button.crash").click()
    expect(console.row(other["id"]).locator("td.status")).to_have_text(
        "failed", timeout=SHOWN_WITHIN_MS
    )


@pytest.mark.req("HAR-34", "SIM-9")
def test_every_other_fault_is_injected_with_its_parameters_and_cleared(console: Console) -> None:
    page = console.page
    console.log_in()
    session, _ = console.create()
    expect(console.row(session["id"]).locator("td.status")).to_have_text(
        "running", timeout=SHOWN_WITHIN_MS
    )
    active = page.locator("#active-faults")

    def inject(fault: str, **values: str) -> Any:
        form = page.locator(f'form[data-fault="{fault}"]')
        for name, value in values.items():
            form.locator(f'input[name="{name}"]').fill(value)
        form.locator("button").click()
        expect(page.locator("#fault-result")).to_have_text(f"{fault} injected")
        shown = active.locator(f'li[data-fault="{fault}"]')
        expect(shown).to_be_visible(timeout=SHOWN_WITHIN_MS)
        return shown

    expect(inject("capacity", workers="3")).to_contain_text("workers 3")
    expect(inject("slow_startup", extra_seconds="7", duration="900")).to_contain_text(
        "extra_seconds 7"
    )
    expect(inject("heartbeat_loss", session_id=session["id"], duration="400")).to_contain_text(
        session["id"]
    )
    inject("purge_failure")
    faults = console.http.get("/_sim/faults", headers=console.admin).json()["data"]
    assert {f["fault"] for f in faults} >= {
        "capacity",
        "slow_startup",
        "heartbeat_loss",
        "purge_failure",
    }
    for fault in ("capacity", "slow_startup", "purge_failure"):
        active.locator(f'li[data-fault="{fault}"] button.clear').click()
        expect(active.locator(f'li[data-fault="{fault}"]')).to_have_count(
            0, timeout=SHOWN_WITHIN_MS
        )
    left = console.http.get("/_sim/faults", headers=console.admin).json()["data"]
    assert "capacity" not in {f["fault"] for f in left}
    pool = console.http.get("/_sim/pool", headers=console.admin).json()
    assert pool["capacity"] == pool["configured_workers"]


@pytest.mark.req("HAR-32")
def test_markup_sent_through_the_api_stays_inert_text(console: Console) -> None:
    page = console.page
    console.log_in()
    image = "<img src=x onerror=window.__pwned=1>"
    script = "<script>window.__pwned = 2</script>"
    org = console.http.post(
        "/_sim/organizations",
        json={"name": "<img src=x onerror=window.__pwned=3>", "plan": "pro"},
        headers=console.admin,
    ).json()
    key = org["keys"]["unrestricted"]
    body = {
        "avatar_id": "av_stock_mock",
        "metadata": {"note": image, "<b>bold</b>": script},
        "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": script},
    }
    created = console.http.post(
        "/v1/sessions", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    assert created.status_code == 201, created.text
    row = console.row(created.json()["id"])
    expect(row).to_be_visible(timeout=SHOWN_WITHIN_MS)
    expect(row.locator("td.metadata")).to_contain_text(image)
    expect(row.locator("td.room")).to_have_text(script)
    name = page.locator(f'.org[data-org="{org["id"]}"] .org-name')
    expect(name).to_have_text("<img src=x onerror=window.__pwned=3>")
    page.wait_for_timeout(1500)  # another poll, in case a redraw differs
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("b").count() == 0
    assert page.locator("script").count() == 1  # the console's own
    # An HTML sink refuses a string outright under the page's policy (Trusted Types).
    refused = page.evaluate(
        "() => { try { document.body.innerHTML = '<i>x</i>'; return 'parsed'; }"
        " catch (error) { return error.name; } }"
    )
    assert refused == "TypeError"
    page.evaluate("window.__violations = []")  # that refusal was this test's doing


@pytest.mark.req("HAR-34", "HAR-31", "EV-3")
def test_api_calls_link_to_their_session_and_filter_by_key_and_status(console: Console) -> None:
    page = console.page
    server = console.server
    with receiver() as hooks:
        org = server.org("starter")
        console.http.post(
            "/_sim/webhooks", json={"org_id": org["id"], "url": hooks.url}, headers=console.admin
        ).raise_for_status()
        console.log_in()
        session, key = console.create("starter")
        refused = console.http.get(
            "/v1/sessions", headers={"Authorization": f"Bearer {org['keys']['revoked']}"}
        )
        assert refused.status_code == 401
        calls = page.locator("#requests tbody tr")
        created_row = calls.filter(has_text=session["id"]).first
        expect(created_row).to_contain_text("POST /v1/sessions", timeout=SHOWN_WITHIN_MS)
        expect(created_row.locator("td.status-code")).to_have_text("201")
        refused_row = calls.filter(has_text=refused.headers["x-request-id"])
        expect(refused_row).to_contain_text("401")
        expect(refused_row).to_contain_text(refused.json()["error"]["code"])
        # The call's row links to the session it touched.
        created_row.locator("a.session-link").click()
        expect(page.locator("#history-summary")).to_contain_text(session["id"])
        expect(page.locator('#history tr[data-type="session.queued"]')).to_be_visible()
        # Filters: by status, then by a key (clicking its handle).
        page.fill("#filter-status", "401")
        page.click("#requests-filter button[type=submit]")
        expect(calls).to_have_count(1, timeout=SHOWN_WITHIN_MS)
        expect(calls).to_contain_text(refused.headers["x-request-id"])
        page.click("#filter-clear")
        expect(created_row).to_be_visible(timeout=SHOWN_WITHIN_MS)
        created_row.locator("button.key-filter").click()
        expect(page.locator("#filter-key")).to_have_value(key[:14])
        expect(calls.filter(has_text=refused.headers["x-request-id"])).to_have_count(
            0, timeout=SHOWN_WITHIN_MS
        )
        assert all(key not in r["url"] for r in console.sent)  # only the handle was sent
        # The webhook deliveries of that organization, each attempt with its answer.
        hooks.wait_for(lambda payload: payload.get("type") == "session.queued", timeout=15)
        deliveries = page.locator("#deliveries")
        expect(deliveries.locator("tr.delivery").first).to_be_visible(timeout=SHOWN_WITHIN_MS)
        expect(deliveries.locator("tr.attempt").first).to_contain_text("204")
        if os.environ.get(SCREENSHOT_ENV):
            page.fill("#filter-key", "")
            page.click("#filter-clear")
            page.set_viewport_size({"width": 1280, "height": 1600})
            page.wait_for_timeout(1500)
            page.screenshot(path=os.environ[SCREENSHOT_ENV], full_page=True)


@pytest.mark.req("HAR-30")
def test_serve_printed_the_console_url(server: Served) -> None:
    assert server.process.stdout is not None
    banner = [server.process.stdout.readline().decode() for _ in range(3)]
    url = server.base_url + CONSOLE_PATH
    assert banner[2].strip() == f"console: {url} (asks for the admin token)"
    page = httpx.get(url, timeout=10)
    assert page.status_code == 200 and "avatar-sim console" in page.text
