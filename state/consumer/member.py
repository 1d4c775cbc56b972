"""A member of a consumer group: its subscription, its epochs and where its reconciliation stands.

Kafka's ConsumerGroupMember and MemberState. A member is immutable: a handler builds the next one with
`dataclasses.replace`, and only replaying its records puts it into the group.

Partitions are kept per topic id, each with the epoch it was assigned at (KIP-1251, Kafka 4.3+): a commit from a
member one epoch behind is still accepted for the partitions it held at that epoch (`state.consumer.offsets`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Mapping

from schemas.consumer_group import ClassicMemberMetadata

PartitionEpochs = Mapping[str, Mapping[int, int]]
"""topic id -> partition -> the epoch it was assigned to the member at."""
Partitions = Mapping[str, frozenset[int]]
"""topic id -> partitions (a target assignment, an ownership claim)."""


class MemberState(enum.IntEnum):
    """Kafka's MemberState, by the byte the current-assignment record stores."""

    STABLE = 0
    """Reconciled to its epoch; owns exactly its assigned partitions."""
    UNREVOKED_PARTITIONS = 1
    """Must revoke `partitions_pending_revocation` (acknowledged by leaving them out of a heartbeat) first."""
    UNRELEASED_PARTITIONS = 2
    """At the target epoch, but waits for partitions that other members have not released yet."""
    UNKNOWN = 127
    """A state a newer coordinator wrote: the member is fenced unless it comes back owning nothing."""

    @classmethod
    def of(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    """Sorted, as Kafka writes them."""
    subscribed_topic_regex: str | None = None
    server_assignor_name: str | None = None
    assigned_partitions: PartitionEpochs = field(default_factory=dict)
    partitions_pending_revocation: PartitionEpochs = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None
    """Set for a member of the classic protocol (JoinGroup/SyncGroup/Heartbeat) served inside a consumer group:
    its session timeout and the protocols its JoinGroup offered (`state.consumer.migration`)."""
    principal: str | None = None
    """The authenticated principal that joined this member (None: joined through the control topic directly); our
    extension, as a classic member's (`state.rules.authorize`)."""

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    @property
    def regex(self) -> str | None:
        """The member's regular expression, or None (Kafka treats "" as none)."""
        return self.subscribed_topic_regex or None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def assigned(self) -> Partitions:
        return partitions_of(self.assigned_partitions)

    def with_member_epoch(self, epoch: int, **changes: object) -> ConsumerGroupMember:
        """Kafka's Builder.updateMemberEpoch: the current epoch becomes the previous one."""
        return replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch, **changes)


def partitions_of(epochs: PartitionEpochs) -> Partitions:
    return {topic: frozenset(parts) for topic, parts in epochs.items() if parts}


def same_partitions(a: PartitionEpochs, b: PartitionEpochs) -> bool:
    """Kafka's hasAssignedPartitionsChanged, negated: the same partitions, whatever their assignment epochs."""
    return partitions_of(a) == partitions_of(b)
