"""The keys a target is reached with, named by role so a reproduction never prints a secret.

Roles (``api``, ``other_org``, ``runs_read``, ``runs_write``, ``revoked``, ``admin``) let a
printed ``curl`` say ``$API_KEY`` where the secret was.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ROLE_PLACEHOLDERS", "Credentials"]

#: The shell variable a reproduction names instead of each role's secret.
ROLE_PLACEHOLDERS: dict[str, str] = {
    "api": "$API_KEY",
    "other_org": "$OTHER_ORG_KEY",
    "runs_read": "$RUNS_READ_KEY",
    "runs_write": "$RUNS_WRITE_KEY",
    "revoked": "$REVOKED_KEY",
    "admin": "$SIM_ADMIN_TOKEN",
}


@dataclass(frozen=True, slots=True)
class Credentials:
    """The keys a run was given; every role but ``api`` is optional."""

    api: str
    other_org: str | None = None
    runs_read: str | None = None
    runs_write: str | None = None
    revoked: str | None = None
    admin: str | None = None

    def get(self, role: str) -> str | None:
        value = getattr(self, role, None)
        return value if isinstance(value, str) else None

    def secrets(self) -> dict[str, str]:
        """Each given secret mapped to its placeholder (for redaction)."""
        out: dict[str, str] = {}
        for role, placeholder in ROLE_PLACEHOLDERS.items():
            secret = self.get(role)
            if secret:
                out[secret] = placeholder
        return out
