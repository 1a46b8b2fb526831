"""Scripts that drive the target's lists to where their rules bite; the model judges
(``list_pages``, ``list_walks``).

* ``list_probe``: every list walked whole, then asked for 1 item, the maximum, nothing, and sizes
  outside the range (0, the maximum plus one, ten times the maximum); run events at 1, 500, 0
  and 501; the avatars' default page.
* ``list_walk``: avatars and sessions walked one item a page while a session is created, so a
  walk that skips, repeats, reorders or stops early is seen.
* ``fill_avatars``: a page size above the maximum only bites on a list longer than the maximum,
  and avatars are the list a customer can make long cheaply: when the organization lists no more
  than 100, small portraits are uploaded until it lists 101 (stopping at the first refusal, which
  leaves the rule ``partly`` checked and says so).
* ``cursor_length_bound``: the runs and assets cursors are at most 40 characters.
"""

from __future__ import annotations

import io
from typing import Any

from PIL import Image

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import LATE, CheckFailed, NotChecked, envelope_of, scenario_check
from harness.conformance.context import Context
from harness.conformance.pacing import retry_hint
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange, Target

__all__ = ["LISTS", "expect_refused", "list_page", "walk"]

#: The list endpoints with a string cursor, the role that may list them, and the id prefix.
LISTS: tuple[tuple[str, str, str], ...] = (
    ("/v1/sessions", "api", "sess_"),
    ("/v1/avatars", "api", "av_"),
    ("/v1/runs", "api", "run_"),
    ("/v1/assets", "api", "asset_"),
)

_MAX_PAGES = 200
#: What a request the seed calls invalid may get: 400 or 422 (the seed's table names 422 for a
#: validation failure and says the type maps only roughly to the status).
REFUSED = (400, 422)


def expect_refused(exchange: Exchange, what: str, *statuses: int) -> dict[str, Any]:
    """A refusal with one of ``statuses`` (400 or 422 by default) and the envelope."""
    allowed = statuses or REFUSED
    if exchange.status not in allowed:
        wanted = " or ".join(map(str, allowed))
        raise CheckFailed(f"{what}: expected {wanted}, got {exchange.status}", exchange)
    error = envelope_of(exchange)
    if error is None:
        raise CheckFailed(f"{what}: the {exchange.status} carries no error envelope", exchange)
    return error


def list_page(target: Target, path: str, role: str, params: dict[str, Any]) -> dict[str, Any]:
    """One page (the model judges it); a page that is no list stops the script."""
    exchange = target.request("GET", path, role=role, params=params)
    body = expect_status(exchange, 200, what=f"GET {path}")
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise CheckFailed(f"GET {path} answered no list", exchange)
    return body


def walk(target: Target, path: str, role: str = "api", limit: int = SEED.page_max) -> list[str]:
    """The ids of every item of a string-cursor list, walked page by page."""
    ids: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    for _ in range(_MAX_PAGES):
        body = list_page(target, path, role, params)
        ids += [str(item.get("id")) for item in body["data"] if isinstance(item, dict)]
        if body.get("has_more") is not True or body.get("next_cursor") is None:
            return ids
        params = {"limit": limit, "starting_after": body["next_cursor"]}
    raise CheckFailed(f"walking {path} did not end within {_MAX_PAGES} pages")


def a_run_id(ctx: Context) -> str | None:
    """A run of this organization: the run this harness created, else one the list shows."""
    try:
        return str(ctx.first_run().get("id"))
    except NotChecked:
        body = list_page(ctx.target, "/v1/runs", "api", {"limit": 1})
        return str(body["data"][0].get("id")) if body["data"] else None


@scenario_check("list_probe")
def list_probe(ctx: Context) -> None:
    """Every list walked whole, then asked for 1, the maximum, no limit, 0, the maximum plus one
    and ten times the maximum; a run's events likewise (the model judges every page)."""
    target = ctx.target
    for path, role, _ in LISTS:
        walk(target, path, role)
        for limit in (None, SEED.page_min, SEED.page_max, 0, SEED.page_max + 1, 10 * SEED.page_max):
            params = {} if limit is None else {"limit": limit}
            ctx.proves(target.request("GET", path, role=role, params=params))
    if "other_org" in ctx.roles():
        for path, _, _ in LISTS:
            walk(target, path, "other_org")  # a list that may be empty: its last page's cursor
    run_id = a_run_id(ctx)
    if run_id is not None:
        top = SEED.run_events_page_max
        for limit in (SEED.page_min, top, 0, top + 1):
            target.request("GET", f"/v1/runs/{run_id}/events", params={"limit": limit})


