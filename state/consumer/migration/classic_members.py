"""Members of the classic protocol served inside a consumer group: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
mapped onto it, as Kafka's `classicGroupJoinToConsumerGroup`, `classicGroupSyncToConsumerGroup`,
`classicGroupHeartbeatToConsumerGroup` and `classicGroupLeaveToConsumerGroup`.

A classic member is a consumer-group member with `classic_member_metadata` (its session timeout and protocols).
Its JoinGroup is its heartbeat: the subscription and owned partitions embedded in the protocol's metadata go through
the same steps (`heartbeat.update_and_reconcile`: subscription, group epoch, target, reconciliation) and it is
answered at once with its member epoch as the generation; its SyncGroup gets its assigned partitions; its Heartbeat
says REBALANCE_IN_PROGRESS when it must rejoin (the group epoch moved on, it must revoke, or the partitions it
waited for are free). Its session is its own session timeout; it must rejoin within its rebalance timeout once told
to, and sync within it after a join, or it is fenced (`state.handling.timers`' consumer join and sync timeouts).

Pure, as the heartbeat: (group, request, env) -> `CoordinatorResult`; the runtime applies it.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import replace

from assignors.consumer_protocol import ConsumerProtocolError, decode_subscription
from schemas.consumer_group import ClassicMemberMetadata, ClassicProtocol
from schemas.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberResponse,
    SyncGroupRequest,
)
from state.consumer.migration.conversion import (
    CONSUMER_PROTOCOL_TYPE,
    assignment_bytes,
    downgrade_record,
    validate_online_downgrade_with_replaced_member,
)
from state.consumer.group import ConsumerGroup, ConsumerGroupMember, MemberState, Partitions
from state.consumer.records import delete_records
from state.consumer.heartbeat import (
    _cancel_member_timers,
    _result,
    _static_member,
    _throw_if_group_is_full,
    fence_members,
    update_and_reconcile,
)
from state.consumer.replay import replay
from state.consumer.stored import snapshot
from state.topics.image import kafka_uuid
from state.errors import CoordinatorError, Errors
from state.records import Record
from state.rules import authorize_member
from state.handling.timers import (
    Cancel,
    Schedule,
    TimerOperation,
    consumer_join_timeout_key,
    consumer_session_timeout_key,
    consumer_sync_timeout_key,
)
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.wire import join_response, simple_response, sync_response

MEMBER_ID_REQUIRED_VERSION = 4
"""JoinGroup v4+: a new dynamic member is given its id and asked to join again with it (KIP-394)."""


# -- JoinGroup -----------------------------------------------------------------------------------------------------

def classic_join(group: ConsumerGroup, req: JoinGroupRequest, env: Env,
                 new_member_id: str | None = None) -> CoordinatorResult:
    """`new_member_id`: the id a gateway's member-id round gave the member (`state.classic.member_id_round`), which the
    round's answer names instead of one of ours."""
    try:
        return _join(group, req, env, new_member_id)
    except CoordinatorError as exc:
        return _result(response=join_response(req, exc.code, member_id=req.member_id))


