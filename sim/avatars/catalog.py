"""The platform's stock avatars (RES-AV-1, GAP-AV-4).

Five avatars every organization can use: four ``realtime`` ones and ``av_stock_mock`` (runtime
``mock``, for tests that must not bill or render). Their ids are fixed (``av_stock_<name>``, not
ULIDs) so that docs, scenarios and customer code can name them; they are ``ready``, ``is_demo``
and were "created" at the epoch. The tuple's order is the catalog order lists show (GAP-AV-2).
"""

from __future__ import annotations

from sim.avatars.records import Avatar, RuntimeType

__all__ = ["STOCK_AVATARS", "STOCK_PREFIX", "stock_avatar"]

STOCK_PREFIX = "av_stock_"


def _stock(
    name: str,
    key: str,
    runtime_type: RuntimeType = "realtime",
    instructions: str | None = None,
    voice_instructions: str | None = None,
) -> Avatar:
    """A stock avatar: id ``av_stock_<key>``, ``ready``, a demo, created at the epoch; a
    ``realtime`` one speaks with the voice of its key, the ``mock`` one has none."""
    return Avatar(
        id=STOCK_PREFIX + key,
        name=name,
        status="ready",
        is_demo=True,
        runtime_type=runtime_type,
        created_at=0.0,
        voice=key if runtime_type == "realtime" else None,
        instructions=instructions,
        voice_instructions=voice_instructions,
    )


STOCK_AVATARS: tuple[Avatar, ...] = (
    _stock(
        "Aria",
        "aria",
        instructions="You are Aria, a friendly product guide. Keep answers short and concrete.",
        voice_instructions="Warm and upbeat, at a relaxed pace.",
    ),
    _stock(
        "Ben",
        "ben",
        instructions="You are Ben, a patient support agent. Ask one question at a time.",
        voice_instructions="Calm and clear, slightly slower than conversational speed.",
    ),
    _stock("Chloe", "chloe"),
    _stock("Dev", "dev"),
    _stock("Mock Avatar", "mock", runtime_type="mock"),
)

_BY_ID: dict[str, Avatar] = {avatar.id: avatar for avatar in STOCK_AVATARS}

#: The stock avatars sessions may use: all of them (each is ``ready`` from the start and never
#: changes), as a set so a create asks one membership question (a test holds it to ``usable``).
USABLE_STOCK_IDS: frozenset[str] = frozenset(a.id for a in STOCK_AVATARS if a.usable)


def stock_avatar(avatar_id: str) -> Avatar | None:
    """The stock avatar with this id, or ``None``."""
    return _BY_ID.get(avatar_id)
