"""The consumer group in the core's runtime: its requests, timers and load through the one `state.runtime.context.Context`.

The handlers of `state.consumer` are pure (group, request, environment) -> `CoordinatorResult`, as Kafka's
GroupMetadataManager methods are; this module is their runtime, as Kafka's CoordinatorRuntime is: it hands them
the group, the time, the configuration, the cluster's topics (`Context.image`) and the group's timers, then appends
the result's records (replayed at once, the only way the group changes), answers, and applies the timer operations
to the group's timers, which the shell calls it back at (`state.runtime.coordinator.next_deadline`). `state.runtime.coordinator`
sends here what belongs to a consumer group.
"""

from __future__ import annotations

from schemas.consumer_group import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from schemas.messages import GroupMetadataKey, HeartbeatRequest, Request
from state.classic import membership
from state.consumer import heartbeat
from state.consumer.migration import classic_members
from state.consumer import replay as consumer_replay
from state.consumer.migration.conversion import upgrade_records, validate_online_upgrade
from state.consumer.describe import consumer_group_describe
from state.consumer.group import ConsumerGroup
from state.runtime.context import Context
from state.runtime.step import CoordinatorResult, Env, answer
from state.errors import CoordinatorError, Errors
from state.classic.group import ClassicGroup
from state.records import GroupLoaded, HeartbeatOwed, Record, group_tombstone
from state.runtime.timers import (
    CONSUMER_SESSION_TIMEOUT_PREFIX,
    OFFSETS_EXPIRATION,
    Schedule,
    consumer_session_timeout_key,
    next_retention_check,
)
from state.wire import parked_join_response, simple_response, sync_response


def env(ctx: Context, now_ms: int | None = None) -> Env:
    return ctx.env(now_ms)


def apply(ctx: Context, result: CoordinatorResult, rebalance: bool = True) -> None:
    """What Kafka's runtime does with a result: its records appended (replayed), its responses sent, its timers
    scheduled or cancelled (a timer of a group the records removed goes with it). A classic group metadata record
    among them is a downgrade (`state.consumer.migration.conversion`): the classic group is loaded from it, its members'
    sessions start, and it prepares a rebalance, as Kafka's convertToClassicGroup, unless `rebalance` is False (a
    static member's JoinGroup that replaced the last member of the consumer protocol: the group stays Stable)."""
    downgraded = False
    for record in result.records:
        if isinstance(record, Record) and isinstance(record.key, GroupMetadataKey) and record.value is not None:
            _load_classic_group(ctx, record)
            downgraded = True
        else:
            ctx.append(record)
    for response in result.responses:
        ctx.respond(response)
    for op in result.timers:
        if isinstance(op, Schedule):
            if ctx.group is not None:
                ctx.schedule(op.key, op.deadline_ms)
        else:
            ctx.cancel(op.key)
    if downgraded and rebalance:
        ctx.apply(membership.prepare_rebalance(ctx.group, ctx.env()))  # type: ignore[arg-type]


def _load_classic_group(ctx: Context, record: Record) -> None:
    if ctx.group is None:
        ctx.create_group()
    ctx.append(record)
    ctx.append(GroupLoaded(ctx.group.persisted))  # type: ignore[union-attr]
    env = ctx.env()
    ctx.apply(CoordinatorResult([], [], [membership.session(member, env)
                                         for member in ctx.group.members.values()]))  # type: ignore[union-attr]