def _join(group: ConsumerGroup, req: JoinGroupRequest, env: Env, new_member_id: str | None) -> CoordinatorResult:
    config = env.config
    if not config.group_min_session_timeout_ms <= req.session_timeout_ms <= config.group_max_session_timeout_ms:
        raise CoordinatorError(Errors.INVALID_SESSION_TIMEOUT)
    unknown = req.member_id == ""
    member_id = req.member_id or new_member_id or kafka_uuid(
        f"{group.group_id}\x00{req.request_id}\x00{env.now_ms}")
    _throw_if_group_is_full(group, member_id, config)
    _throw_if_protocols_are_not_supported(group, req)
    if unknown and req.group_instance_id is None and req.version >= MEMBER_ID_REQUIRED_VERSION:
        # a consumer group keeps no pending member: the id (a gateway's, when it answered the round) is only told
        return _result(response=join_response(req, Errors.MEMBER_ID_REQUIRED, member_id=member_id))

    taken_over, replaced_id = NOTHING, None
    replaced = None if req.group_instance_id is None else group.static_member(req.group_instance_id)
    existing = (group.members.get(member_id) if req.group_instance_id is None
                else group.static_member(req.group_instance_id))
    if existing is not None and existing.member_id == member_id:
        authorize_member(existing, member_id, req.principal)  # a member joins again as itself
        member = existing
    elif req.group_instance_id is None:
        member = ConsumerGroupMember(member_id)
    else:
        member, taken_over, replaced_id = _static_member(group, member_id, 0, req.group_instance_id, None, True,
                                                         req.principal, classic=True)
    try:
        subscription = decode_subscription(base64.b64decode(req.protocols[0].metadata))
    except (ConsumerProtocolError, ValueError, struct.error):
        raise CoordinatorError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                               f"Member {member_id}'s embedded consumer protocol is malformed.") from None
    updated = replace(
        member,
        instance_id=req.group_instance_id if req.group_instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        client_id=req.client_id,
        client_host=req.client_host,
        principal=req.principal if req.principal is not None else member.principal,
        classic_member_metadata=ClassicMemberMetadata(
            session_timeout_ms=req.session_timeout_ms,
            supported_protocols=tuple(ClassicProtocol(name=p.name, metadata=p.metadata) for p in req.protocols)),
    )
    owned = _ids(subscription.owned_partitions, env)
    changed = {} if replaced_id is None else {replaced_id: None}
    updated, reconciled = update_and_reconcile(group, member, updated, owned, changed, env)
    joined = taken_over + reconciled
    response = join_response(req, Errors.NONE, member_id=member_id, generation_id=updated.member_epoch,
                             protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=req.protocols[0].name)
    if (replaced is not None and replaced.member_id != member_id
            and validate_online_downgrade_with_replaced_member(group, replaced.member_id, config)):
        return _downgrade(group, joined.records, replaced.member_id, response, env)
    rebalance_timeout = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else req.session_timeout_ms
    return joined + answer(response, Cancel(consumer_join_timeout_key(member_id)),
                           Schedule(consumer_session_timeout_key(member_id), env.now_ms + req.session_timeout_ms),
                           Schedule(consumer_sync_timeout_key(member_id), env.now_ms + rebalance_timeout))


def _downgrade(group: ConsumerGroup, written: list[Record], replaced: str, response: object,
               env: Env) -> CoordinatorResult:
    """The joining static member replaced the group's last member of the consumer protocol: the group goes back to
    a classic group of the same members, the joining one holding what the replaced one held (Kafka's
    convertToClassicGroup with a joining member). After the join's records, the tombstones of the group they leave
    and the classic group's metadata record; every member's consumer timers end. No rebalance: the classic group is
    Stable and the member syncs with the generation it was answered (`state.consumer.handlers`)."""
    joined = None
    for record in (*snapshot(group), *written):
        joined = replay(joined, record)
    timers: list[TimerOperation] = []
    for member_id in sorted({*group.members, *joined.members}):  # type: ignore[union-attr]
        timers += _cancel_member_timers(member_id, env)
    return _result((*written, *delete_records(joined), downgrade_record(  # type: ignore[arg-type]
        joined, None, env.image, env.now_ms)), response, timers)  # type: ignore[arg-type]


def _throw_if_protocols_are_not_supported(group: ConsumerGroup, req: JoinGroupRequest) -> None:
    """Kafka's supportsClassicProtocols: protocol type `consumer`, and a protocol every classic member offers."""
    names = {p.name for p in req.protocols}
    classic = [m for m in group.members.values() if m.uses_classic_protocol]
    supported = bool(names) if not classic else any(
        all(name in {p.name for p in m.classic_member_metadata.supported_protocols}  # type: ignore[union-attr]
            for m in classic) for name in names)
    if req.protocol_type != CONSUMER_PROTOCOL_TYPE or not supported:
        raise CoordinatorError(Errors.INCONSISTENT_GROUP_PROTOCOL,
                               f"Member {req.member_id}'s protocols are not supported.")


def _ids(partitions: tuple[tuple[str, tuple[int, ...]], ...], env: Env) -> Partitions:
    out: dict[str, frozenset[int]] = {}
    for name, parts in partitions:
        topic = env.image.by_name.get(name)
        if topic is not None:
            out[topic.topic_id] = out.get(topic.topic_id, frozenset()) | frozenset(parts)
    return out


# -- SyncGroup and Heartbeat ---------------------------------------------------------------------------------------

def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None,
                    principal: str | None) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember, our principal binding (`state.rules.authorize`) and
    throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of group {group.group_id}.")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a "
                                   f"member of group {group.group_id}.")
        if member.member_id != member_id:
            raise CoordinatorError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                   f"{instance_id} was fenced by member {member.member_id}.")
    authorize_member(member, member.member_id, principal)
    if not member.uses_classic_protocol:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic "
                               "protocol.")
    return member


