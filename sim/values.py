"""The values a request may carry: JSON's, and only those every answer can carry back (GAP-ERR-6).

Python's ``json`` module reads more than JSON interoperates with: an escaped lone surrogate
(``"\\ud800"``) becomes a ``str`` that cannot be encoded as UTF-8, ``1e999`` becomes ``inf``, and
integers have no bound. Stored as they are, such values broke every later answer that included
them (a 500 on the object's list, ``Infinity`` in the JSON). A Python caller can pass anything at
all: a set, bytes, a key that is not a string. Every number must be finite and within the range
of an IEEE 754 double (about ±1.8e308), which JSON parsers everywhere can read; integers up to
that size are kept exactly, as the client sent them.

``check_values`` refuses all of it with 400 ``invalid_request`` naming the offending field's
dot-path (relative to the body for body fields, the parameter's name otherwise), before any
other check. ``Platform.call`` runs it for every operation, whichever door the request came
through, so the HTTP facade and the Python API refuse the same value with the same type, code,
param and message.

Codes: ``value.invalid_string`` (a string or key that is not Unicode text), ``value.invalid_number``
(NaN, an infinity, an integer beyond the range of a double), ``value.invalid_type`` (not a JSON
value at all, or a key that is not a string), ``value.too_deep`` (nested deeper than the limit).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any, Final

from sim.errors import InvalidRequest

__all__ = ["LARGEST_NUMBER", "check_values"]

LARGEST_NUMBER: Final = int(sys.float_info.max)
"""The largest magnitude a JSON number may have: the largest finite IEEE 754 double."""

#: Parameters whose value is raw bytes by design (the avatar upload's file).
_BINARY_PARAMS: Final = frozenset({"image"})
_BODY: Final = "body"


def check_values(params: Mapping[str, Any], *, max_depth: int) -> None:
    """Refuse the first value of ``params`` that is not a JSON value every answer can carry."""
    for name, value in params.items():
        if not isinstance(name, str):
            raise InvalidRequest(
                "value.invalid_type", "Parameter names must be strings.", param=None
            )
        if not (name in _BINARY_PARAMS and isinstance(value, bytes | bytearray)):
            _check(value, () if name == _BODY else (name,), max_depth)


def _check(root: Any, path: tuple[str, ...], max_depth: int) -> None:
    # Iterative, so a deeply nested value cannot exhaust the interpreter's stack.
    stack: list[tuple[Any, tuple[str, ...], int]] = [(root, path, 0)]
    while stack:
        value, where, depth = stack.pop()
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, str):
            _check_text(value, where, key=False)
        elif isinstance(value, int):
            if abs(value) > LARGEST_NUMBER:
                raise InvalidRequest(
                    "value.invalid_number",
                    f"{_subject(where)} is beyond the range of JSON numbers (±1.8e308).",
                    param=_param(where),
                )
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidRequest(
                    "value.invalid_number",
                    f"{_subject(where)} is not a finite number.",
                    param=_param(where),
                )
        elif isinstance(value, dict | list):
            if depth >= max_depth:
                raise InvalidRequest(
                    "value.too_deep",
                    f"{_subject(where)} nests deeper than {max_depth} levels.",
                    param=_param(where),
                )
            if isinstance(value, list):
                items = [(item, (*where, str(index))) for index, item in enumerate(value)]
            else:
                # Keys in sorted order: a JSON object has none, so two equal requests whose keys
                # were written in different orders get the same refusal.
                if not all(isinstance(key, str) for key in value):
                    raise InvalidRequest(
                        "value.invalid_type",
                        f"A key of {_subject(where, lower=True)} is not a string.",
                        param=_param(where),
                    )
                keys = sorted(value)
                for key in keys:
                    _check_text(key, where, key=True)
                items = [(value[key], (*where, key)) for key in keys]
            stack.extend((item, place, depth + 1) for item, place in reversed(items))
        else:
            raise InvalidRequest(
                "value.invalid_type",
                f"{_subject(where)} is not a JSON value ({type(value).__name__}).",
                param=_param(where),
            )


def _check_text(text: str, where: tuple[str, ...], *, key: bool) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code_point = ord(text[error.start])
        subject = f"A key of {_subject(where, lower=True)}" if key else _subject(where)
        raise InvalidRequest(
            "value.invalid_string",
            f"{subject} is not Unicode text: it holds the lone surrogate U+{code_point:04X}.",
            param=_param(where),
        ) from None


def _param(where: tuple[str, ...]) -> str | None:
    """The dot-path of ``where`` (keys are checked before a path goes through them, so it is
    always printable), or ``None`` for the body itself."""
    return ".".join(where) if where else None


def _subject(where: tuple[str, ...], *, lower: bool = False) -> str:
    param = _param(where)
    if param is not None:
        return f"`{param}`"
    return "the request body" if lower else "The request body"
