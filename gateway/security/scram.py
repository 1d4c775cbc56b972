"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka runs them: credentials, their management, the
server's side of the exchange.

- A credential is what Kafka stores (its `UserScramCredentialRecord`): salt, iterations, StoredKey and ServerKey,
  never the password. AlterUserScramCredentials (KIP-554) carries the salt, iterations and SaltedPassword
  (Hi(password, salt, i)), from which the gateway derives the keys as Kafka's controller does; so the password
  never leaves the client either.
- `alter` and `describe` are Kafka's rules for those requests (ScramControlManager, ScramImage): iterations in
  4096-16384, DUPLICATE_RESOURCE for a user named twice, RESOURCE_NOT_FOUND for deleting what is not there,
  UNSUPPORTED_SASL_MECHANISM for an unknown mechanism, UNACCEPTABLE_CREDENTIAL for an empty user name.
- `ScramExchange` is one connection's exchange (client-first, server-first, client-final, server-final), done by
  `scramp`: any fault (unknown user, a proof that does not verify, a nonce that is not this exchange's, a message
  out of order or malformed) raises `AuthenticationFailed` and the connection is closed, as Kafka closes it.
  scramp refuses any authorization id in the GS2 header; Kafka accepts one equal to the user name (clients send
  none: librdkafka, kafka-python and Kafka's own leave it empty).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import scramp

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
"""Kafka's ScramMechanism type codes (AlterUserScramCredentials, DescribeUserScramCredentials)."""
CODES = {name: code for code, name in MECHANISMS.items()}
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384

NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93


class AuthenticationFailed(Exception):
    """The client could not be authenticated: SASL_AUTHENTICATION_FAILED, then the connection is closed."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_json(self) -> dict:
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key), "server_key": _b64(self.server_key),
                "iterations": self.iterations}

    @classmethod
    def from_json(cls, doc: Mapping) -> "ScramCredential":
        return cls(base64.b64decode(doc["salt"]), base64.b64decode(doc["stored_key"]),
                   base64.b64decode(doc["server_key"]), int(doc["iterations"]))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_salted_password(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    """The stored form, as Kafka's controller derives it from an upsertion (RFC 5802's ClientKey/ServerKey)."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, digest(client_key).digest(), server_key, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): what a client sends in an upsertion."""
    return hashlib.pbkdf2_hmac(_HASHES[mechanism]().name, password.encode("utf-8"), salt, iterations)


def from_password(mechanism: str, password: str, iterations: int = 8192, salt: bytes | None = None) -> ScramCredential:
    salt = salt or os.urandom(32)
    return from_salted_password(mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations)


# -- management (KIP-554) ------------------------------------------------------------------------------------------

Key = tuple[str, str]
"""(user, mechanism name)."""


@dataclass(frozen=True)
class Upsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class Deletion:
    name: str
    mechanism: int


