"""``SeedModel``: one model of the seed's observable rules, updated from every exchange of a run
and judging every answer.

Why one model: a rule of the seed binds every answer, not only the one a check was written to
look at. A session create sent by the fuzz is held to the same validation, caps and rate limit
as one sent by a script; a list page read while settling is held to the same page bounds; a
replay found anywhere must answer the original. Each exchange updates what the run knows (keys
and their organizations, sessions and their statuses over time, avatars, runs, usage, the
idempotency table, the seed's open points as the target answered them) and is judged against it.
Scripts (``harness.conformance.sessions`` and the rest) only drive the target to where a rule can
bite.

Judgements that need a second look are suspicions (``CapCheck``) settled by ``settle`` between
scripts, with reads that are themselves observed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model import access_rules, cap_rules, create_rules
from harness.conformance.model.access_rules import Ownership
from harness.conformance.model.asset_book import AssetBook
from harness.conformance.model.avatar_book import AvatarBook
from harness.conformance.model.calls import Call, call_of
from harness.conformance.model.idempotency_table import IdempotencyTable
from harness.conformance.model.keys import Caller, KeyRing, Org
from harness.conformance.model.list_book import LISTED, ListBook
from harness.conformance.model.multipart import form_parts, is_portrait
from harness.conformance.model.nonces import Nonces
from harness.conformance.model.rate_book import Attempt, Outcome, RateBook, declared_reset
from harness.conformance.model.readings import Readings
from harness.conformance.model.rules import Verdict
from harness.conformance.model.run_book import RunBook
from harness.conformance.model.session_book import SessionBook
from harness.conformance.model.usage_book import UsageBook
from harness.conformance.responses import resources_in
from harness.target import Credentials, Exchange

__all__ = ["SeedModel"]

_MEDIA = frozenset({"audio", "image", "video"})


@dataclass
class SeedModel:
    """What the run knows of the target, and the judgement of each exchange against it."""

    credentials: Credentials
    now: Callable[[], float]
    #: Whether sessions may receive audio the run does not send (``--transport-json``).
    audio_may_flow: bool = False
    #: Further unrestricted keys the run holds (secret to organization), beyond its roles.
    extra_keys: Mapping[str, Org] = field(default_factory=dict)
    keys: KeyRing = field(init=False)
    readings: Readings = field(default_factory=Readings)
    sessions: SessionBook = field(init=False)
    rates: RateBook = field(default_factory=RateBook)
    idempotency: IdempotencyTable = field(default_factory=IdempotencyTable)
    ownership: Ownership = field(default_factory=Ownership)
    lists: ListBook = field(default_factory=ListBook)
    avatars: AvatarBook = field(default_factory=AvatarBook)
    runs: RunBook = field(default_factory=RunBook)
    usage: UsageBook = field(default_factory=UsageBook)
    media_models: dict[str, bool] = field(default_factory=dict)
    nonces: Nonces = field(default_factory=Nonces)
    assets: AssetBook = field(default_factory=AssetBook)
    suspects: list[cap_rules.CapCheck] = field(default_factory=list)
    can_start_session: bool | None = None
    #: How many exchanges the model has observed (the order of observations).
    order: int = 0

    def __post_init__(self) -> None:
        self.keys = KeyRing.of(self.credentials, self.extra_keys)
        self.sessions = SessionBook(audio_may_flow=self.audio_may_flow)
        start = self.now()
        for role in ("api", "other_org", *self.keys.roles):
            if role.startswith("key-") or self.credentials.get(role) is not None:
                self.rates.watch(role, start)

    # -- the door --------------------------------------------------------------------------

    def observe(self, exchange: Exchange) -> list[Verdict]:
        """Learn from ``exchange`` and judge it."""
        call = call_of(exchange)
        if call is None:
            return []
        self.order += 1
        caller = self.keys.caller(call.authorization)
        at = exchange.received_at if exchange.received_at is not None else self.now()
        sent = exchange.sent_at if exchange.sent_at is not None else at
        verdicts = list(access_rules.judge_auth(call, caller))
        if call.status == 401 or not caller.valid:
            return verdicts
        media = (
            self.media_models.get(call.params.get("model_id", ""))
            if call.operation == "createRun"
            else None
        )
        verdicts += access_rules.judge_scopes(call, caller, media)
        verdicts += access_rules.judge_foreign_target(call, caller, self.ownership, self.readings)
        verdicts += access_rules.judge_owner_read(call, caller, self.ownership)
        assert caller.org is not None and caller.role is not None
        if call.operation in LISTED:
            verdicts += self._page(call, caller)
        handler = _HANDLERS.get(call.operation)
        if handler is not None:
            verdicts += handler(self, call, caller, sent, at)
        resources = list(resources_in(call.operation, call.answer)) if call.ok else []
        verdicts += access_rules.foreign_in_answer(call, caller, self.ownership, resources)
        return verdicts

    # -- sessions --------------------------------------------------------------------------

    def _create_session(
        self, call: Call, caller: Caller, sent: float, at: float
    ) -> Iterator[Verdict]:
        org, role = _org(caller), str(caller.role)
        body = call.body
        reading = create_rules.problems_of(body, call.idempotency_key)
        replay = call.idempotency_key is not None and self.idempotency.is_replay(
            org, "POST", call.exchange.path, call.idempotency_key, body, sent
        )
        if call.idempotency_key is not None:
            yield from self.idempotency.judge(
                org, "POST", call.exchange.path, call.idempotency_key, body,
                not reading.problems, call.exchange, sent,
            )  # fmt: skip
        outcome: Outcome = (
            "accepted" if call.ok
            else "limited" if call.status == 429 and call.error_type == "rate_limit"
            else "other"
        )  # fmt: skip
        reset = declared_reset(call.exchange, at)
        yield from self.rates.record(
            role, Attempt(sent, at, outcome, replay, reset), call.exchange, counted=True
        )
        avatar = body.get("avatar_id") if isinstance(body, dict) else None
        if replay:
            return  # the original answer, as it was then: judged by idempotent_replay alone
        if call.ok and isinstance(call.answer, dict):
            yield from self._accepted_session(call, caller, reading, replay, sent, at)
        else:
            yield from self._refused_session(call, caller, reading, sent)
        if isinstance(avatar, str):
            yield from self.avatars.judge_session_with(avatar, call.ok, call.exchange)
            if call.ok and self.ownership.foreign(avatar, org):
                yield Verdict.failed(
                    access_rules.TENANTS, call.exchange,
                    f"the {role} key started a session with another organization's avatar "
                    f"{avatar}",
                )  # fmt: skip

    def _accepted_session(
        self,
        call: Call,
        caller: Caller,
        reading: create_rules.Reading,
        replay: bool,
        sent: float,
        at: float,
    ) -> Iterator[Verdict]:
        org, role = _org(caller), str(caller.role)
        session: dict[str, Any] = call.answer
        session_id = session.get("id")
        if not isinstance(session_id, str):
            return
        if reading.judgeable and reading.problems:
            fields = ", ".join(p.field for p in reading.problems)
            yield Verdict.failed(
                create_rules.CREATE, call.exchange,
                f"a create the seed refuses ({fields}) was accepted ({call.status})",
            )  # fmt: skip
        elif reading.judgeable and isinstance(call.body, dict):
            yield from create_rules.judge_accepted(
                call.body, session, call.exchange, self.readings, org, reading.edge
            )
        if not replay:
            suspect = cap_rules.acceptance_suspects(
                self.sessions, role, self.order, session_id, call.exchange
            )
            if suspect is not None:
                self.suspects.append(suspect)
            elif self.sessions.owned_by(role) and not self.sessions.live(role):
                yield Verdict.passed(cap_rules.CAPS, call.exchange, edge=True)
        self._made_session(session, org, role, sent, at, call)
        yield from self.sessions.seen(session, at, call.exchange, org=org, order=self.order)

    def _made_session(
        self, session: dict[str, Any], org: Org, role: str, sent: float, at: float, call: Call
    ) -> None:
        session_id = str(session["id"])
        if self.sessions.get(session_id) is None or self.sessions.sessions[session_id].sent is None:
            self.sessions.created(session, org=org, role=role, sent=sent, at=at)
            self.ownership.claim(session_id, org)
            self.lists.add(("listSessions", org), session_id)
        self.nonces.made(call.body, session_id)

    def _refused_session(
        self, call: Call, caller: Caller, reading: create_rules.Reading, sent: float
    ) -> Iterator[Verdict]:
        role = str(caller.role)
        if reading.problems:
            if reading.judgeable:
                yield create_rules.judge_refused(reading, call.exchange, call.error)
            return
        exchange = call.exchange
        limited = call.status == 429 and call.error_type == "rate_limit"
        keyed_conflict = call.status == 409 and call.idempotency_key is not None
        if not reading.judgeable or limited or keyed_conflict or call.status == 503:
            return  # the rate limit, no free worker, a reused key: each judged by its rule
        avatar = call.body.get("avatar_id") if isinstance(call.body, dict) else None
        known = isinstance(avatar, str) and self.avatars.usable(avatar, _org(caller))
        if call.status != 429 and not (reading.complete and known):
            return  # a body some reading refuses (a field it requires, one it does not know)
        if call.status == 429 and (call.error_type, call.code) != (
            "quota_exceeded",
            "concurrent_sessions",
        ):
            yield Verdict.failed(
                cap_rules.CAPS, exchange,
                f"a create was refused 429 {call.error_type}/{call.code}; a cap refusal is "
                "quota_exceeded / concurrent_sessions",
            )  # fmt: skip
            return
        if call.status == 429:
            suspect = cap_rules.refusal_suspect(self.sessions, role, self.order, exchange)
            if suspect is not None:
                self.suspects.append(suspect)
            elif any(s.placed_at is not None for s in self.sessions.live(role)):
                yield Verdict.passed(cap_rules.CAPS, exchange, edge=True)
            return
        if call.status == 402:
            if self.can_start_session is True:
                yield Verdict.failed(
                    create_rules.CREATE, exchange,
                    "a create was refused 402 although the quota says can_start_session",
                )  # fmt: skip
            return
        where = f"{call.param or ''} {call.code or ''}"
        if ("transport" in where or "room" in where) and not self.audio_may_flow:
            return
        yield Verdict.failed(
            create_rules.CREATE, exchange,
            f"a create the seed accepts was refused {call.status} {call.code!r} (param "
            f"{call.param!r}); the seed refuses it only for the rate limit, a cap, no free "
            "worker or credits",
        )  # fmt: skip

    def _pipecat(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        role = str(caller.role)
        outcome: Outcome = "accepted" if call.ok else "other"
        yield from self.rates.record(
            role, Attempt(sent, at, outcome, False), call.exchange, counted=False
        )
        session = call.answer.get("session") if call.ok and isinstance(call.answer, dict) else None
        if isinstance(session, dict) and isinstance(session.get("id"), str):
            self._made_session(session, _org(caller), role, sent, at, call)
            yield from self.sessions.seen(
                session, at, call.exchange, org=_org(caller), order=self.order
            )

    def _sessions_seen(
        self, call: Call, caller: Caller, sent: float, at: float
    ) -> Iterator[Verdict]:
        org = _org(caller)
        if call.operation == "endSession":
            session_id = call.params.get("session_id", "")
            owner = self.ownership.owner.get(session_id)
            if owner == org:
                yield from self.sessions.judge_end_refused(session_id, call.exchange)
                if call.ok and isinstance(call.answer, dict):
                    yield from self.sessions.judge_end(session_id, call.answer, call.exchange, sent)
                self.sessions.end_sent(session_id, sent)
        if not call.ok:
            return
        for _, session in resources_in(call.operation, call.answer):
            found = session.get("id")
            if not isinstance(found, str):
                continue
            session_id = found
            owner = self.ownership.owner.get(session_id)
            if owner is not None and owner != org:
                continue  # tenant_isolation judges it
            if owner is None:
                self.ownership.claim(session_id, org)
            yield from self.sessions.seen(session, at, call.exchange, org=org, order=self.order)
            yield from self.nonces.judge(session, call.exchange)

    # -- suspicions -------------------------------------------------------------------------

    def settle(
        self,
        status_of: Callable[[str, str], str | None],
        org_live: Callable[[str], int | None],
    ) -> list[Verdict]:
        """Settle every suspicion with reads: ``status_of(session_id, role)`` reads a session
        as its owner, ``org_live(role)`` counts the live sessions the role's organization
        lists (``None`` when it cannot tell)."""
        found: list[Verdict] = []
        pending, self.suspects = self.suspects, []
        for check in pending:
            role = check.role
            found += cap_rules.settle(
                check,
                self.sessions,
                functools.partial(_as, status_of, role=role),
                functools.partial(org_live, role),
            )
        return found

    # -- lists -----------------------------------------------------------------------------

    def _page(self, call: Call, caller: Caller) -> Iterator[Verdict]:
        """Every page of every list, judged the same way whatever the list."""
        extras = tuple(
            sorted(
                f"{k}={v}" for k, v in call.query.items() if k not in ("limit", "starting_after")
            )
        )
        scope: tuple[str, ...] = (call.operation, _org(caller), *call.params.values(), *extras)
        return self.lists.page(call, scope, self.readings)

    # -- avatars ---------------------------------------------------------------------------

    def _create_avatar(
        self, call: Call, caller: Caller, sent: float, at: float
    ) -> Iterator[Verdict]:
        exchange = call.exchange
        content_type = next(
            (v for k, v in exchange.request_headers.items() if k.lower() == "content-type"), ""
        )
        parts = form_parts(content_type, exchange.request_body)
        if parts is None:
            return
        image = next((p for p in parts if p.name == "image" and p.filename is not None), None)
        named = next((p for p in parts if p.name == "name"), None)
        if image is None:
            yield from self.avatars.judge_missing_image(exchange)
            return
        if not call.ok or not isinstance(call.answer, dict):
            return
        avatar_id = call.answer.get("id")
        if isinstance(avatar_id, str):
            self.ownership.claim(avatar_id, _org(caller))
            self.lists.add(("listAvatars", _org(caller)), avatar_id)
        name = named.content.decode("utf-8", "replace") if named is not None else None
        yield from self.avatars.upload(
            call.answer, _org(caller), name, is_portrait(image.content), exchange, at
        )

    def _avatars_seen(
        self, call: Call, caller: Caller, sent: float, at: float
    ) -> Iterator[Verdict]:
        if not call.ok:
            return
        for _, avatar in resources_in(call.operation, call.answer):
            avatar_id = avatar.get("id")
            if isinstance(avatar_id, str) and self.ownership.foreign(avatar_id, _org(caller)):
                continue
            yield from self.avatars.seen(avatar, _org(caller), call.exchange, at)
            shown = self.avatars.shown_to.get(avatar_id, ()) if isinstance(avatar_id, str) else ()
            if len(shown) > 1 and avatar_id not in self.avatars.uploaded:
                self.ownership.shared.add(str(avatar_id))

    # -- runs ------------------------------------------------------------------------------

    def _create_run(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        org = _org(caller)
        model = call.params.get("model_id", "")
        replay = call.idempotency_key is not None and self.idempotency.is_replay(
            org, "POST", call.exchange.path, call.idempotency_key, call.body, sent
        )
        if call.idempotency_key is not None:
            yield from self.idempotency.judge(
                org, "POST", call.exchange.path, call.idempotency_key, call.body, True,
                call.exchange, sent,
            )  # fmt: skip
        if replay or not call.ok or not isinstance(call.answer, dict):
            return  # a replay answers the original run as it was then
        run_id = call.answer.get("id")
        if isinstance(run_id, str):
            self.ownership.claim(run_id, org)
            self.lists.add(("listRuns", org), run_id)
            self.nonces.made(call.body, run_id)
        self._claim_assets(call.answer, org)
        yield from self.runs.created(model, call.answer, call.exchange)

    def _claim_assets(self, run: dict[str, Any], org: Org) -> None:
        outputs = run.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            asset = output.get("asset_id") if isinstance(output, dict) else None
            if isinstance(asset, str):
                self.ownership.claim(asset, org)
                self.assets.output_named(output)

    def _runs_seen(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        org = _org(caller)
        run_id = call.params.get("run_id", "")
        if call.operation == "deleteRun":
            if self.ownership.owner.get(run_id) == org:
                yield from self.runs.deletion(run_id, call.exchange)
                if call.status == 202:
                    self.usage.deletions += 1
            return
        if not call.ok:
            return
        if call.operation in ("retrieveRun", "getRunStatus"):
            what = "GET /v1/runs/{id}" if call.operation == "retrieveRun" else "the status poll"
            yield from self.runs.named(run_id, call.answer, call.exchange, what)
        if call.operation == "listRunEvents":
            after = call.query.get("starting_after")
            yield from self.runs.events(run_id, call.answer, after, self.readings, call.exchange)
            return
        if call.operation == "getRunStatus":
            return
        for _, run in resources_in(call.operation, call.answer):
            found = run.get("id")
            if isinstance(found, str) and self.ownership.foreign(found, org):
                continue
            if isinstance(found, str):
                self.ownership.claim(found, org)
            self._claim_assets(run, org)
            yield from self.runs.seen(run, call.exchange)
            yield from self.nonces.judge(run, call.exchange)

    def _assets(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        org = _org(caller)
        if call.operation == "listAssets":
            for _, asset in resources_in(call.operation, call.answer) if call.ok else ():
                found = asset.get("id")
                if isinstance(found, str) and not self.ownership.foreign(found, org):
                    self.ownership.claim(found, org)
                    yield from self.assets.listed(found, asset, call.exchange)
            return
        asset_id = call.params.get("asset_id", "")
        if call.operation == "getAssetContent" and self.ownership.owner.get(asset_id) == org:
            yield from self.assets.content(asset_id, call)

    # -- catalog, usage, quota -------------------------------------------------------------

    def _models(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        for _, model in resources_in(call.operation, call.answer) if call.ok else ():
            outputs = model.get("output_modalities")
            if isinstance(model.get("id"), str) and isinstance(outputs, list):
                self.media_models[model["id"]] = bool(_MEDIA & set(map(str, outputs)))
        return iter(())

    def _usage(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        return self.usage.answer(call)

    def _quota(self, call: Call, caller: Caller, sent: float, at: float) -> Iterator[Verdict]:
        if call.ok and isinstance(call.answer, dict):
            value = call.answer.get("can_start_session")
            self.can_start_session = value if isinstance(value, bool) else None
        return iter(())


def _as(status_of: Callable[[str, str], str | None], session_id: str, *, role: str) -> str | None:
    return status_of(session_id, role)


def _org(caller: Caller) -> Org:
    assert caller.org is not None
    return caller.org


Handler = Callable[[SeedModel, Call, Caller, float, float], Iterator[Verdict]]

_HANDLERS: dict[str, Handler] = {
    "createSession": SeedModel._create_session,
    "createPipecatSession": SeedModel._pipecat,
    "retrieveSession": SeedModel._sessions_seen,
    "endSession": SeedModel._sessions_seen,
    "listSessions": SeedModel._sessions_seen,
    "createAvatar": SeedModel._create_avatar,
    "retrieveAvatar": SeedModel._avatars_seen,
    "listAvatars": SeedModel._avatars_seen,
    "createRun": SeedModel._create_run,
    "retrieveRun": SeedModel._runs_seen,
    "listRuns": SeedModel._runs_seen,
    "getRunStatus": SeedModel._runs_seen,
    "listRunEvents": SeedModel._runs_seen,
    "deleteRun": SeedModel._runs_seen,
    "listAssets": SeedModel._assets,
    "getAssetContent": SeedModel._assets,
    "listModels": SeedModel._models,
    "getUsage": SeedModel._usage,
    "getQuota": SeedModel._quota,
}
