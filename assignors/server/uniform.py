"""KIP-848's server-side `uniform` assignor: Kafka 4.x's UniformAssignor, the same target for the same GroupSpec.

As Kafka's, it picks its builder from the group's subscription type: `uniform_homogeneous` when every member
subscribes to the same topics, `uniform_heterogeneous` otherwise. Each member's `owned_partitions` is its current
target assignment, read in the order it lists them. A subscription to a topic missing from the metadata raises
PartitionAssignorError. The result is a target, not a delivery plan: partitions go straight to their new owner,
and a coordinator that wants cooperative delivery revokes before it assigns, as KIP-848's reconciliation does.

Worked example (homogeneous, 7 partitions of t over A, B, C, which own t-[0, 1], t-[2, 3], t-[4, 5, 6]): quotas
are 3, 2, 2 in member order, so A keeps its two and takes one more, C keeps t-4 and t-5 and gives up t-6, which
goes to A: A t-[0, 1, 6], B t-[2, 3], C t-[4, 5]. Kafka gives the extra partition to the first members in order,
not to the members that already hold it, so here one partition moves where none had to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from assignors.api import Assignment, Cluster, GroupSpec, MemberSubscription, SubscriptionType
from assignors.server.uniform_heterogeneous import heterogeneous_assign
from assignors.server.uniform_homogeneous import homogeneous_assign


@dataclass(frozen=True)
class UniformAssignor:
    name: str = "uniform"
    kind: Literal["client", "server"] = "server"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        """Members in ascending member id order, as Kafka's own assignor tests give them."""
        return self.assign_group(cluster, GroupSpec.of(members))

    def assign_group(self, cluster: Cluster, group: GroupSpec) -> Assignment:
        """Kafka's `assign(groupSpec, describer)`: members in the spec's order, the builder the spec's subscription
        type names (the spec is trusted, as Kafka's is)."""
        if not group.members:
            return {}
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            return homogeneous_assign(cluster, group.members)
        return heterogeneous_assign(cluster, group.members)
