"""The one interface every assignor shares, so the coordinator and the client pick one by name.

An assignor is a pure function of the cluster's partition counts and the members' subscriptions. Client-side
assignors (`range`, `roundrobin`, `sticky`, `cooperative-sticky`) run in the group leader, as in Kafka's classic
protocol; server-side assignors (`uniform`, `range` in KIP-848) run in the coordinator. Both take the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal, Mapping, Protocol, Sequence

from assignors.consumer_protocol import TopicPartitions


@dataclass(frozen=True)
class MemberSubscription:
    """What one member told the group: its subscription decoded from JoinGroup metadata, plus its ids."""

    member_id: str
    topics: tuple[str, ...]
    group_instance_id: str | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    user_data: bytes | None = None


@dataclass(frozen=True)
class Cluster:
    """The topic metadata an assignor needs: partition counts, and optionally the racks of each partition's
    replicas (for rack-aware assignment, KIP-881). Topics missing here do not exist: client-side assignors skip
    them, as Java's AbstractPartitionAssignor does; server-side ones raise PartitionAssignorError, as KIP-848's do.

    `topic_ids` (topic name -> Kafka Uuid in its base64 form, as `Uuid.toString()`) is optional and only the
    server-side `uniform` assignor reads it: where Kafka's result depends on the order of topic Uuids (a HashSet
    of them, or Uuid.compareTo), it then follows that order, so the same Uuids give Kafka's exact assignment.
    Without ids (the classic protocol carries names only) topic names take their place, in ascending order."""

    partitions_per_topic: Mapping[str, int]
    partition_racks: Mapping[str, Sequence[frozenset[str]]] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)


Assignment = dict[str, TopicPartitions]
"""member_id -> assigned partitions, every member present (possibly with ())."""


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException: a server-side assignor cannot compute the group's target assignment,
    for instance because a member subscribes to a topic the metadata does not have. Kafka's group coordinator
    answers the request that triggered the assignment with UNKNOWN_SERVER_ERROR (see state/classic/server_assignment.py)."""


class SubscriptionType(Enum):
    """Kafka's SubscriptionType: HOMOGENEOUS when every member subscribes to the same topics."""

    HOMOGENEOUS = "HOMOGENEOUS"
    HETEROGENEOUS = "HETEROGENEOUS"


def distinct_subscriptions(members: Sequence[MemberSubscription]) -> list[tuple[str, ...]]:
    """The members' topic tuples, each tuple object once: members built from one subscription share it, and
    then nothing below costs per member."""
    return list({id(m.topics): m.topics for m in members}.values())


def subscription_type(members: Sequence[MemberSubscription]) -> SubscriptionType:
    """Kafka's ModernGroup.subscriptionType: homogeneous when every subscribed topic has every member as a
    subscriber (no subscriptions at all counts as homogeneous). Equal tuples are told apart without hashing a
    topic; only subscriptions listing their topics differently are compared as sets."""
    first, *others = distinct_subscriptions(members) or [()]
    others = [topics for topics in others if topics != first]
    if not others:
        return SubscriptionType.HOMOGENEOUS
    topic_set = frozenset(first)
    same = all(frozenset(topics) == topic_set for topics in others)
    return SubscriptionType.HOMOGENEOUS if same else SubscriptionType.HETEROGENEOUS


@dataclass(frozen=True)
class GroupSpec:
    """Kafka's GroupSpec, what the coordinator hands a server-side assignor: the members in the order the
    assignor visits them (Kafka's `memberIds()` iteration order; ties and quotas follow it) and the group's
    subscription type, which Kafka's group keeps up to date as members join, leave or change their subscription,
    so the assignor never scans every member's topics to learn it. Each member's `owned_partitions` is its current
    target assignment, in the order the assignor should read it."""

    members: Sequence[MemberSubscription]
    subscription_type: SubscriptionType

    @classmethod
    def of(cls, members: Sequence[MemberSubscription]) -> GroupSpec:
        """The spec Kafka's own assignor tests build: members by ascending member id (their TreeMap), the
        subscription type computed from the subscriptions."""
        ordered = sorted(members, key=lambda m: m.member_id)
        return cls(ordered, subscription_type(ordered))


class Assignor(Protocol):
    """What `assignors.registry.get(name, kind=None)` returns.

    `name` is the Kafka protocol name a member lists in JoinGroup; `kind` says who runs it (the group leader, or the
    coordinator for KIP-848 server-side assignment); `rebalance_protocols` are the ones it supports, preferred
    first, as Java's `supportedProtocols()`. `assign` is pure: same inputs, same result, whatever the members'
    order. Server-side assignors also have `assign_group(cluster, GroupSpec)`, Kafka's own entry point, of which
    `assign(cluster, members)` is `assign_group(cluster, GroupSpec.of(members))`."""

    name: str
    kind: Literal["client", "server"]
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...]

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment: ...


class ServerAssignor(Protocol):
    """What a server-side assignor of `assignors.registry` offers the coordinator (Kafka's
    ConsumerGroupPartitionAssignor): the target of every member of a KIP-848 group."""

    name: str

    def assign_group(self, cluster: Cluster, group: GroupSpec) -> dict[str, TopicPartitions]: ...