def alter(current: Mapping[Key, ScramCredential], deletions: Iterable[Deletion], upsertions: Iterable[Upsertion]
          ) -> tuple[list[tuple[str, int, str | None]], dict[Key, ScramCredential | None]]:
    """Kafka's answer to AlterUserScramCredentials: (user, error code, message) per user, and the changes to
    store (None: delete). A user named twice in one request fails as a whole, as in Kafka."""
    errors: dict[str, tuple[int, str]] = {}
    deleting: dict[str, Deletion] = {}
    upserting: dict[str, Upsertion] = {}
    for d in deletions:
        if d.name in errors:
            continue
        if deleting.pop(d.name, None) is not None:
            errors[d.name] = (DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
            continue
        error = _check_user(d.name, d.mechanism)
        if error is None and (d.name, MECHANISMS[d.mechanism]) not in current:
            error = (RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if error:
            errors[d.name] = error
        else:
            deleting[d.name] = d
    for u in upsertions:
        if u.name in errors:
            continue
        if deleting.pop(u.name, None) is not None or upserting.pop(u.name, None) is not None:
            errors[u.name] = (DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
            continue
        error = _check_user(u.name, u.mechanism)
        if error is None and u.iterations < MIN_ITERATIONS:
            error = (UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif error is None and u.iterations > MAX_ITERATIONS:
            error = (UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if error:
            errors[u.name] = error
        else:
            upserting[u.name] = u
    results: list[tuple[str, int, str | None]] = []
    changes: dict[Key, ScramCredential | None] = {}
    for d in deleting.values():
        changes[(d.name, MECHANISMS[d.mechanism])] = None
        results.append((d.name, NONE, None))
    for u in upserting.values():
        mechanism = MECHANISMS[u.mechanism]
        changes[(u.name, mechanism)] = from_salted_password(mechanism, u.salt, u.salted_password, u.iterations)
        results.append((u.name, NONE, None))
    results.extend((name, code, message) for name, (code, message) in errors.items())
    return results, changes


def _check_user(name: str, mechanism: int) -> tuple[int, str] | None:
    if not name:
        return UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def describe(current: Mapping[Key, ScramCredential], users: list[str] | None) -> list[dict]:
    """DescribeUserScramCredentials' results (Kafka's ScramImage.describe): every user when none are named; a
    user named twice gets DUPLICATE_RESOURCE, one without credentials RESOURCE_NOT_FOUND."""
    if not users:
        names = {user: False for user, _ in current}
    else:
        names = {}
        for user in users:
            names[user] = user in names
    results = []
    for user, duplicate in sorted(names.items()):
        infos = [{"mechanism": CODES[m], "iterations": c.iterations} for (u, m), c in sorted(current.items())
                 if u == user]
        if duplicate:
            results.append({"user": user, "error_code": DUPLICATE_RESOURCE,
                            "error_message": f"Cannot describe SCRAM credentials for the same user twice in a "
                                             f"single request: {user}", "credential_infos": []})
        elif not infos:
            results.append({"user": user, "error_code": RESOURCE_NOT_FOUND,
                            "error_message": f"Attempt to describe a user credential that does not exist: {user}",
                            "credential_infos": []})
        else:
            results.append({"user": user, "error_code": NONE, "error_message": None, "credential_infos": infos})
    return results


# -- the server's side of one exchange -----------------------------------------------------------------------------


def sasl_name_to_user(name: str) -> str:
    """RFC 5802's saslname: `=2C` is a comma, `=3D` an equals sign (Kafka's ScramFormatter.username)."""
    return name.replace("=2C", ",").replace("=3D", "=")


class ScramExchange:
    """One connection's SCRAM exchange: `evaluate` each client message in turn; `principal` once complete."""

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramCredential | None],
                 server_nonce: str | None = None) -> None:
        """`server_nonce`: fixed only to replay a published exchange; by default a fresh random one."""
        self.mechanism = mechanism
        self._lookup = lookup
        self._server = scramp.ScramMechanism(mechanism).make_server(self._auth_info, s_nonce=server_nonce)
        self._user: str | None = None
        self.principal: str | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    def _auth_info(self, sasl_name: str) -> tuple[bytes, bytes, bytes, int]:
        user = sasl_name_to_user(sasl_name)
        credential = self._lookup(user, self.mechanism)
        if credential is None:
            raise AuthenticationFailed("Authentication failed: Invalid user credentials")
        if credential.iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(f"Iterations {credential.iterations} is less than the minimum "
                                       f"{MIN_ITERATIONS} for {self.mechanism}")
        self._user = user
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to the client's next message."""
        if self.complete:
            raise AuthenticationFailed("Unexpected SASL message after the exchange completed")
        try:
            message = token.decode("utf-8")
            if self._user is None:
                self._server.set_client_first(message)
                return self._server.get_server_first().encode("utf-8")
            self._server.set_client_final(message)
            final = self._server.get_server_final().encode("utf-8")
        except AuthenticationFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - scramp's ScramException and malformed input alike
            raise AuthenticationFailed(f"Authentication failed: {exc}") from None
        self.principal = f"User:{self._user}"
        return final

