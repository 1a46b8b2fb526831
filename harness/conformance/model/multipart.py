"""The parts of a ``multipart/form-data`` request body, as the model reads an avatar upload.

Why the standard library's MIME parser: a form body is a MIME multipart message, and
``email.parser`` reads one exactly (boundaries, headers, the ``name`` of each part) without a
hand-written scanner.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP

__all__ = ["Part", "form_parts", "is_portrait"]

_PNG = b"\x89PNG\r\n\x1a\n"
_JPEG = b"\xff\xd8\xff"


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    filename: str | None
    content: bytes


def form_parts(content_type: str, body: bytes) -> list[Part] | None:
    """The parts of a form body, or ``None`` when it is not a readable multipart form."""
    if not content_type.lower().startswith("multipart/form-data"):
        return None
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return None
    parts = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        filename = part.get_filename()
        payload = part.get_payload(decode=True)
        parts.append(Part(name, filename, payload if isinstance(payload, bytes) else b""))
    return parts


def is_portrait(content: bytes) -> bool:
    """Whether ``content`` is a PNG or JPEG image (by its signature)."""
    return content.startswith(_PNG) or content.startswith(_JPEG)
