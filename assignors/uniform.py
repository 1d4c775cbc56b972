"""KIP-848's server-side `uniform` assignor: the coordinator's sticky, balanced target assignment.

Same goal as Java's UniformAssignor (balance first, then keep what members already own), built on the same two
builders as the client-side sticky assignor: homogeneous groups (everyone subscribes to the same topics) take the
vectorised constrained builder, heterogeneous ones the general builder. Each member's `owned_partitions` is its
current target assignment. The result is a target, not a delivery plan: partitions go straight to their new owner,
and a coordinator that wants cooperative delivery revokes before it assigns, as KIP-848's reconciliation does.
Unlike Java's homogeneous builder, the P % N extra partitions go to members that already hold them, so no
partition moves that need not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from assignors.api import Assignment, Cluster, MemberSubscription
from assignors.sticky import sticky_assign


@dataclass(frozen=True)
class UniformAssignor:
    name: str = "uniform"
    kind: Literal["client", "server"] = "server"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        return sticky_assign(cluster, members, [(m.owned_partitions, 0) for m in members], cooperative=False)
