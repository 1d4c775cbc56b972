"""The classic group's records and their constructors: its group metadata value, as Kafka writes it
(`group_record`), and the in-memory records (`MemberAdded`, `JoinParked`, `StateChanged`, ...: applied by
`state.classic.replay`, never written; `state.records` says why), as `state.consumer.records` and
`state.share.records` are the other kinds'. What every kind writes (`Record`, keys, offsets) is `state.records`."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Struct

from schemas.messages import (
    GroupDirectoryEntry,
    GroupMetadataKey,
    GroupMetadataRecord,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    TxnOffsetCommitKey,
)
from state.classic.group import ClassicGroup, GroupState, Member, Parked
from state.records import Record


CLASSIC_KEYS = (GroupMetadataKey, OffsetCommitKey, TxnOffsetCommitKey)
"""The keys of Kafka's classic records: a classic group's metadata and the offsets every kind commits."""


def kafka_group_value(group: ClassicGroup, assignments: dict[str, str] | None = None) -> GroupMetadataValue:
    """Kafka's GroupMetadataValue of the group as it is now (members' subscription = selected protocol's)."""
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation,
        protocol=group.protocol_name,
        leader=group.leader,
        current_state_timestamp=group.state_timestamp,
        members=tuple(MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=m.assignment if assignments is None else assignments.get(m.member_id, ""),
            # our extension, so that a load keeps the member's binding
            principal=UNSET if m.principal is None else m.principal,
        ) for m in group.members.values()),
    )


def directory_changed(group: ClassicGroup) -> bool:
    """Whether the group's state or protocol type differs from its last group metadata record's `directory`.
    (A GroupState is the string it names, so it compares with the stored one without going through `.value`:
    this runs after every request.)"""
    directory = group.directory
    return directory is None or directory[0] != group.state or directory[1] != (group.protocol_type or "")


def group_record(group: ClassicGroup, persist: bool = False) -> Record:
    """The group metadata record: the directory entry of the group now, plus Kafka's GroupMetadataValue, either
    the group as it is now (`persist`: where Kafka's storeGroup writes) or as last persisted (a state change Kafka
    would not write, so that a load still comes back to what Kafka would load)."""
    value = kafka_group_value(group) if persist or group.persisted is None else group.persisted
    directory = GroupDirectoryEntry(group.state.value, group.protocol_type or "", len(group.members))
    return Record(GroupMetadataKey(group.group_id), GroupMetadataRecord(
        *msgspec.structs.astuple(value), directory=directory))  # type: ignore[call-arg]


def persisted_of(record: GroupMetadataRecord) -> GroupMetadataValue:
    """Kafka's part of a group metadata record."""
    return GroupMetadataValue(*msgspec.structs.astuple(record)[:-1])


# -- in-memory records: applied by replay, never written -----------------------------------------------------------

class GroupCreated(Struct, frozen=True, gc=False):
    """A new Empty group at generation 0 (Kafka's getOrMaybeCreateClassicGroup)."""

    group_id: str
    timestamp: int


class MemberAdded(Struct, frozen=True, gc=False):
    member: Member


class MemberUpdated(Struct, frozen=True, gc=False):
    """A member re-joined: its protocols, timeouts and partition counts as its JoinGroup gives them, the JoinGroup
    parked. (Replay sets these on the group's member; the lists are never changed in place.)"""

    member_id: str
    protocols: list[tuple[str, str]]
    rebalance_timeout_ms: int
    session_timeout_ms: int
    topic_partitions: list[tuple[str, int]]
    join: Parked


class MemberRemoved(Struct, frozen=True, gc=False):
    """A member, or a pending member, leaves the group (with its pending-sync mark)."""

    member_id: str


class StaticMemberReplaced(Struct, frozen=True, gc=False):
    """KIP-345: a restarted static member takes over the old member id's place (leader and pending sync too)."""

    old_member_id: str
    member: Member


class PendingMemberAdded(Struct, frozen=True, gc=False):
    """KIP-394: a member id handed out with MEMBER_ID_REQUIRED, not a member until it joins with it; `id_counter`
    as `MemberIdIssued`'s (the id was just issued)."""

    member_id: str
    id_counter: int


class MemberIdIssued(Struct, frozen=True, gc=False):
    """The counter that makes generated member ids unique within the group (see `ClassicGroup.member_id_for`)."""

    id_counter: int


class JoinParked(Struct, frozen=True, gc=False):
    """A member's JoinGroup parked until the join phase completes (None: answered)."""

    member_id: str
    parked: Parked | None


class SyncParked(Struct, frozen=True, gc=False):
    """A member's SyncGroup parked until the leader's assignment arrives: the member no longer holds the sync
    phase up (it leaves the pending-sync set)."""

    member_id: str
    parked: Parked


class ParkedSyncsAnswered(Struct, frozen=True, gc=False):
    """Every parked SyncGroup was answered (with the assignment or an error)."""


class StateChanged(Struct, frozen=True, gc=False):
    """A transition, checked against `state.classic.group.VALID_PREVIOUS` when replayed."""

    state: GroupState
    timestamp: int


class JoinPhaseChanged(Struct, frozen=True, gc=False):
    """KIP-134's bookkeeping of the initial rebalance delay."""

    new_member_added: bool
    initial_delay: tuple[int, int] | None


class LeaderElected(Struct, frozen=True, gc=False):
    member_id: str


class GenerationStarted(Struct, frozen=True, gc=False):
    """The join phase completed: the next generation, its protocol (None without members) and the subscribed
    topics that follow from them."""

    generation: int
    protocol_name: str | None


class JoinCompleted(Struct, frozen=True, gc=False):
    """Every member's JoinGroup was answered and nobody is new any more; `await_sync`: every member owes a
    SyncGroup (the pending-sync set), unless the coordinator assigned itself."""

    await_sync: bool


class PendingSyncCleared(Struct, frozen=True, gc=False):
    """Nobody owes a SyncGroup any more (a new join phase began, or one completed)."""


class SyncReceived(Struct, frozen=True, gc=False):
    """The member sent its SyncGroup: it no longer holds the sync phase up."""

    member_id: str


class AssignmentsSet(Struct, frozen=True, gc=False):
    """Every member's assignment: from this map, empty bytes for a member it leaves out."""

    assignments: dict[str, str]
