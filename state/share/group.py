"""A share group as its records leave it: Kafka's ShareGroup and ShareGroupMember, and its share-partitions.

The fields change only in `state.share.replay`. A share group has members with epochs and a target assignment, as
a consumer group, but no revocation (a member jumps to its target: partitions can be shared), no commits, no static
members, and two states: Empty (no member) and Stable. Beside the membership it keeps its share-partitions: which
are initialised (assignable, record 15), each one's durable state and grant (the snapshot, version 100), and the
runtime's part of each grant (its lease, which no record holds: a new driver restarts every lease).
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from state.offset_values import Offsets
from state.share.partitions.grant import Grant
from state.share.partitions.partition import PersistedState

Partitions = Mapping[str, frozenset[int]]
"""topic id -> partitions."""
SharePartitionKey = tuple[str, int]
"""(topic id, partition)."""


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass(frozen=True)
class ShareGroupMember:
    """Immutable; a handler builds the next one with `dataclasses.replace`, replay puts it in the group."""

    member_id: str
    rack_id: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = 0
    """Kafka's MemberState byte: a share member is always STABLE (0)."""
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    """Sorted, as Kafka writes them."""
    assigned_partitions: Partitions = field(default_factory=dict)
    principal: str | None = None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.member_epoch == epoch


@dataclass(frozen=True)
class InitializedTopic:
    name: str
    partitions: frozenset[int]


@dataclass(frozen=True)
class ShareSnapshot:
    """One share-partition as its snapshot record says: its durable state and its grant."""

    persisted: PersistedState
    grant: Grant
    create_timestamp_ms: int = 0
    write_timestamp_ms: int = 0


class ShareGroup:
    """Mutable, and mutated only by `state.share.replay` (the runtime's timers, clock and leases aside)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # -- from the records ---------------------------------------------------------------------------------------
        self.group_epoch = 0
        self.metadata_hash = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, Partitions] = {}
        self.assignment_epoch = -1
        self.assignment_timestamp_ms = 0
        self.initialized: dict[str, InitializedTopic] = {}
        """Record 15's initialised topics: topic id -> name and partitions (assignable)."""
        self.deleting: dict[str, str] = {}
        """Record 15's deleting topics: topic id -> name."""
        self.has_state_partition_metadata = False
        self.partitions: dict[SharePartitionKey, ShareSnapshot] = {}
        self.directory: list | None = None
        """[state, member count] of the last group-epoch record written with a `directory` (ListGroups)."""
        # -- indexes kept by replay ---------------------------------------------------------------------------------
        self.subscribed_names: Counter[str] = Counter()
        # -- the runtime's ------------------------------------------------------------------------------------------
        self.timers: dict[str, int] = {}
        self.clock_ms = -1
        self.heartbeat_owed: set[str] = set()
        self.offsets = Offsets()
        """Always empty: a share group commits nothing (the shell's two-part store reads every kind alike)."""
        self.wanted: dict[SharePartitionKey, str] = {}
        """Share-partitions another gateway was refused while one holds them (`SharePartitionWanted`)."""

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def held(self) -> list[SharePartitionKey]:
        """The share-partitions a gateway holds now."""
        return sorted(k for k, s in self.partitions.items() if s.grant.held)

    def is_assignable(self, topic_id: str, partition: int) -> bool:
        topic = self.initialized.get(topic_id)
        return topic is not None and partition in topic.partitions

    def lease_deadline(self) -> int | None:
        return min((s.grant.lease_until_ms for s in self.partitions.values() if s.grant.held), default=None)
