"""The console as served: its files, its headers, what it may say without the token (HAR-30,
HAR-32, HAR-33). The browser tests (``test_console_browser.py``) show it at work; these check
what a browser is given, in process, through served mode's own ``build``."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib.resources import files
from pathlib import Path

import httpx
import pytest

from harness.conformance.target import SyncASGITransport
from harness.serve.console import CONSOLE_PATH
from harness.serve.console.routes import CONTENT_SECURITY_POLICY
from harness.serve.runner import ServeOptions, build
from harness.serve.seeding import format_keys

STATIC = files("harness.serve.console").joinpath("static")
ASSETS = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}


@pytest.fixture(scope="module")
def served() -> tuple[httpx.Client, dict[str, object]]:
    simulator = build(ServeOptions(time_factor=None), "http://sim.test")
    client = httpx.Client(transport=SyncASGITransport(simulator.app), base_url="http://sim.test")
    return client, simulator.document


def _csp(header: str) -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


@pytest.mark.req("HAR-30", "HAR-32")
@pytest.mark.parametrize("path", ["", *(f"/{name}" for name in ASSETS)])
def test_the_page_and_its_assets_are_public_and_carry_a_strict_policy(
    served: tuple[httpx.Client, dict[str, object]], path: str
) -> None:
    client, _ = served
    response = client.get(CONSOLE_PATH + path)
    assert response.status_code == 200
    name = path.lstrip("/") or "console.html"
    assert response.content == STATIC.joinpath(name).read_bytes()
    expected = ASSETS.get(name, "text/html; charset=utf-8")
    assert response.headers["content-type"] == expected
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["x-frame-options"] == "DENY"


@pytest.mark.req("HAR-32")
def test_the_policy_allows_no_inline_code_no_other_origin_and_no_html_sink() -> None:
    csp = _csp(CONTENT_SECURITY_POLICY)
    assert csp["default-src"] == ["'self'"]
    for directive in ("script-src", "style-src", "connect-src", "img-src"):
        assert csp[directive] == ["'self'"], directive
    for directive in ("object-src", "base-uri", "form-action", "frame-ancestors", "frame-src"):
        assert csp[directive] == ["'none'"], directive
    assert csp["require-trusted-types-for"] == ["'script'"]
    assert csp["trusted-types"] == ["'none'"]  # no policy may turn a string into HTML
    everything = " ".join(value for values in csp.values() for value in values)
    assert "unsafe" not in everything and "http" not in everything and "*" not in everything


class _Markup(HTMLParser):
    """Every tag of the page with its attributes, and the text inside script and style."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[str] = []
        self._inside: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._inside = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._inside = None

    def handle_data(self, data: str) -> None:
        if self._inside is not None and data.strip():
            self.inline.append(data)


@pytest.mark.req("HAR-30", "HAR-32", "HAR-33")
def test_the_page_has_no_inline_code_no_outside_asset_and_no_state() -> None:
    page = STATIC.joinpath("console.html").read_text(encoding="utf-8")
    markup = _Markup()
    markup.feed(page)
    assert markup.inline == []
    assert not [tag for tag, _ in markup.tags if tag == "style"]
    for tag, attrs in markup.tags:
        assert not [name for name in attrs if name.startswith("on") or name == "style"], tag
        for name in ("src", "href", "action"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(f"{CONSOLE_PATH}/"), (tag, name, value)
    scripts = [attrs for tag, attrs in markup.tags if tag == "script"]
    assert scripts == [{"src": f"{CONSOLE_PATH}/console.js", "defer": None}]
    # The page holds no data and shows no panel until a token is accepted.
    console = next(attrs for tag, attrs in markup.tags if attrs.get("id") == "console")
    assert "hidden" in console
    assert not re.search(r"(sess|org|req|sk_live)_[0-9A-Za-z]{6}", page)


@pytest.mark.req("HAR-32", "HAR-33")
def test_the_script_has_no_html_sink_and_keeps_the_token_in_memory_only() -> None:
    script = STATIC.joinpath("console.js").read_text(encoding="utf-8")
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("//"))
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
        "srcdoc",
        "createContextualFragment",
        "DOMParser",
    ):
        assert sink not in code, sink
    for store in (
        "localStorage",
        "sessionStorage",
        "cookie",
        "indexedDB",
        "pushState",
        "replaceState",
    ):
        assert store not in code, store
    assert not re.search(r"location\.(href|search|hash)\s*=", code)  # the address is never set
    assert re.findall(r"\bhttps?://", code) == ["http://"]  # the SVG namespace, never fetched
    assert "http://www.w3.org/2000/svg" in code


@pytest.mark.req("HAR-30", "HAR-33", "SIM-8")
def test_served_mode_facts_need_the_token(served: tuple[httpx.Client, dict[str, object]]) -> None:
    client, document = served
    refused = client.get("/_sim/served")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "admin_token.missing"
    admin = {"Authorization": f"Bearer {document['admin_token']}"}
    facts = client.get("/_sim/served", headers=admin).json()
    assert facts == {
        "time_factor": None,
        "manual_clock": True,
        "console": CONSOLE_PATH,
        "key_id_length": 14,
    }
    # Served mode samples the pool from its first instant.
    pool = client.get("/_sim/pool", headers=admin).json()
    assert pool["sample_every_seconds"] == 5.0 and pool["samples"][0]["busy"] == 0


@pytest.mark.req("HAR-30")
def test_the_console_url_is_in_the_keys_document_and_the_banner(
    served: tuple[httpx.Client, dict[str, object]],
) -> None:
    _, document = served
    assert document["console_url"] == f"http://sim.test{CONSOLE_PATH}"
    assert f"console: http://sim.test{CONSOLE_PATH}" in format_keys(document)


@pytest.mark.req("HAR-30")
def test_the_console_files_are_package_data_beside_its_routes() -> None:
    package = Path(str(files("harness.serve.console")))
    assert sorted(p.name for p in (package / "static").iterdir()) == sorted(
        ["console.html", *ASSETS]
    )


@pytest.mark.req("HAR-31", "SIM-8")
@pytest.mark.parametrize(
    ("factor", "every"), [(None, 5.0), (1.0, 5.0), (0.1, 10.0), (0.002, 500.0)]
)
def test_a_fast_clock_stretches_the_pool_grid_to_a_wall_second(
    factor: float | None, every: float
) -> None:
    simulator = build(ServeOptions(time_factor=factor), "http://sim.test")
    assert simulator.platform.admin.pool()["sample_every_seconds"] == every
