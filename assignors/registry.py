"""Assignors by Kafka protocol name, so the coordinator and the client library pick one the way Kafka does.

`get(name)` looks among client-side assignors first (the classic protocol's names, which a group leader sees in
JoinGroup): `range`, `roundrobin`, `sticky`, `cooperative-sticky`. Server-side (KIP-848) assignors are addressed
with `kind="server"`: `get("uniform", kind="server")`, `get("range", kind="server")`. `uniform` exists only on the
server, so `get("uniform")` finds it too; `range` without a kind is the client-side one.
"""

from __future__ import annotations

from typing import Literal

from assignors.api import Assignor
from assignors.range import RangeAssignor
from assignors.roundrobin import RoundRobinAssignor
from assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from assignors.server.uniform import UniformAssignor

Kind = Literal["client", "server"]

_ASSIGNORS: dict[tuple[Kind, str], Assignor] = {
    (a.kind, a.name): a
    for a in (
        RangeAssignor(kind="client"),
        RoundRobinAssignor(),
        StickyAssignor(),
        CooperativeStickyAssignor(),
        UniformAssignor(),
        RangeAssignor(kind="server"),
    )
}


class UnknownAssignorError(KeyError):
    """No assignor under that protocol name (and kind)."""

    def __str__(self) -> str:
        return str(self.args[0])


def get(name: str, kind: Kind | None = None) -> Assignor:
    """The assignor for a Kafka protocol name; client-side first unless `kind` says otherwise."""
    for k in (kind,) if kind is not None else ("client", "server"):
        assignor = _ASSIGNORS.get((k, name))
        if assignor is not None:
            return assignor
    known = ", ".join(f"{n} ({k})" for k, n in _ASSIGNORS)
    of_kind = f" of kind {kind}" if kind else ""
    raise UnknownAssignorError(f"unknown partition assignor {name!r}{of_kind}; known: {known}")


def names(kind: Kind | None = None) -> tuple[str, ...]:
    """Protocol names, client-side first; with `kind`, only that side's."""
    return tuple(dict.fromkeys(n for k, n in _ASSIGNORS if kind is None or k == kind))
