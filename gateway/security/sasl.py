"""SASL/PLAIN on the gateway's listeners: users and passwords from a file, principals as Kafka names them.

The file is a properties file, one `username=password` per line (`#` comments), read at start. A client that
authenticates as `alice` acts as principal `User:alice`, which the gateway stamps on every control request
(docs/wire-format.md, "Members and principals").
"""

from __future__ import annotations

import hmac
from pathlib import Path

from state.api import read_properties

MECHANISM = "PLAIN"


class PlainAuthenticator:
    def __init__(self, users: dict[str, str]) -> None:
        if not users:
            raise ValueError("SASL/PLAIN needs at least one user")
        self._users = users

    @classmethod
    def from_file(cls, path: Path) -> "PlainAuthenticator":
        return cls(read_properties(path))

    def authenticate(self, token: bytes) -> str | None:
        """The principal of a PLAIN token (`authzid NUL authcid NUL password`, RFC 4616), None if refused. An
        authorization id other than the user's own is refused, as Kafka's PLAIN server does."""
        try:
            authzid, username, password = token.decode("utf-8").split("\0")
        except (UnicodeDecodeError, ValueError):
            return None
        expected = self._users.get(username)
        if expected is None or (authzid and authzid != username):
            return None
        if not hmac.compare_digest(expected.encode("utf-8"), password.encode("utf-8")):
            return None
        return f"User:{username}"
