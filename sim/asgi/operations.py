"""The ``/v1`` surface: read one request, call the platform once, serialise the outcome.

``OperationsApp`` is an ASGI app built from the ``RouteTable``. For each request, in this order:

1. match the path (404 ``route.not_found``) and the method (405 ``method.not_allowed`` with
   ``Allow``);
2. authenticate unless the operation is public (401 with the account registry's code);
3. read what only HTTP has, inside ``platform.call`` (after the rate limiter, so a request it
   cannot read counts like any other, SIM-7): path values as they are (an id of the wrong shape is
   simply one the domain does not know: 404, GAP-ERR-5), query parameters (unknown names 422
   ``validation.unknown_parameter``, then each coerced to its schema's type), header parameters,
   and the body: size, media type, encoding, JSON or multipart (400s); an empty body is no body;
4. ``platform.call(operation_id, caller, params, check=...)``: the domain checks the values and
   the request exactly as for a Python caller, so both doors refuse alike (same type, code,
   param and message: SIM-7); ``check`` is this facade's schema validation, with bounds from the
   running configuration (``sim.asgi.configured``), which the platform runs after the domain's
   checks and before anything changes: a last guard that the answer keeps to the published spec;
5. the response: the spec's 2xx status, JSON or raw bytes, ``X-RateLimit-*`` and
   ``Idempotent-Replayed`` as the outcome says;
6. with a ``RequestLog`` (served with an admin token), one entry per request, refusals included:
   its id, status, code, key handle and the resource it touched (``sim.asgi.request_log``).

Refusals are raised as ``DomainError`` and rendered by the app's one exception handler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sim.accounts import Caller
from sim.asgi.body import media_type_of, parse_json, parse_multipart, read_body
from sim.asgi.context import request_id_of
from sim.asgi.envelope import json_response, rate_headers, status_of
from sim.asgi.request_log import LoggedRequest, RequestLog, key_id_of, resource_of
from sim.asgi.routes import Parameter, Route, RouteTable
from sim.asgi.validation import Failure, coerce
from sim.errors import DomainError, InvalidRequest, NotFound, Unprocessable
from sim.platform import Outcome, Platform

__all__ = ["MethodNotAllowed", "OperationsApp"]

#: Parameters whose refusal the contract names with a code of its own (GAP-ERR-1).
_PARAMETER_CODES: Mapping[str, str] = {"idempotency-key": "idempotency_key.invalid"}
_MULTIPART = "multipart/form-data"
_BINARY_HINTS = ("contentMediaType", "contentEncoding")


class MethodNotAllowed(InvalidRequest):
    """405: the path exists, the method does not; ``allow`` lists the methods that do."""

    def __init__(self, method: str, allow: tuple[str, ...]) -> None:
        super().__init__("method.not_allowed", f"{method} is not allowed here.")
        self.allow = allow


class OperationsApp:
    def __init__(
        self, platform: Platform, table: RouteTable, requests: RequestLog | None = None
    ) -> None:
        self.platform = platform
        self.table = table
        self.requests = requests
        limits = platform.config.limits
        self._json_limit = limits.request_body_max_bytes
        # An upload carries an image of up to its own limit; the form around it gets the usual
        # request allowance on top (decision noted in the facade's report).
        self._multipart_limit = platform.config.avatars.image_max_bytes + self._json_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.requests is None:
            await self._answer(scope, receive, send, _Seen())
            return
        seen = _Seen()
        try:
            await self._answer(scope, receive, send, seen)
        except DomainError as error:
            self._log(scope, seen, status_of(error), error.code)
            raise
        except Exception:
            self._log(scope, seen, 500, "internal_error")
            raise
        self._log(scope, seen, seen.status, None)

    def _log(self, scope: Scope, seen: _Seen, status: int, code: str | None) -> None:
        assert self.requests is not None
        headers = Headers(scope=scope)
        caller = seen.caller
        self.requests.add(
            LoggedRequest(
                at=self.platform.clock.now,
                request_id=request_id_of(scope),
                method=str(scope["method"]),
                path=str(scope["path"]),
                operation_id=seen.operation_id,
                status=status,
                code=code,
                key_id=key_id_of(headers.get("authorization"), caller),
                org_id=None if caller is None else caller.org_id,
                resource_id=resource_of(seen.path_values, seen.body),
                replayed=seen.replayed,
            )
        )

    async def _answer(self, scope: Scope, receive: Receive, send: Send, seen: _Seen) -> None:
        route, path_values = self._route(scope)
        seen.operation_id, seen.path_values = route.operation_id, path_values
        headers = Headers(scope=scope)
        caller = None if route.public else self.platform.authenticate(headers.get("authorization"))
        seen.caller = caller
        raw = await self._read_body(route, headers, receive)
        read: list[_Schemaed] = []

        def parse() -> dict[str, Any]:
            params: dict[str, Any] = dict(path_values)
            params.update(self._query(route, scope, read))
            params.update(self._headers(route, headers, read))
            params.update(self._body(route, headers, raw, read))
            return params

        def check(params: dict[str, Any]) -> None:
            for value, schema_pointer, refuse in read:
                failures = self.table.schemas.failures(value, schema_pointer)
                if failures:
                    raise refuse(failures[0])

        outcome = self.platform.call(route.operation_id, caller, parse, check=check)
        seen.status, seen.body, seen.replayed = route.success_status, outcome.body, outcome.replayed
        response = self._respond(route, outcome, request_id_of(scope))
        await response(scope, receive, send)

    # -- routing ------------------------------------------------------------------------------

    def _route(self, scope: Scope) -> tuple[Route, dict[str, str]]:
        found = self.table.match(str(scope["path"]))
        if found is None:
            raise NotFound("route.not_found", f"No route for {scope['path']}.")
        template, values = found
        route = template.routes.get(str(scope["method"]).upper())
        if route is None:
            raise MethodNotAllowed(str(scope["method"]), tuple(template.routes))
        return route, values

    # -- parameters ---------------------------------------------------------------------------

    def _query(self, route: Route, scope: Scope, read: list[_Schemaed]) -> dict[str, Any]:
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="replace")
        known = {p.name: p for p in route.parameters_in("query")}
        grouped: dict[str, list[str]] = {}
        for name, value in pairs:
            if name not in known:
                raise Unprocessable(
                    "validation.unknown_parameter", f"Unknown query parameter {name!r}.", param=name
                )
            grouped.setdefault(name, []).append(value)
        params: dict[str, Any] = {}
        for name, parameter in known.items():
            raws = grouped.get(name)
            if raws is None:
                if parameter.required:
                    raise Unprocessable("validation.required", f"{name} is required.", param=name)
                continue
            if len(raws) > 1 and parameter.schema.get("type") != "array":
                raise Unprocessable(
                    "validation.type", f"{name} is given more than once.", param=name
                )
            value = self._typed(parameter, raws)
            read.append((value, parameter.schema_pointer, _parameter_refusal(parameter)))
            params[name] = value
        return params

    def _headers(self, route: Route, headers: Headers, read: list[_Schemaed]) -> dict[str, Any]:
        params: dict[str, Any] = {}
        for parameter in route.parameters_in("header"):
            raws = headers.getlist(parameter.name)
            if not raws:
                if parameter.required:
                    raise _parameter_refusal(parameter)(
                        Failure(
                            "validation.required",
                            parameter.name,
                            f"The {parameter.name} header is required.",
                            "required",
                            {},
                            (),
                        )
                    )
                continue
            value = self._typed(parameter, raws)
            read.append((value, parameter.schema_pointer, _parameter_refusal(parameter)))
            params[_param_key(parameter.name)] = value
        return params

    @staticmethod
    def _typed(parameter: Parameter, raws: list[str]) -> Any:
        if parameter.schema.get("type") == "array":
            items = parameter.schema.get("items") or {}
            return [coerce(raw, items) for raw in raws]
        if len(raws) > 1:
            return raws  # a repeated scalar: reported as a type error by the schema
        return coerce(raws[0], parameter.schema)

    # -- body ---------------------------------------------------------------------------------

    async def _read_body(self, route: Route, headers: Headers, receive: Receive) -> bytes | None:
        """The raw body (``None`` for operations that take none): reading is I/O, so it happens
        before ``platform.call``; what the body means is decided by ``_body`` inside it."""
        if route.body is None:
            return None  # operations without a body ignore whatever was sent
        media, _ = media_type_of(headers.get("content-type"))
        limit = self._multipart_limit if media == _MULTIPART else self._json_limit
        return await read_body(receive, limit, headers.get("content-length"))

    def _body(
        self, route: Route, headers: Headers, raw: bytes | None, read: list[_Schemaed]
    ) -> dict[str, Any]:
        spec = route.body
        if spec is None or raw is None:
            return {}
        if not raw.strip():
            # No body, whatever the Content-Type says: the domain decides whether one is
            # required (422 validation.required, GAP-ERR-5), exactly as for a Python caller.
            return {}
        content_type = headers.get("content-type")
        media, options = media_type_of(content_type)
        schema_pointer = spec.schema_for(media or "")
        if media is None or schema_pointer is None:
            accepted = ", ".join(spec.media_types)
            raise InvalidRequest("content_type.unsupported", f"Send the body as {accepted}.")
        if media == _MULTIPART:
            return self._multipart(raw, str(content_type), schema_pointer, read)
        if options.get("charset", "utf-8").lower() not in ("utf-8", "utf8"):
            raise InvalidRequest("content_type.unsupported", "JSON bodies must be UTF-8.")
        body = parse_json(raw)
        read.append((body, schema_pointer, _unprocessable))
        return {"body": body}

    def _multipart(
        self, raw: bytes, content_type: str, schema_pointer: str, read: list[_Schemaed]
    ) -> dict[str, Any]:
        schema = self.table.schemas.resolve(self.table.schemas.at(schema_pointer))
        fields = {
            name: self.table.schemas.resolve(field)
            for name, field in (schema.get("properties") or {}).items()
        }
        instance: dict[str, Any] = {}
        params: dict[str, Any] = {}
        for part in parse_multipart(raw, content_type):
            if part.name not in fields:
                raise Unprocessable(
                    "validation.unknown_field",
                    f"{part.name} is not a known field.",
                    param=part.name,
                )
            field = fields[part.name]
            if _is_binary(field):
                params[part.name] = part.data
                params[f"{part.name}_filename"] = part.filename
                params[f"{part.name}_content_type"] = part.content_type
                instance[part.name] = part.filename or "file"
                continue
            try:
                text = part.data.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidRequest(
                    "body.invalid_utf8", f"{part.name} is not valid UTF-8.", param=part.name
                ) from None
            value = coerce(text, field) if field.get("type") not in (None, "string") else text
            instance[part.name] = value
            params[part.name] = value
        read.append((instance, schema_pointer, _unprocessable))
        return params

    # -- response -----------------------------------------------------------------------------

    def _respond(self, route: Route, outcome: Outcome, request_id: str) -> Response:
        headers = {"X-Request-Id": request_id}
        if outcome.rate is not None:
            headers.update(rate_headers(outcome.rate, self.platform.clock.unix_seconds))
        if outcome.replayed:
            headers["Idempotent-Replayed"] = "true"
        if isinstance(outcome.body, bytes):
            return Response(
                outcome.body,
                status_code=route.success_status,
                headers=headers,
                media_type=outcome.media_type,
            )
        return json_response(outcome.body, route.success_status, headers)


class _Seen:
    """What answering one request learnt, for its entry in the request log."""

    __slots__ = ("body", "caller", "operation_id", "path_values", "replayed", "status")

    def __init__(self) -> None:
        self.operation_id: str | None = None
        self.path_values: Mapping[str, str] = {}
        self.caller: Caller | None = None
        self.status = 200
        self.body: object = None
        self.replayed = False


_Schemaed = tuple[Any, str, Callable[[Failure], DomainError]]
"""A value read from the request, the pointer of its schema, and how a failure is refused."""


def _unprocessable(failure: Failure) -> DomainError:
    return Unprocessable(failure.code, failure.message, param=failure.param)


def _parameter_refusal(parameter: Parameter) -> Callable[[Failure], DomainError]:
    """Parameters whose refusal the contract names with a code of its own keep it (GAP-ERR-1)."""

    def refuse(failure: Failure) -> DomainError:
        code = _PARAMETER_CODES.get(parameter.key, failure.code)
        return Unprocessable(code, f"{parameter.name}: {failure.message}", param=parameter.name)

    return refuse


def _param_key(header: str) -> str:
    """``Idempotency-Key`` → ``idempotency_key``: the name ``Platform.call`` expects."""
    return header.lower().replace("-", "_")


def _is_binary(field: Mapping[str, Any]) -> bool:
    return field.get("format") == "binary" or any(hint in field for hint in _BINARY_HINTS)
