"""A consumer group and its members as their records leave them, and the rules that read them: Kafka's
ConsumerGroup (and ModernGroup) and ConsumerGroupMember.

The fields below the docstring's line change only in `state.consumer.replay` (the runtime's timers and offsets
through `state.runtime.replay`, as a classic group's). The indexes after them (who holds
which partition at which epoch, static members by instance id, subscription counts) are kept up to date there too,
so handlers answer "is this partition free?" or "is the subscription homogeneous?" without scanning members.

The group state is derived, as Kafka's `maybeUpdateGroupState`: Empty (no members), Assigning (the group epoch is
ahead of the target assignment's), Reconciling (some member is not STABLE at the assignment epoch), Stable.

A member (`ConsumerGroupMember`, `MemberState`) is immutable: a handler builds the next one with
`dataclasses.replace`, and only replaying its records puts it into the group. Its partitions are kept per topic id,
each with the epoch it was assigned at (KIP-1251, Kafka 4.3+): a commit from a member one epoch behind is still
accepted for the partitions it held at that epoch (`state.consumer.offsets`).
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Mapping

from assignors.api import SubscriptionType
from schemas.consumer_group import ClassicMemberMetadata
from state.topics.image import ResolvedRegularExpression
from state.errors import CoordinatorError, Errors
from state.offset_values import Offsets

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



class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class ConsumerGroup:
    """Mutable, and mutated only by `state.consumer.replay`."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # -- from the records -----------------------------------------------------------------------------------
        self.group_epoch = 0
        self.metadata_hash = 0
        self.has_subscription_metadata_record = False
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_assignment: dict[str, Partitions] = {}
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0
        self.resolved_regexes: dict[str, ResolvedRegularExpression] = {}
        self.last_regex_refresh_ms: int | None = None
        """When a regular expression was last resolved (None: never); Kafka's lastResolvedRegularExpressionRefreshTimeMs."""
        self.last_regex_version = -1
        """The metadata version of the last resolution; Kafka's lastResolvedRegularExpressionVersion."""
        # -- indexes kept by replay ---------------------------------------------------------------------------------
        self.static_members: dict[str, str] = {}
        """instance id -> member id."""
        self.partition_epochs: dict[str, dict[int, int]] = {}
        """topic id -> partition -> epoch of the member holding it (assigned or still revoking)."""
        self.subscribed_names: Counter[str] = Counter()
        """topic name -> members subscribing to it by name."""
        self.subscribed_regexes: Counter[str] = Counter()
        """regular expression -> members subscribing with it."""
        self.server_assignors: Counter[str] = Counter()
        # -- what the runtime keeps with the group, beside the records (as `ClassicGroup` keeps the same) -------------
        self.timers: dict[str, int] = {}
        """Timer key -> deadline (`state.handling.timers`); not records, as in Kafka."""
        self.offsets = Offsets()
        """The committed offsets: offset records, replayed as for a classic group, stored apart (`Offsets`)."""
        self.clock_ms = -1
        """The latest time the group was processed at (see `ClassicGroup.clock_ms`)."""
        self.directory: list | None = None
        """[state, member count] of the last group-epoch record written with a `directory` (ListGroups)."""
        self.heartbeat_owed: set[str] = set()
        """Members whose next heartbeat must reach the coordinator (`state.records.HeartbeatOwed`; the fast path)."""

    # -- reading ----------------------------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member subscribes to the topic, by name or through a resolved regular expression (Kafka's
        isSubscribedToTopic: its offsets are kept, and OffsetDelete refuses them)."""
        return topic in self.subscribed_names or any(
            topic in self.resolved_regexes[r].topics for r in self.subscribed_regexes if r in self.resolved_regexes)

    def current_partition_epoch(self, topic_id: str, partition: int) -> int:
        """The epoch of the member holding the partition, -1 when it is free."""
        return self.partition_epochs.get(topic_id, {}).get(partition, -1)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str, instance_id: str | None = None) -> Partitions:
        """A member's target; a static member that just replaced another one has the replaced member's."""
        if member_id in self.target_assignment:
            return self.target_assignment[member_id]
        previous = self.static_members.get(instance_id) if instance_id is not None else None
        return self.target_assignment.get(previous, {}) if previous is not None else {}

    def resolved_topics(self) -> dict[str, frozenset[str]]:
        return {regex: resolved.topics for regex, resolved in self.resolved_regexes.items()}

    def preferred_server_assignor(self, changed: Mapping[str, ConsumerGroupMember | None] = {}) -> str | None:
        """The server assignor most members name (Kafka's computePreferredServerAssignor); ties go to the name
        that sorts first, where Kafka's follow its HashMap."""
        counts: Counter[str] = Counter(self.server_assignors)
        for member_id, member in changed.items():
            old = self.members.get(member_id)
            if old is not None and old.server_assignor_name is not None:
                counts[old.server_assignor_name] -= 1
            if member is not None and member.server_assignor_name is not None:
                counts[member.server_assignor_name] += 1
        named = sorted((-n, name) for name, n in counts.items() if n > 0)
        return named[0][1] if named else None


def subscription_type(regexes: Mapping[str, int], names: Mapping[str, tuple[int, int]],
                      members: int) -> SubscriptionType:
    """Kafka's ConsumerGroup.subscriptionType: without regular expressions, homogeneous when every topic has every
    member as a subscriber; with them, homogeneous only when every member uses one and the same regular
    expression and no topic name."""
    if not regexes:
        homogeneous = all(by_name == members for by_name, _ in names.values())
    else:
        (first, *_) = regexes.values()
        homogeneous = (len(regexes) == 1 and first == members
                       and all(by_regex == 1 and by_name == 0 for by_name, by_regex in names.values()))
    return SubscriptionType.HOMOGENEOUS if homogeneous else SubscriptionType.HETEROGENEOUS


def validate_delete(group: ConsumerGroup) -> None:
    """DeleteGroups deletes an Empty consumer group only (Kafka's ConsumerGroup.validateDeleteGroup)."""
    if group.state is not ConsumerGroupState.EMPTY:
        raise CoordinatorError(Errors.NON_EMPTY_GROUP, "The group is not empty.")
