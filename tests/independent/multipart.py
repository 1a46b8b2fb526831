"""A small ``multipart/form-data`` reader on the standard library's MIME parser.

Starlette's own form parser needs python-multipart, which this fixture does not depend on; the
avatar upload is the only multipart body in the API, and it is small.
"""

from __future__ import annotations

from dataclasses import dataclass
from email import policy
from email.parser import BytesParser


@dataclass(frozen=True)
class Part:
    name: str
    filename: str | None
    content_type: str | None
    data: bytes


def parse_form(content_type: str, body: bytes) -> dict[str, Part]:
    """Parts by field name (the first wins). Raises ValueError when it is not multipart."""
    if (
        not content_type.lower().startswith("multipart/form-data")
        or "boundary=" not in content_type
    ):
        raise ValueError("not multipart/form-data")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise ValueError("no parts")
    parts: dict[str, Part] = {}
    for sub in message.iter_parts():
        name = sub.get_param("name", header="content-disposition")
        if not isinstance(name, str) or name in parts:
            continue
        payload = sub.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        parts[name] = Part(name, sub.get_filename(), sub.get_content_type(), data)
    return parts
