"""The classic group's data: states, the legal transitions between them, members.

Only data and the small invariants of `ClassicGroup`/`ClassicGroupMember` live here (membership bookkeeping,
leader choice, protocol vote); the protocol decisions are in `state.classic.handlers` and `state.offsets.handlers`.
The methods that change a group are called by `state.runtime.replay.replay` only (one per in-memory record of
`state.records`); handlers read the group and append records.

Both kinds of state sit in one object (and one stored document, `state.classic.stored`): the durable part (what the records topic holds:
generation, protocol, leader, members and assignments as last persisted, committed offsets) and the soft part
Kafka keeps only in memory (parked JoinGroup/SyncGroup requests, pending members, timer deadlines).
"""

from __future__ import annotations

import base64
import binascii
import enum
import uuid
from dataclasses import dataclass, field

from msgspec import Struct

from assignors.consumer_protocol import ConsumerProtocolError, subscribed_topics
from schemas.messages import GroupMetadataValue
from state import rules
from state.offset_values import Offsets


class GroupState(str, enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    """Never a group's state here (a deleted group is removed, not kept Dead): what DescribeGroups answers for a
    group that does not exist, as Kafka does, and a state the metrics count (always 0, as Kafka's NumGroupsDead)."""


VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
}
"""Kafka's `ClassicGroupState` valid previous states: the target state -> the states it may be entered from.
Kafka's row for Dead is left out: no group here goes Dead."""


class IllegalTransition(Exception):
    """A bug, not bad input: the handlers only ask for transitions the table allows."""


class Parked(Struct, array_like=True, gc=False):
    """A JoinGroup or SyncGroup Kafka would hold as a delayed operation: enough to answer it later."""

    request_id: str
    api_version: int


