"""Range assignment: per topic, contiguous blocks of partitions to the topic's subscribers in Kafka member order.

Client-side `range` (Java's RangeAssignor, KIP-881 rack-aware when racks are known) and server-side `range`
(KIP-848's coordinator RangeAssignor) give the same ranges without racks; both ignore the current assignment, and
static members keep their ranges across restarts because the order uses group.instance.id.

The server-side one, like Kafka's, raises PartitionAssignorError for a subscription to a topic the metadata does
not have, and trusts the GroupSpec's subscription type: a homogeneous group's topics are read from its first
member only.

Worked example (C0, C1 subscribe to t0 and t1, three partitions each): 3 // 2 = 1 each and the first 3 % 2 = 1
subscriber gets one more, so C0: t0-[0, 1], t1-[0, 1]; C1: t0-[2], t1-[2].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from assignors.api import Assignment, Cluster, GroupSpec, MemberSubscription, SubscriptionType, distinct_subscriptions
from assignors.partition_space import gc_paused, member_order_key, require_topics
from assignors.rack_range import rack_aware_range, use_rack_aware


def _subscribers_by_topic(cluster: Cluster, members: Sequence[MemberSubscription]) -> dict[str, list[str]]:
    """Subscribers of each existing topic (more than 0 partitions), in Kafka member order.

    Members with the same topic set are grouped first; a topic only one group subscribes to shares that group's
    list, so a uniform group of 2,000 members on 100 topics costs 100 dict entries, not 200,000 appends."""
    ordered = sorted(members, key=member_order_key)
    groups: dict[frozenset[str], list[str]] = {}
    for member in ordered:
        groups.setdefault(frozenset(member.topics), []).append(member.member_id)
    subscribers: dict[str, list[str]] = {}
    merged: set[str] = set()
    for topics, ids in groups.items():
        for topic in topics:
            if cluster.partitions_per_topic.get(topic, 0) <= 0:
                continue
            if topic not in subscribers:
                subscribers[topic] = ids
            elif topic in merged:
                subscribers[topic].extend(ids)
            else:
                subscribers[topic] = subscribers[topic] + ids
                merged.add(topic)
    if merged:
        position = {m.member_id: i for i, m in enumerate(ordered)}
        for topic in merged:
            subscribers[topic].sort(key=position.__getitem__)
    return subscribers


def _homogeneous_subscribers(cluster: Cluster, members: Sequence[MemberSubscription]) -> dict[str, list[str]]:
    """Every member subscribes to the first member's topics: one shared list, no scan of the others."""
    ordered = [m.member_id for m in sorted(members, key=member_order_key)]
    return {t: ordered for t in dict.fromkeys(members[0].topics) if cluster.partitions_per_topic.get(t, 0) > 0}


def _ranges(count: int, consumers: int) -> list[tuple[int, ...]]:
    """The contiguous blocks of `count` partitions for `consumers` subscribers: the first count % consumers get one
    more."""
    quota, extra = divmod(count, consumers)
    return [tuple(range(quota * i + min(i, extra), quota * (i + 1) + min(i + 1, extra))) for i in range(consumers)]


def plain_range(
    cluster: Cluster, members: Sequence[MemberSubscription], subscribers: dict[str, list[str]] | None = None
) -> Assignment:
    """The non-rack range assignment; every member present, topics ascending in each member's list. Topics with
    the same subscribers and partition count share one list of blocks, dealt out per member in one step."""
    per_member: dict[str, list[tuple[str, tuple[int, ...]]]] = {m.member_id: [] for m in members}
    shapes: dict[tuple[int, int], tuple[list[str], list[str]]] = {}
    if subscribers is None:
        subscribers = _subscribers_by_topic(cluster, members)
    for topic, consumers in sorted(subscribers.items()):
        shape = (id(consumers), cluster.partitions_per_topic[topic])
        shapes.setdefault(shape, (consumers, []))[1].append(topic)
    with gc_paused():
        for (_, count), (consumers, topics) in shapes.items():
            for member_id, block in zip(consumers, _ranges(count, len(consumers))):
                if block:
                    per_member[member_id].extend([(topic, block) for topic in topics])
        if len(shapes) > 1:
            for tps in per_member.values():
                tps.sort()
        return {m: tuple(tps) for m, tps in per_member.items()}


@dataclass(frozen=True)
class RangeAssignor:
    """Kafka's `range`. The client-side one turns rack-aware (KIP-881) when members send racks and some partition
    lacks a replica on some member's rack; the server-side one (KIP-848) never does."""

    kind: Literal["client", "server"] = "client"
    name: str = "range"
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...] = ("EAGER",)

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment:
        if self.kind == "server":
            return self.assign_group(cluster, GroupSpec.of(members))
        if use_rack_aware(cluster, members):
            return rack_aware_range(cluster, members)
        return plain_range(cluster, members)

    def assign_group(self, cluster: Cluster, group: GroupSpec) -> Assignment:
        """The server-side assignment for Kafka's GroupSpec (its member order does not matter: range sorts)."""
        members = group.members
        if not members:
            return {}
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            require_topics(cluster.partitions_per_topic, members[0].topics)
            return plain_range(cluster, members, _homogeneous_subscribers(cluster, members))
        for topics in distinct_subscriptions(members):
            require_topics(cluster.partitions_per_topic, topics)
        return plain_range(cluster, members)
