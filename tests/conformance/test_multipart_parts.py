"""Negative cases may put any JSON value where a file belongs; the harness still sends them."""

from __future__ import annotations

import io

import pytest

from harness.conformance.fuzz import _files


@pytest.mark.req("HAR-2")
def test_non_file_parts_are_sent_as_their_json_text() -> None:
    stream = io.BytesIO(b"x")
    assert _files(None) is None
    assert _files({"image": 7}) == [("image", b"7")]
    assert _files([("image", ("a.png", [1, 2], "image/png"))]) == [
        ("image", ("a.png", b"[1, 2]", "image/png"))
    ]
    assert _files({"image": b"raw", "name": "n", "f": stream}) == [
        ("image", b"raw"),
        ("name", "n"),
        ("f", stream),
    ]
