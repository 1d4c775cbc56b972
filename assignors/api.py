"""The one interface every assignor shares, so the coordinator and the client pick one by name.

An assignor is a pure function of the cluster's partition counts and the members' subscriptions. Client-side
assignors (`range`, `roundrobin`, `sticky`, `cooperative-sticky`) run in the group leader, as in Kafka's classic
protocol; server-side assignors (`uniform`, `range` in KIP-848) run in the coordinator. Both take the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    replicas (for rack-aware assignment, KIP-881). Topics missing here are treated as not existing."""

    partitions_per_topic: Mapping[str, int]
    partition_racks: Mapping[str, Sequence[frozenset[str]]] = field(default_factory=dict)


Assignment = dict[str, TopicPartitions]
"""member_id -> assigned partitions, every member present (possibly with ())."""


class Assignor(Protocol):
    """What `assignors.registry.get(name, kind=None)` returns.

    `name` is the Kafka protocol name a member lists in JoinGroup; `kind` says who runs it (the group leader, or the
    coordinator for KIP-848 server-side assignment); `rebalance_protocols` are the ones it supports, preferred
    first, as Java's `supportedProtocols()`. `assign` is pure: same inputs, same result, whatever the members'
    order."""

    name: str
    kind: Literal["client", "server"]
    rebalance_protocols: tuple[Literal["EAGER", "COOPERATIVE"], ...]

    def assign(self, cluster: Cluster, members: Sequence[MemberSubscription]) -> Assignment: ...
