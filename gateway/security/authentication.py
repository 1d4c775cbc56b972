"""SASL on the gateway's listeners: which mechanisms are enabled, and one exchange per connection.

PLAIN checks a `username=password` file (`gateway.security.sasl`); SCRAM-SHA-256 and SCRAM-SHA-512 check the credentials
the gateway follows in `topic.scram.credentials` (`gateway.security.scram`, `gateway.security.topics`). A mechanism that
is not enabled is refused at the handshake with the enabled ones listed (UNSUPPORTED_SASL_MECHANISM, then the
connection is closed, as Kafka closes it); a failed exchange is SASL_AUTHENTICATION_FAILED and a closed
connection. The principal is `User:<name>` either way.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

from gateway.security.sasl import MECHANISM as PLAIN, PlainAuthenticator
from gateway.security.scram import MECHANISMS as SCRAM_CODES, AuthenticationFailed, ScramCredential, ScramExchange

SCRAM = tuple(SCRAM_CODES.values())
KNOWN = (PLAIN, *SCRAM)
MAX_RECEIVE_BYTES = 524_288
"""Kafka's `sasl.server.max.receive.size`: a larger frame before authentication closes the connection unread."""


class Exchange(Protocol):
    principal: str | None

    @property
    def complete(self) -> bool: ...

    def evaluate(self, token: bytes) -> bytes: ...


class PlainExchange:
    """PLAIN is one message: the token, checked against the users file; the answer is empty."""

    def __init__(self, users: PlainAuthenticator) -> None:
        self._users = users
        self.principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def evaluate(self, token: bytes) -> bytes:
        principal = self._users.authenticate(token)
        if principal is None:
            raise AuthenticationFailed("Authentication failed: invalid credentials")
        self.principal = principal
        return b""


class Authenticator:
    """The listeners' SASL settings. `credentials` is the SCRAM lookup, set once the gateway has read the
    credentials topic (before it serves)."""

    def __init__(self, mechanisms: Sequence[str], plain: PlainAuthenticator | None = None) -> None:
        unknown = [m for m in mechanisms if m not in KNOWN]
        if unknown or not mechanisms:
            raise ValueError(f"SASL mechanisms must be among {', '.join(KNOWN)}, got {', '.join(mechanisms)}")
        if PLAIN in mechanisms and plain is None:
            raise ValueError("SASL/PLAIN needs --sasl-users FILE")
        self.mechanisms = list(dict.fromkeys(mechanisms))
        self._plain = plain
        self.credentials: Callable[[str, str], ScramCredential | None] | None = None

    @property
    def scram(self) -> bool:
        return any(m in SCRAM for m in self.mechanisms)

    def start(self, mechanism: str) -> Exchange | None:
        """The exchange for a handshake's mechanism, None if it is not enabled here."""
        if mechanism not in self.mechanisms:
            return None
        if mechanism == PLAIN:
            return PlainExchange(self._plain)
        return ScramExchange(mechanism, self._lookup)

    def _lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials(user, mechanism) if self.credentials is not None else None