class Member(Struct, array_like=True, gc=False):
    """Stored as an array, in this order (the stored state's schema version 2)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, str]]
    """(name, base64 metadata) in the member's preference order."""
    assignment: str = ""
    """base64 of the assignment bytes the leader (or the server assignor) gave this member."""
    join: Parked | None = None
    sync: Parked | None = None
    is_new: bool = False
    topic_partitions: list[tuple[str, int]] = []
    """Server-side assignment extension: this member's view of partition counts."""
    principal: str | None = None
    """The authenticated principal that joined this member (None: joined through the control topic directly)."""

    def metadata(self, protocol: str | None) -> str:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return ""

    def matches(self, protocols: list[tuple[str, str]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    state_timestamp: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, None] = field(default_factory=dict)
    """Member ids handed out with MEMBER_ID_REQUIRED and not joined yet (a dict for a stable order)."""
    pending_sync: dict[str, None] = field(default_factory=dict)
    new_member_added: bool = False
    initial_delay: tuple[int, int] | None = None
    """(delay, remaining) of the armed initial-rebalance delay (KIP-134), None when the join timer is a plain one."""
    subscribed_topics: list[str] | None = None
    """Topics the members subscribe to, computed at each generation (None: unknown or not `consumer`)."""
    timers: dict[str, int] = field(default_factory=dict)
    offsets: Offsets = field(default_factory=Offsets)
    """Stored apart from the rest (`state.classic.stored.to_doc` leaves them out): see `Offsets`."""
    id_counter: int = 0
    clock_ms: int = -1
    """The latest time this group was processed at: request times are clamped to it so time never goes back."""
    persisted: GroupMetadataValue | None = None
    """The Kafka part of the last group metadata record written (what a load rebuilds from)."""
    directory: list | None = None
    """[state, protocol_type] of the last group metadata record written: a new record when it changes."""
    supported_protocols: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    """Derived, not stored: how many members offer each protocol name (Kafka keeps the same counts)."""
    awaiting_join: int = field(default=0, repr=False, compare=False)
    """Derived, not stored: members with a parked JoinGroup. Both counters keep large joins linear."""

    # -- state machine -------------------------------------------------------------------------------------

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS.get(target, ()):
            raise IllegalTransition(f"can't go from {self.state.value} to {target.value} in group {self.group_id}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp = now_ms

    def can_rebalance(self) -> bool:
        return self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY)

    # -- membership ----------------------------------------------------------------------------------------

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout is its members' largest, as in Kafka."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def num_awaiting_join(self) -> int:
        return self.awaiting_join

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self._count(member, 1)
        if self.leader is None:
            self.leader = member.member_id
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or pending member); a removed leader is replaced by the first remaining member."""
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._count(member, -1)
        if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def replace_static_member(self, old_id: str, new: Member) -> None:
        """KIP-345: the new member takes the old one's place as leader and in the pending-sync set."""
        was_leader, was_pending_sync = self.leader == old_id, old_id in self.pending_sync
        self.remove(old_id)
        self.add(new)
        if was_leader:
            self.leader = new.member_id
        if was_pending_sync:
            self.pending_sync[new.member_id] = None

    def set_join(self, member: Member, parked: Parked | None) -> None:
        """Park (or clear) a member's JoinGroup; the only way `Member.join` changes for a member of the group."""
        self.awaiting_join += (parked is not None) - (member.join is not None)
        member.join = parked

    def set_protocols(self, member: Member, protocols: list[tuple[str, str]]) -> None:
        self._count(member, -1)
        member.protocols = protocols
        self._count(member, 1)

    def restore(self, member: Member) -> None:
        """A stored member back in the group as it was stored (`state.classic.stored`): counted and indexed; the
        leader, protocol type and pending members are the stored group's own."""
        self.members[member.member_id] = member
        self._count(member, 1)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def _count(self, member: Member, delta: int) -> None:
        for name, _ in member.protocols:
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta
        if member.join is not None:
            self.awaiting_join += delta

    def validate_member(self, member_id: str, group_instance_id: str | None, principal: str | None = None) -> None:
        """Kafka's `validateMember`, then the principal binding (`state.rules.validate_member`)."""
        rules.validate_member(self, member_id, group_instance_id, principal)

    def authorize(self, member_id: str, principal: str | None) -> None:
        """The principal binding (`state.rules.authorize`)."""
        rules.authorize(self, member_id, principal)

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, str]]) -> bool:
        if self.state == GroupState.EMPTY:
            return protocol_type != "" and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        n = len(self.members)
        return any(self.supported_protocols.get(name, 0) == n for name, _ in protocols)

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n and n > 0}

    def select_protocol(self) -> str:
        """Each member votes for its most preferred common protocol; most votes wins. Kafka leaves ties open;
        we break them by name so the choice is deterministic."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return min(votes, key=lambda name: (-votes[name], name))

    def joined_leader(self) -> str | None:
        """The leader of the next generation: the leader if it re-joined, else the first member that did; None
        if nobody re-joined (Kafka's maybeElectNewJoinedLeader, without the election)."""
        if self.leader is not None:
            leader = self.members.get(self.leader)
            if leader is not None and leader.join is not None:
                return self.leader
        return next((m.member_id for m in self.members.values() if m.join is not None), None)

    def compute_subscribed_topics(self) -> list[str] | None:
        if self.protocol_type != "consumer":
            return None
        topics: set[str] = set()
        # Members of a group mostly send the same subscription: each distinct one is decoded once (a rebuild
        # computes this for every group it loads).
        for metadata in {m.metadata(self.protocol_name) for m in self.members.values()}:
            try:
                topics.update(subscribed_topics(base64.b64decode(metadata)))
            except (ConsumerProtocolError, binascii.Error):
                return None
        return sorted(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed, so offsets are never deleted on a guess (KIP-496)."""
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    def member_id_for(self, prefix: str, request_id: str, now_ms: int) -> str:
        """The next member id, `prefix-UUID` as Kafka, but the UUID is derived from the request and the group's id
        counter so replays give the same ids; the handler that hands it out appends `MemberIdIssued`."""
        name = f"{self.group_id}\x00{request_id}\x00{now_ms}\x00{self.id_counter + 1}"
        return f"{prefix}-{uuid.uuid5(uuid.NAMESPACE_URL, name)}"
