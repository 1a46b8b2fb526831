"""Request parsing and field checks shared by the endpoints.

Validation failures become the reading's validation error (400 ``invalid_request`` or 422
``unprocessable``) with ``param`` as the dot-path of the offending field. Malformed JSON is a
plain 400 in both readings: nothing can be validated in a body that does not parse.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from .errors import bad_request, invalid
from .readings import Reading


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_object(raw: bytes, reading: Reading, *, allow_empty: bool = False) -> dict:
    if not raw.strip():
        if allow_empty:
            return {}
        raise invalid(reading, "body.missing", "A JSON object body is required.")
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad_request("body.invalid_json", f"The body is not valid JSON: {exc}.") from None
    if not isinstance(value, dict):
        raise invalid(reading, "body.not_object", "The body must be a JSON object.")
    return value


def refuse_unknown(body: Mapping[str, Any], known: set[str], reading: Reading) -> None:
    if reading.unknown_body_fields != "refuse":
        return
    for name in body:
        if name not in known:
            raise invalid(reading, "parameter.unknown", f"Unknown field {name!r}.", name)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def int_field(
    body: Mapping[str, Any],
    name: str,
    lo: int,
    hi: int,
    default: int,
    reading: Reading,
    *,
    param: str | None = None,
) -> int:
    param = param or name
    if name not in body or body[name] is None:
        return default
    value = body[name]
    if not is_int(value):
        raise invalid(reading, "parameter.invalid_type", f"{param} must be an integer.", param)
    if not lo <= value <= hi:
        raise invalid(
            reading, "parameter.out_of_range", f"{param} must be between {lo} and {hi}.", param
        )
    return value


def str_field(
    body: Mapping[str, Any],
    name: str,
    reading: Reading,
    *,
    required: bool = False,
    max_len: int = 255,
    param: str | None = None,
) -> str | None:
    param = param or name
    value = body.get(name)
    if value is None:
        if required:
            raise invalid(reading, "parameter.missing", f"{param} is required.", param)
        return None
    if not isinstance(value, str):
        raise invalid(reading, "parameter.invalid_type", f"{param} must be a string.", param)
    if required and not value:
        raise invalid(reading, "parameter.missing", f"{param} must not be empty.", param)
    if len(value) > max_len:
        raise invalid(
            reading, "parameter.too_long", f"{param} is at most {max_len} characters.", param
        )
    return value


def enum_field(
    body: Mapping[str, Any],
    name: str,
    allowed: tuple[str, ...],
    default: str,
    reading: Reading,
    *,
    param: str | None = None,
) -> str:
    param = param or name
    value = body.get(name)
    if value is None:
        return default
    if value not in allowed:
        raise invalid(
            reading,
            "parameter.invalid_value",
            f"{param} must be one of {', '.join(allowed)}.",
            param,
        )
    return value


def query_limit(
    query: Mapping[str, str],
    reading: Reading,
    *,
    default: int,
    hi: int = 100,
    lo: int = 1,
    name: str = "limit",
    refuse_at_or_above: int | None = None,
) -> int:
    """Page size: out-of-range values are refused or clamped, by reading.

    ``lo`` can be lowered and ``refuse_at_or_above`` set only by a deliberate fault.
    """
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise invalid(
            reading, "parameter.invalid_type", f"{name} must be an integer.", name
        ) from None
    if refuse_at_or_above is not None and value >= refuse_at_or_above:
        raise invalid(reading, "parameter.out_of_range", f"{name} is too large.", name)
    if lo <= value <= hi:
        return value
    if reading.page_size_policy == "clamp":
        return max(1, min(hi, value))
    raise invalid(reading, "parameter.out_of_range", f"{name} must be between {lo} and {hi}.", name)


def parse_timestamp(raw: str, name: str, reading: Reading) -> datetime:
    text = raw.strip()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise invalid(
            reading, "parameter.invalid_timestamp", f"{name} must be ISO-8601 UTC.", name
        ) from None
    if moment.tzinfo is None:
        if reading.naive_timestamps == "refuse":
            raise invalid(
                reading, "parameter.invalid_timestamp", f"{name} must carry a UTC zone.", name
            )
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