def _throw_if_generation_id_unmatched(member: ConsumerGroupMember, generation_id: int) -> None:
    if member.member_epoch != generation_id:
        raise CoordinatorError(Errors.ILLEGAL_GENERATION, f"The request generation id {generation_id} is not equal "
                               f"to the member epoch {member.member_epoch} of member {member.member_id}.")


def _join_timeout(member: ConsumerGroupMember, env: Env) -> list[TimerOperation]:
    """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent."""
    key = consumer_join_timeout_key(member.member_id)
    return [] if key in env.timers else [Schedule(key, env.now_ms + member.rebalance_timeout_ms)]


def classic_sync(group: ConsumerGroup, req: SyncGroupRequest, env: Env) -> CoordinatorResult:
    try:
        member = _classic_member(group, req.member_id, req.group_instance_id, req.principal)
        _throw_if_generation_id_unmatched(member, req.generation_id)
        protocol_name = member.classic_member_metadata.supported_protocols[0].name  # type: ignore[union-attr]
        if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise CoordinatorError(Errors.INCONSISTENT_GROUP_PROTOCOL)
        if req.protocol_name is not None and req.protocol_name != protocol_name:
            raise CoordinatorError(Errors.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            return _result(response=sync_response(group.group_id, req.request_id, Errors.REBALANCE_IN_PROGRESS),
                           timers=_join_timeout(member, env))
    except CoordinatorError as exc:
        return _result(response=sync_response(group.group_id, req.request_id, exc.code))
    session = member.classic_member_metadata.session_timeout_ms  # type: ignore[union-attr]
    return _result(response=sync_response(group.group_id, req.request_id, Errors.NONE, req.protocol_type,
                                          req.protocol_name, assignment_bytes(member, env.image)),
                   timers=[Cancel(consumer_sync_timeout_key(member.member_id)),
                           Schedule(consumer_session_timeout_key(member.member_id), env.now_ms + session)])


def classic_heartbeat(group: ConsumerGroup, req: HeartbeatRequest, env: Env) -> CoordinatorResult:
    try:
        member = _classic_member(group, req.member_id, req.group_instance_id, req.principal)
        _throw_if_generation_id_unmatched(member, req.generation_id)
    except CoordinatorError as exc:
        return _result(response=simple_response(req, exc.code))
    session = member.classic_member_metadata.session_timeout_ms  # type: ignore[union-attr]
    timers: list[TimerOperation] = [Schedule(consumer_session_timeout_key(member.member_id), env.now_ms + session)]
    error = Errors.NONE
    if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
            or (member.state is MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased_partition(group,
                                                                                                        member))):
        error = Errors.REBALANCE_IN_PROGRESS
        timers += _join_timeout(member, env)
    return _result(response=simple_response(req, error), timers=timers)


def waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Kafka's ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target another member still holds."""
    if member.state is not MemberState.UNRELEASED_PARTITIONS:
        return False
    assigned = member.assigned()
    return any(partition not in assigned.get(topic, ()) and group.current_partition_epoch(topic, partition) != -1
               for topic, partitions in group.target_assignment.get(member.member_id, {}).items()
               for partition in partitions)


# -- LeaveGroup ----------------------------------------------------------------------------------------------------

def classic_leave(group: ConsumerGroup, req: LeaveGroupRequest, env: Env) -> CoordinatorResult:
    """Each member answered on its own; the valid ones fenced together (one group epoch bump)."""
    results = []
    leaving: list[ConsumerGroupMember] = []
    for entry in req.members:  # type: ignore[union-attr]
        member_id, instance_id = entry.member_id, entry.group_instance_id
        try:
            if instance_id is None:
                member = _classic_member(group, member_id, None, req.principal)
            else:
                member = group.static_member(instance_id)
                if member is None:
                    raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                _classic_member(group, member.member_id if member_id == "" else member_id, instance_id,
                                req.principal)
            if member not in leaving:
                leaving.append(member)
            results.append(MemberResponse(member.member_id, instance_id, Errors.NONE))
        except CoordinatorError as exc:
            results.append(MemberResponse(member_id, instance_id, exc.code))
    if req.version <= 2:
        response = simple_response(req, results[0].error_code)
    else:
        response = simple_response(req, Errors.NONE, members=tuple(results))
    return fence_members(group, leaving, response, env)