def handle_heartbeat(ctx: Context, req: ConsumerGroupHeartbeatRequest) -> None:
    """ConsumerGroupHeartbeat. A classic group without members (one that only holds offsets, or whose members all
    left) becomes a consumer group when a member joins it: its metadata is tombstoned first, its offsets stay, as
    Kafka's maybeDeleteEmptyClassicGroup. One with members is converted with them when the migration policy allows
    it (`_upgrade`); otherwise it is another protocol's group: GROUP_ID_NOT_FOUND."""
    group = ctx.group
    if isinstance(group, ClassicGroup):
        if group.members and req.member_epoch == 0 and validate_online_upgrade(group, ctx.config):
            return _upgrade(ctx, group, req)
        if group.members or group.pending_members:
            return ctx.respond(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                               error_message=f"Group {req.group_id} is not a consumer group."))
        result = heartbeat.consumer_group_heartbeat(None, req, env(ctx))
        if result.records and group.directory is not None:
            ctx.append(group_tombstone(group.group_id))
    else:
        result = heartbeat.consumer_group_heartbeat(group, req, env(ctx))
        if group is not None and req.member_id in group.heartbeat_owed:  # this one reaches the coordinator
            ctx.append(HeartbeatOwed(req.member_id, False))
    apply(ctx, result)
    _start_retention(ctx)


def _upgrade(ctx: Context, group: ClassicGroup, req: ConsumerGroupHeartbeatRequest) -> None:
    """A consumer-protocol member joins a classic group with members (Kafka's convertToConsumerGroup): requests
    the classic group holds are answered REBALANCE_IN_PROGRESS, its timers end, it is tombstoned and replaced by
    the consumer group of its members (`conversion.upgrade_records`), each with a session of its own timeout,
    then the heartbeat runs on it. As in Kafka, nothing is converted when the heartbeat fails: it is tried first on
    the converted group rebuilt from the records alone."""
    try:
        upgrade = upgrade_records(group, ctx.image)
    except CoordinatorError as exc:
        return ctx.respond(simple_response(req, exc.code, error_message=exc.message))
    converted: ConsumerGroup | None = None
    for record in upgrade:
        converted = consumer_replay.replay(converted, record)
    trial = heartbeat.consumer_group_heartbeat(converted, req, env(ctx))
    if trial.response.error_code != Errors.NONE:  # type: ignore[union-attr]
        return apply(ctx, trial)
    for member in group.members.values():
        if member.join is not None:
            ctx.respond(parked_join_response(group.group_id, member.join.request_id, Errors.REBALANCE_IN_PROGRESS,
                                             member_id=member.member_id))
        if member.sync is not None:
            ctx.respond(sync_response(group.group_id, member.sync.request_id, Errors.REBALANCE_IN_PROGRESS))
    for key in sorted(group.timers):
        if key != OFFSETS_EXPIRATION:
            ctx.cancel(key)
    ctx.append(group_tombstone(group.group_id))
    for record in upgrade:
        ctx.append(record)
    for member_id, member in sorted(ctx.group.members.items()):  # type: ignore[union-attr]
        ctx.schedule(consumer_session_timeout_key(member_id), ctx.now_ms + heartbeat.session_timeout_ms(member, env(ctx)))
    apply(ctx, heartbeat.consumer_group_heartbeat(ctx.group, req, env(ctx)))  # type: ignore[arg-type]
    _start_retention(ctx)


def handle_classic(ctx: Context, req: Request, new_member_id: str | None) -> None:
    """JoinGroup, SyncGroup, Heartbeat or LeaveGroup of a classic member to a consumer group with members."""
    group: ConsumerGroup = ctx.group  # type: ignore[assignment]
    api = req.api
    if api == "JoinGroup":
        result = classic_members.classic_join(group, req, env(ctx), new_member_id)  # type: ignore[arg-type]
        return apply(ctx, result, rebalance=False)
    elif api == "SyncGroup":
        result = classic_members.classic_sync(group, req, env(ctx))  # type: ignore[arg-type]
    elif api == "Heartbeat":
        result = classic_members.classic_heartbeat(group, req, env(ctx))  # type: ignore[arg-type]
    else:
        result = classic_members.classic_leave(group, req, env(ctx))  # type: ignore[arg-type]
    apply(ctx, result)


def handle_classic_heard(ctx: Context, req: HeartbeatRequest, heard_ms: int) -> int:
    """A classic member's Heartbeat a gateway answered from its classic group's view, which has since become this
    consumer group: decided inside it as of when it was heard (its session restarts from then); returns the error
    decided, the answer itself is not sent."""
    result = classic_members.classic_heartbeat(ctx.group, req, env(ctx, heard_ms))  # type: ignore[arg-type]
    apply(ctx, CoordinatorResult(result.records, [], result.timers))
    return result.response.error_code  # type: ignore[union-attr]


