"""What OffsetCommit and OffsetFetch must check when they address a consumer group: the member and its epoch
(Kafka's ConsumerGroup.validateOffsetCommit and validateOffsetFetch). The offsets handler calls these and answers
with the error; they change nothing.

Commits, as Kafka 4.3 (KIP-1251) checks them:
- an epoch below 0 on a group without members is an admin's (or a consumer without group management): accepted;
- a TxnOffsetCommit without member (epoch -1, member id "", no instance id) is accepted;
- an unknown member id is UNKNOWN_MEMBER_ID, another principal's member GROUP_AUTHORIZATION_FAILED (our binding,
  `state.rules.authorize`); a member of the classic protocol (`state.consumer.migration.classic_members`)
  commits with any version and its generation, which must be its member epoch (ILLEGAL_GENERATION); a member of the
  consumer protocol must commit with OffsetCommit v9+ (UNSUPPORTED_VERSION);
- the member's epoch commits every partition; a newer epoch is STALE_MEMBER_EPOCH; an older one commits a
  partition only if the member still holds it (assigned or being revoked) from that epoch or earlier, else
  STALE_MEMBER_EPOCH for that partition (the member's heartbeat bumped its epoch before it could commit).
Fetches: without member id and with a negative epoch, accepted; else the member must exist, belong to the
principal, and the epoch be its.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol, TypeVar

from state.consumer.group import ConsumerGroup
from state.errors import CoordinatorError, Errors
from state.rules import authorize_member

PartitionValidator = Callable[[str, int], Errors]
"""(topic id, partition) -> NONE, or the error of that partition."""

FIRST_CONSUMER_PROTOCOL_COMMIT_VERSION = 9

M = TypeVar("M", bound="Committer")


def _accept(topic_id: str, partition: int) -> Errors:
    return Errors.NONE


class Committer(Protocol):
    """What the checks read of a member: a `ConsumerGroupMember`, or a `ConsumerViewCommitter` of the group's view."""

    member_epoch: int
    uses_classic_protocol: bool
    principal: str | None


def validate_offset_commit(group: ConsumerGroup, *, member_id: str, instance_id: str | None, member_epoch: int,
                           api_version: int, transactional: bool = False,
                           principal: str | None = None) -> PartitionValidator:
    """The per-partition check of an accepted commit; CoordinatorError for a refused one."""
    member = commit_member(group.members, group.group_id, member_id=member_id, instance_id=instance_id,
                           member_epoch=member_epoch, api_version=api_version, transactional=transactional,
                           principal=principal)
    if member is None:
        return _accept

    def held_since(topic_id: str, partition: int) -> Errors:
        for partitions in (member.assigned_partitions, member.partitions_pending_revocation):
            assigned_at = partitions.get(topic_id, {}).get(partition)
            if assigned_at is not None and assigned_at <= member_epoch:
                return Errors.NONE
        return Errors.STALE_MEMBER_EPOCH

    return held_since


def commit_member(members: Mapping[str, M], group_id: str, *, member_id: str, instance_id: str | None,
                  member_epoch: int, api_version: int, transactional: bool = False,
                  principal: str | None = None) -> M | None:
    """The commit rule over the group's members (the group's own, or its view's: a gateway answers a commit this
    accepts whole, `state.views.fast_answers.commit_from_view`): None when every partition is accepted; the member when
    it commits with an older epoch (each partition is then checked, `validate_offset_commit`); CoordinatorError for
    a refused commit."""
    if member_epoch < 0 and not members:
        return None
    if transactional and member_epoch == -1 and member_id == "" and instance_id is None:
        return None
    member = members.get(member_id)
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
    authorize_member(member, member_id, principal)
    if member.uses_classic_protocol:
        _throw_if_generation_is_not_the_epoch(member_epoch, member.member_epoch)
        return None
    if not transactional and api_version < FIRST_CONSUMER_PROTOCOL_COMMIT_VERSION:
        raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                               "using the modern group protocol")
    if member_epoch == member.member_epoch:
        return None
    if member_epoch > member.member_epoch:
        raise CoordinatorError(Errors.STALE_MEMBER_EPOCH, f"Received member epoch {member_epoch} is newer than "
                               f"current member epoch {member.member_epoch}.")
    return member


def validate_offset_fetch(group: ConsumerGroup, *, member_id: str | None, member_epoch: int,
                          principal: str | None = None) -> None:
    """CoordinatorError when the fetch names a member it may not fetch for."""
    fetch_member_error(group.members, group.group_id, member_id=member_id, member_epoch=member_epoch,
                       principal=principal)


def fetch_member_error(members: Mapping[str, Committer], group_id: str, *, member_id: str | None,
                       member_epoch: int, principal: str | None = None) -> None:
    """The fetch rule over the group's members (the group's own, or its view's: `state.offsets.handlers.fetch_from_view`):
    CoordinatorError when the fetch names a member it may not fetch for."""
    if member_id is None and member_epoch < 0:
        return
    member = members.get(member_id or "")
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
    authorize_member(member, member_id or "", principal)
    if member.uses_classic_protocol:
        _throw_if_generation_is_not_the_epoch(member_epoch, member.member_epoch)
    elif member_epoch != member.member_epoch:
        raise CoordinatorError(Errors.STALE_MEMBER_EPOCH, f"The received member epoch {member_epoch} does not "
                               f"match the expected member epoch {member.member_epoch}.")


def _throw_if_generation_is_not_the_epoch(generation_id: int, member_epoch: int) -> None:
    """A classic member in a consumer group commits and fetches with its generation, which is its member epoch
    (any OffsetCommit version; a mismatch is ILLEGAL_GENERATION, Kafka's validateMemberEpoch)."""
    if generation_id != member_epoch:
        raise CoordinatorError(Errors.ILLEGAL_GENERATION, f"The received generation id {generation_id} does not "
                               f"match the expected member epoch {member_epoch}.")