#: Items walked one a page (a deployment's lists may hold thousands).
_WALK_ONE_BY_ONE = 25


@scenario_check("list_walk", creates=3, key="any")
def list_walk(ctx: Context) -> None:
    """Avatars and sessions walked one item a page (sessions made first when fewer than two
    are listed), a session created during the walk, then both walked whole again (the model
    judges what each walk shows against every item it knew and every earlier walk)."""
    target, role = ctx.target, ctx.creator
    for path in ("/v1/avatars", "/v1/sessions"):
        listed = walk(target, path, role)
        for _ in range(2 - len(listed) if path == "/v1/sessions" else 0):
            made = _try_create(ctx)
            if made is not None:
                ctx.end(made)
        created: str | None = None
        params: dict[str, Any] = {"limit": 1}
        try:
            for page in range(_WALK_ONE_BY_ONE):
                body = list_page(target, path, role, params)
                if page == 0 and path == "/v1/sessions" and body.get("has_more"):
                    created = _try_create(ctx)
                if body.get("has_more") is not True:
                    break
                params = {"limit": 1, "starting_after": body.get("next_cursor")}
        finally:
            if created is not None:
                ctx.end(created)
        walk(target, path, role)  # a walk begun after the create: it must show what was made


def _try_create(ctx: Context) -> str | None:
    try:
        _, session = ctx.new_session("walk")
    except NotChecked:
        return None
    return str(session["id"])


def _small_portrait(index: int) -> bytes:
    image = Image.new("RGB", (64, 64), (200, 160 + index % 60, 140))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@scenario_check("fill_avatars", order=LATE - 10, budget=180)
def fill_avatars(ctx: Context) -> None:
    """When the organization lists no more than 100 avatars, upload small portraits until it
    lists 101 (stopping at the first refusal; a rate limit is waited out only on the
    simulator's admin clock, where waiting is free), then ask for 101 and for 100 (the model
    judges the page against the maximum)."""
    target = ctx.target
    listed = walk(target, "/v1/avatars")
    index = 0
    while index < SEED.page_max + 1 - len(listed):
        request = target.client.build_request(
            "POST", "/v1/avatars", headers=target.authorization("api"),
            files={"image": (f"fill-{index}.png", _small_portrait(index), "image/png")},
            data={"name": f"conformance fill {index}"},
        )  # fmt: skip
        exchange = target.send(request, operation="createAvatar")
        if is_success(exchange):
            index += 1
            continue
        hint = retry_hint(exchange) if exchange.status == 429 else None
        if hint is None or not ctx.admin:
            break  # waiting out an upload limit in real time would take minutes: partly
        ctx.wait(max(hint, 1.0), "an upload rate limit to clear")
    walk(target, "/v1/avatars")
    for limit in (SEED.page_max + 1, SEED.page_max):
        ctx.proves(target.request("GET", "/v1/avatars", params={"limit": limit}))


@scenario_check("cursor_length_bound", "EP-RUN-1", "EP-ASSET-1")
def cursor_length_bound(ctx: Context) -> None:
    """The runs and assets cursors are at most 40 characters: a 41-character starting_after is
    refused with 400 or 422, and a real cursor taken from a page is accepted."""
    target = ctx.target
    for path, prefix in (("/v1/runs", "run_"), ("/v1/assets", "asset_")):
        too_long = prefix + "0" * (SEED.cursor_max_length + 1 - len(prefix))
        exchange = target.request("GET", path, params={"starting_after": too_long, "limit": 1})
        expect_refused(exchange, f"GET {path} with a {len(too_long)}-character cursor")
        body = list_page(target, path, "api", {"limit": 1})
        cursor = body.get("next_cursor")
        if isinstance(cursor, str):
            if len(cursor) > SEED.cursor_max_length:
                raise CheckFailed(f"GET {path} gave a cursor of {len(cursor)} characters")
            exchange = target.request("GET", path, params={"starting_after": cursor, "limit": 1})
            expect_status(exchange, 200, what=f"GET {path} with the cursor it gave")
        ctx.proves(exchange)