def handle_heard(ctx: Context, req: ConsumerGroupHeartbeatRequest, heard_ms: int) -> int | None:
    """A heartbeat a gateway answered "nothing changed" from the group's view (`state.views.fast_answers`), run as if it
    had arrived when it was heard. Applied only when it changes nothing, as answered: no record, no error, no
    assignment, the same epoch; then its timers (the member's session restarts from `heard_ms`), and no response
    (the member has its answer). Otherwise, where the coordinator would have answered it without an error, the
    member was alive and its session restarts all the same, but nothing else of it is applied, since the member
    never got what the coordinator would tell it: the member owes a heartbeat (`HeartbeatOwed`), which takes it out
    of the view, so that its next heartbeat reaches the coordinator and gets the answer. Returns the error the
    coordinator decided, None where it would have answered otherwise with no error."""
    group: ConsumerGroup = ctx.group  # type: ignore[assignment]
    result = heartbeat.consumer_group_heartbeat(group, req, env(ctx, heard_ms))
    response = result.response
    error = response.error_code
    unchanged = (error == Errors.NONE and not result.records and response.assignment is None
                 and response.member_epoch == req.member_epoch)
    session = consumer_session_timeout_key(req.member_id)
    for op in result.timers:
        if unchanged or (error == Errors.NONE and op.key == session):
            if isinstance(op, Schedule):
                ctx.schedule(op.key, op.deadline_ms)
            else:
                ctx.cancel(op.key)
    if unchanged:
        return Errors.NONE
    if req.member_id in group.members and req.member_id not in group.heartbeat_owed:
        ctx.append(HeartbeatOwed(req.member_id, True))
    return error or None


def _start_retention(ctx: Context) -> None:
    """A new consumer group's offsets are checked for retention as a classic group's (`Context.create_group`)."""
    group = ctx.group
    if isinstance(group, ConsumerGroup) and OFFSETS_EXPIRATION not in group.timers:
        ctx.schedule(OFFSETS_EXPIRATION, next_retention_check(ctx.now_ms, ctx.config))


def describe(group: ConsumerGroup | ClassicGroup | None, req: ConsumerGroupDescribeRequest,
             env: Env) -> CoordinatorResult:
    """ConsumerGroupDescribe (`state.consumer.describe`); a classic group is not a consumer group."""
    if isinstance(group, ClassicGroup):
        return answer(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                      error_message=f"Group {req.group_id} is not a consumer group."))
    return answer(consumer_group_describe(group, req, env.config.group_consumer_assignors[0], env.image))


def fire_timer(ctx: Context, group: ConsumerGroup, key: str) -> None:
    """A consumer group's timer that came due (already dropped): it re-checks what it was armed for."""
    expired = key.startswith(CONSUMER_SESSION_TIMEOUT_PREFIX) and key[len(CONSUMER_SESSION_TIMEOUT_PREFIX):] in \
        group.members
    apply(ctx, heartbeat.on_timer(group, key, env(ctx)))
    ctx.members_expired += expired


def on_loaded(ctx: Context, group: ConsumerGroup) -> None:
    """Kafka's onLoaded for a consumer group: every member's session from now, the revocation deadlines of those
    that must revoke, and the retention check."""
    for op in heartbeat.on_loaded(group, env(ctx)):
        ctx.schedule(op.key, op.deadline_ms)
    ctx.schedule(OFFSETS_EXPIRATION, next_retention_check(ctx.now_ms, ctx.config))


def restart_sessions(ctx: Context, group: ConsumerGroup) -> None:
    """After an outage (see `state.batch.step_group`'s `resumed`): every member's session restarts now."""
    for member_id in sorted(group.members):
        ctx.schedule(consumer_session_timeout_key(member_id),
                     ctx.now_ms + heartbeat.session_timeout_ms(group.members[member_id], env(ctx)))
