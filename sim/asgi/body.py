"""Reading request bodies defensively: size, media type, encoding, JSON, multipart.

Everything a client can get wrong before a body even reaches schema validation answers 400
``invalid_request`` with a stable code (GAP-ERR-1): over the size limit ``body.too_large`` (read
no further than one byte past the limit), an undeclared media type ``content_type.unsupported``,
bytes that are not UTF-8 ``body.invalid_utf8``, text that is not JSON ``body.malformed_json``,
JSON that is not an object ``body.not_object``.

Multipart bodies (the avatar upload) are parsed with the standard library's MIME parser, so the
facade needs no extra dependency; a part is a name, an optional filename and content type, and
its bytes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from sim.errors import InvalidRequest

__all__ = ["Part", "media_type_of", "parse_json", "parse_multipart", "read_body"]

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class Part:
    """One field of a multipart form."""

    name: str
    data: bytes
    filename: str | None
    content_type: str | None


async def read_body(receive: Receive, limit: int, declared_length: str | None) -> bytes:
    """The whole body, refusing anything over ``limit`` bytes without buffering it all."""
    if (
        declared_length is not None
        and declared_length.strip().isdigit()
        and int(declared_length) > limit
    ):
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message.get("type") == "http.disconnect":
            break
        chunk = bytes(message.get("body", b""))
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        more = bool(message.get("more_body", False))
    return b"".join(chunks)


def _too_large(limit: int) -> InvalidRequest:
    return InvalidRequest("body.too_large", f"The request body exceeds {limit} bytes.")


def media_type_of(content_type: str | None) -> tuple[str | None, dict[str, str]]:
    """``("application/json", {"charset": "utf-8"})`` from a ``Content-Type`` header."""
    if content_type is None or not content_type.strip():
        return None, {}
    head, *rest = content_type.split(";")
    params: dict[str, str] = {}
    for item in rest:
        key, _, value = item.partition("=")
        params[key.strip().lower()] = value.strip().strip('"')
    return head.strip().lower(), params


def parse_json(raw: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes, or the 400 that says what was wrong."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("body.invalid_utf8", "The request body is not valid UTF-8.") from None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise InvalidRequest("body.malformed_json", "The request body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise InvalidRequest("body.not_object", "The request body must be a JSON object.")
    return value


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise.
    raise ValueError(name)


def parse_multipart(raw: bytes, content_type: str) -> list[Part]:
    """The parts of a ``multipart/form-data`` body; 400 when it cannot be read."""
    _, params = media_type_of(content_type)
    if not params.get("boundary"):
        raise InvalidRequest("body.malformed_multipart", "The multipart body has no boundary.")
    header = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    try:
        message = BytesParser(policy=HTTP).parsebytes(header + raw)
    except Exception:  # the MIME parser is lenient; anything it raises is a malformed body
        raise InvalidRequest(
            "body.malformed_multipart", "The multipart body is malformed."
        ) from None
    if not message.is_multipart() or message.defects:
        raise InvalidRequest("body.malformed_multipart", "The multipart body is malformed.")
    parts: list[Part] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        declared = part.get("content-type")
        media = str(declared) if declared is not None else None
        parts.append(Part(name=name, data=data, filename=filename, content_type=media))
    return parts
