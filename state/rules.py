"""Kafka's rules for Heartbeat and OffsetCommit, as pure decisions over a group or its published view.

The coordinator's handlers decide with these (`state.classic.handlers`, `state.offsets.handlers`), and so does a
gateway that answers from a group's view (`state.views.published.PublishedGroup`, through `state.api`): one copy of
each rule. A rule reads only what a view carries, the same attributes on both: `state`, `generation`, `members`
(member id -> an object with `group_instance_id` and `principal`) and `static_members` (instance id -> member id).
States compare as their names, which `GroupState` members are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol

from state.errors import (
    FENCED_INSTANCE_ID,
    GROUP_AUTHORIZATION_FAILED,
    GROUP_ID_NOT_FOUND,
    ILLEGAL_GENERATION,
    INVALID_GROUP_ID,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    CoordinatorError,
)

if TYPE_CHECKING:
    from schemas.messages import HeartbeatRequest, OffsetCommitRequest

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"


class Bound(Protocol):
    """A member of either kind of group, live or in a view: the principal it is bound to."""

    @property
    def principal(self) -> str | None: ...


class BoundMember(Bound, Protocol):
    group_instance_id: str | None


class Membership(Protocol):
    """What the rules read of a group: a `ClassicGroup`, or a `PublishedGroup` built from its view."""

    state: str
    generation: int
    members: Mapping[str, BoundMember]
    static_members: Mapping[str, str]


def authorize(group: Membership, member_id: str, principal: str | None) -> None:
    """Our rule: a member acts only for the principal that joined it, so that a member id alone does not let
    anyone act as that member. GROUP_AUTHORIZATION_FAILED, Kafka's answer to a principal that may not act on the
    group: final for the sender, and nothing of the member changes. A request without a principal (written to the
    control topic directly, which broker ACLs reserve to gateways and trusted clients) is not checked."""
    authorize_member(group.members[member_id], member_id, principal)


def acts_for(member: Bound, principal: str | None) -> bool:
    """Whether a request of `principal` may act as `member` (`authorize`)."""
    return principal is None or member.principal == principal


def authorize_member(member: Bound, member_id: str, principal: str | None) -> None:
    """`authorize` for a member already looked up (a consumer group's, `state.consumer`)."""
    if not acts_for(member, principal):
        raise CoordinatorError(GROUP_AUTHORIZATION_FAILED, f"member {member_id} belongs to another principal")


def validate_member(group: Membership, member_id: str, group_instance_id: str | None,
                    principal: str | None = None) -> None:
    """Kafka's `validateMember`: an instance id must map to this member id; else the id must be a member. Then the
    member must belong to `principal` (`authorize`)."""
    if group_instance_id is not None:
        existing = group.static_members.get(group_instance_id)
        if existing is None:
            raise CoordinatorError(UNKNOWN_MEMBER_ID, f"unknown group_instance_id {group_instance_id}")
        if existing != member_id:
            raise CoordinatorError(FENCED_INSTANCE_ID, f"{group_instance_id} belongs to another member")
    elif member_id not in group.members:
        raise CoordinatorError(UNKNOWN_MEMBER_ID, f"unknown member_id {member_id}")
    authorize(group, member_id, principal)


def heartbeat_error(group: Membership | None, req: "HeartbeatRequest") -> int:
    """Kafka's Heartbeat answer (`classicGroupHeartbeat`): group id, lookup, member, generation, then the state:
    REBALANCE_IN_PROGRESS while preparing a rebalance, NONE in CompletingRebalance and Stable. A validated member
    means the group is not Empty (Kafka's Empty branch cannot be reached either)."""
    if req.group_id == "":
        return INVALID_GROUP_ID
    if group is None:
        return UNKNOWN_MEMBER_ID
    try:
        validate_member(group, req.member_id, req.group_instance_id, req.principal)
    except CoordinatorError as exc:
        return exc.code
    if req.generation_id != group.generation:
        return ILLEGAL_GENERATION
    return REBALANCE_IN_PROGRESS if group.state == PREPARING_REBALANCE else NONE


def restarts_session(heartbeat_error: int) -> bool:
    """Whether a heartbeat answered so restarts the member's session (Kafka: every validated heartbeat of the
    current generation, PreparingRebalance included)."""
    return heartbeat_error == NONE or heartbeat_error == REBALANCE_IN_PROGRESS


def commit_error(group: Membership | None, req: "OffsetCommitRequest") -> int:
    """The request-level answer to an OffsetCommit (`ClassicGroup.validateOffsetCommit`): a commit without a
    generation goes to a missing group (which it creates: a "simple" group) or an Empty one; otherwise the member
    and its generation must be current, and not while the assignment is being handed out (CompletingRebalance).
    A missing group with a generation: GROUP_ID_NOT_FOUND from v9 on, ILLEGAL_GENERATION before (Java)."""
    generation: int = req.generation_id_or_member_epoch  # type: ignore[assignment]
    if group is None:
        if generation < 0:
            return NONE
        return GROUP_ID_NOT_FOUND if req.version >= 9 else ILLEGAL_GENERATION
    if generation < 0 and group.state == EMPTY:
        return NONE
    try:
        validate_member(group, req.member_id, req.group_instance_id, req.principal)
    except CoordinatorError as exc:
        return exc.code
    if generation != group.generation:
        return ILLEGAL_GENERATION
    if group.state == COMPLETING_REBALANCE:
        return REBALANCE_IN_PROGRESS
    return NONE


def partition_error(metadata: str | None, max_metadata_bytes: int) -> int:
    """The answer for one partition of an accepted commit, which does not depend on the group: metadata longer
    than `offset.metadata.max.bytes` (Kafka compares String.length(), UTF-16 code units) is refused, the other
    partitions are stored."""
    if not metadata or 2 * len(metadata) <= max_metadata_bytes:  # a character is 1 or 2 code units
        return NONE
    return OFFSET_METADATA_TOO_LARGE if len(metadata.encode("utf-16-le")) // 2 > max_metadata_bytes else NONE
