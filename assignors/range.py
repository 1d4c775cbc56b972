"""Range assignment: per topic, contiguous blocks of partitions to the topic's subscribers in Kafka member order.

Client-side `range` (Java's RangeAssignor, KIP-881 rack-aware when racks are known) and server-side `range`
(KIP-848's coordinator RangeAssignor) give the same ranges without racks; both ignore the current assignment, and
static members keep their ranges across restarts because the order uses group.instance.id.

Worked example (C0, C1 subscribe to t0 and t1, three partitions each): 3 // 2 = 1 each and the first 3 % 2 = 1
subscriber gets one more, so C0: t0-[0, 1], t1-[0, 1]; C1: t0-[2], t1-[2].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from assignors.api import Assignment, Cluster, MemberSubscription
from assignors.partition_space import member_order_key
from assignors.rack_range import rack_aware_range, use_rack_aware


def _subscribers_by_topic(cluster: Cluster, members: Sequence[MemberSubscription]) -> dict[str, list[str]]:
    """Subscribers of each existing topic (more than 0 partitions), in Kafka member order."""
    subscribers: dict[str, list[str]] = {}
    for member in sorted(members, key=member_order_key):
        for topic in dict.fromkeys(member.topics):
            if cluster.partitions_per_topic.get(topic, 0) > 0:
                subscribers.setdefault(topic, []).append(member.member_id)
    return subscribers


def plain_range(cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
    """The non-rack range assignment; every member present, topics ascending in each member's list."""
    per_member: dict[str, list[tuple[str, tuple[int, ...]]]] = {m.member_id: [] for m in members}
    subscribers = _subscribers_by_topic(cluster, members)
    for topic in sorted(subscribers):
        consumers = subscribers[topic]
        quota, extra = divmod(cluster.partitions_per_topic[topic], len(consumers))
        for i, member_id in enumerate(consumers):
            start = quota * i + min(i, extra)
            length = quota + (1 if i < extra else 0)
            if length:
                per_member[member_id].append((topic, tuple(range(start, start + length))))
    return {m: tuple(tps) for m, tps in per_member.items()}


@dataclass(frozen=True)
class RangeAssignor:
    """Kafka's `range`. The client-side one turns rack-aware (KIP-881) when members send racks and some partition
    lacks a replica on some member's rack; the server-side one (KIP-848) never does."""

    kind: Literal["client", "server"] = "client"
    name: str = "range"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        if self.kind == "client" and use_rack_aware(cluster, members):
            return rack_aware_range(cluster, members)
        return plain_range(cluster, members)
