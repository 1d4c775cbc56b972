"""The consumer group's handlers as the runtime dispatches them, in the one shape (`state.handling.step`).

`state.consumer.heartbeat` and `state.consumer.migration.classic_members` decide a request on the consumer group
alone, as Kafka's GroupMetadataManager methods do; this module is what the runtime (`state.runtime.coordinator`)
calls: it adds what is about the group's kind, which Kafka's runtime does around them. A classic group becomes a
consumer group here (`group_heartbeat`: a classic group without members is replaced, one with members converted);
a consumer group becomes a classic group when its result carries a classic group metadata record (`completed`);
its timers fire (`on_timer`), it is loaded (`loaded`) and its sessions restart after an outage
(`restarted_sessions`); a heartbeat a gateway answered from its view is checked (`heard`, `classic_heard`).
"""

from __future__ import annotations

from schemas.consumer_group import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from schemas.messages import GroupMetadataKey, HeartbeatRequest, Request
from state.classic import handlers as classic
from state.consumer import heartbeat
from state.consumer import replay as consumer_replay
from state.consumer.describe import consumer_group_describe
from state.consumer.group import ConsumerGroup
from state.consumer.migration import classic_members
from state.consumer.migration.conversion import upgrade_records, validate_online_upgrade
from state.classic.group import ClassicGroup
from state.errors import CoordinatorError, Errors
from state.records import GroupLoaded, HeartbeatOwed, Record, group_tombstone
from state.consumer.replay import then
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.handling.timers import (
    CONSUMER_SESSION_TIMEOUT_PREFIX,
    OFFSETS_EXPIRATION,
    Cancel,
    Schedule,
    consumer_session_timeout_key,
    next_retention_check,
)
from state.wire import parked_join_response, simple_response, sync_response

Group = ClassicGroup | ConsumerGroup | None


def _is_downgrade(record: object) -> bool:
    return isinstance(record, Record) and isinstance(record.key, GroupMetadataKey) and record.value is not None


def completed(group: Group, result: CoordinatorResult, env: Env, rebalance: bool = True) -> CoordinatorResult:
    """A consumer group's result as the runtime takes it. A classic group metadata record among its records is a
    downgrade (`state.consumer.migration.conversion`): the classic group is loaded from it, its members' sessions
    start, and, after the rest of the result, it prepares a rebalance, as Kafka's convertToClassicGroup, unless
    `rebalance` is False (a static member's JoinGroup that replaced the last member of the consumer protocol: the
    group stays Stable)."""
    at = next((i for i, record in enumerate(result.records) if _is_downgrade(record)), None)
    if at is None:
        return result
    record = result.records[at]
    group, done = then(group, NOTHING, CoordinatorResult(result.records[:at]))
    if group is None:
        group, done = then(group, done, classic.create_group(record.key.group, env))  # type: ignore[union-attr]
    group, done = then(group, done, CoordinatorResult([record]))
    group, done = then(group, done, CoordinatorResult([GroupLoaded(group.persisted)]))  # type: ignore[union-attr]
    group, done = then(group, done, CoordinatorResult([], [], [classic.session(member, env)
                                                               for member in group.members.values()]))
    rest = CoordinatorResult(result.records[at + 1:], result.responses, result.timers, result.members_expired,
                             result.fast_answers)
    group, done = then(group, done, completed(group, rest, env, rebalance=False))
    if rebalance:
        return done + classic.prepare_rebalance(group, env)  # type: ignore[arg-type]
    return done


def group_heartbeat(group: Group, req: ConsumerGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    """ConsumerGroupHeartbeat. A classic group without members (one that only holds offsets, or whose members all
    left) becomes a consumer group when a member joins it: its metadata is tombstoned first, its offsets stay, as
    Kafka's maybeDeleteEmptyClassicGroup. One with members is converted with them when the migration policy allows
    it (`_upgrade`); otherwise it is another protocol's group: GROUP_ID_NOT_FOUND."""
    done = NOTHING
    if isinstance(group, ClassicGroup):
        if group.members and req.member_epoch == 0 and validate_online_upgrade(group, env.config):
            return _upgrade(group, req, env)
        if group.members or group.pending_members:
            return answer(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                          error_message=f"Group {req.group_id} is not a consumer group."))
        result = heartbeat.consumer_group_heartbeat(None, req, env)
        if result.records and group.directory is not None:
            group, done = then(group, done, CoordinatorResult([group_tombstone(group.group_id)]))
    else:
        result = heartbeat.consumer_group_heartbeat(group, req, env)
        if group is not None and req.member_id in group.heartbeat_owed:  # this one reaches the coordinator
            group, done = then(group, done, CoordinatorResult([HeartbeatOwed(req.member_id, False)]))
    return then(group, done, completed(group, result, env))[1]


def _upgrade(group: ClassicGroup, req: ConsumerGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    """A consumer-protocol member joins a classic group with members (Kafka's convertToConsumerGroup): requests
    the classic group holds are answered REBALANCE_IN_PROGRESS, its timers end, it is tombstoned and replaced by
    the consumer group of its members (`conversion.upgrade_records`), each with a session of its own timeout,
    then the heartbeat runs on it. As in Kafka, nothing is converted when the heartbeat fails: it is tried first on
    the converted group rebuilt from the records alone."""
    try:
        upgrade = upgrade_records(group, env.image)
    except CoordinatorError as exc:
        return answer(simple_response(req, exc.code, error_message=exc.message))
    converted: ConsumerGroup | None = None
    for record in upgrade:
        converted = consumer_replay.replay(converted, record)
    trial = heartbeat.consumer_group_heartbeat(converted, req, env)
    if trial.response.error_code != Errors.NONE:  # type: ignore[union-attr]
        return completed(group, trial, env)
    answered = []
    for member in group.members.values():
        if member.join is not None:
            answered.append(parked_join_response(group.group_id, member.join.request_id,
                                                 Errors.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        if member.sync is not None:
            answered.append(sync_response(group.group_id, member.sync.request_id, Errors.REBALANCE_IN_PROGRESS))
    ended = [Cancel(key) for key in sorted(group.timers) if key != OFFSETS_EXPIRATION]
    converted_group, done = then(group, NOTHING, CoordinatorResult([], answered, ended))
    converted_group, done = then(converted_group, done,
                                 CoordinatorResult([group_tombstone(group.group_id), *upgrade]))
    env = env.replace(timers=converted_group.timers)  # type: ignore[union-attr]
    sessions = [Schedule(consumer_session_timeout_key(member_id),
                         env.now_ms + heartbeat.session_timeout_ms(member, env))
                for member_id, member in sorted(converted_group.members.items())]  # type: ignore[union-attr]
    converted_group, done = then(converted_group, done, CoordinatorResult([], [], sessions))
    result = heartbeat.consumer_group_heartbeat(converted_group, req, env)  # type: ignore[arg-type]
    return then(converted_group, done, completed(converted_group, result, env))[1]


def classic_request(group: ConsumerGroup, req: Request, env: Env, new_member_id: str | None) -> CoordinatorResult:
    """JoinGroup, SyncGroup, Heartbeat or LeaveGroup of a classic member to a consumer group with members."""
    api = req.api
    if api == "JoinGroup":
        result = classic_members.classic_join(group, req, env, new_member_id)  # type: ignore[arg-type]
        return completed(group, result, env, rebalance=False)
    if api == "SyncGroup":
        result = classic_members.classic_sync(group, req, env)  # type: ignore[arg-type]
    elif api == "Heartbeat":
        result = classic_members.classic_heartbeat(group, req, env)  # type: ignore[arg-type]
    else:
        result = classic_members.classic_leave(group, req, env)  # type: ignore[arg-type]
    return completed(group, result, env)


def classic_heard(group: ConsumerGroup, req: HeartbeatRequest, env: Env,
                  heard_ms: int) -> tuple[CoordinatorResult, int]:
    """A classic member's Heartbeat a gateway answered from its classic group's view, which has since become this
    consumer group: decided inside it as of when it was heard (its session restarts from then). The result without
    its answer (the member has one), and the error decided."""
    result = classic_members.classic_heartbeat(group, req, env.replace(now_ms=heard_ms))
    kept = completed(group, CoordinatorResult(result.records, [], result.timers), env)
    return kept, result.response.error_code  # type: ignore[union-attr]


def heard(group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, env: Env, heard_ms: int) -> CoordinatorResult:
    """A heartbeat a gateway answered "nothing changed" from the group's view, run as if it had arrived when it was
    heard (what of it is applied: `state.views.fast_answers`)."""
    return heartbeat.consumer_group_heartbeat(group, req, env.replace(now_ms=heard_ms))


def describe(group: Group, req: ConsumerGroupDescribeRequest, env: Env) -> CoordinatorResult:
    """ConsumerGroupDescribe (`state.consumer.describe`); a classic group is not a consumer group."""
    if isinstance(group, ClassicGroup):
        return answer(simple_response(req, Errors.GROUP_ID_NOT_FOUND,
                                      error_message=f"Group {req.group_id} is not a consumer group."))
    return answer(consumer_group_describe(group, req, env.config.group_consumer_assignors[0], env.image))


def on_timer(group: ConsumerGroup, key: str, env: Env) -> CoordinatorResult:
    """A consumer group's timer that came due (already dropped): it re-checks what it was armed for."""
    expired = key.startswith(CONSUMER_SESSION_TIMEOUT_PREFIX) and key[len(CONSUMER_SESSION_TIMEOUT_PREFIX):] in \
        group.members
    return completed(group, heartbeat.on_timer(group, key, env), env) + CoordinatorResult(members_expired=int(expired))


def loaded(group: ConsumerGroup, env: Env) -> CoordinatorResult:
    """Kafka's onLoaded for a consumer group: every member's session from now, the revocation deadlines of those
    that must revoke, and the retention check."""
    return CoordinatorResult([], [], [*heartbeat.on_loaded(group, env),
                                      Schedule(OFFSETS_EXPIRATION, next_retention_check(env.now_ms, env.config))])


def restarted_sessions(group: ConsumerGroup, env: Env) -> CoordinatorResult:
    """After an outage (see `state.batch.step_group`'s `resumed`): every member's session restarts now."""
    return CoordinatorResult([], [], [Schedule(consumer_session_timeout_key(member_id),
                                               env.now_ms + heartbeat.session_timeout_ms(member, env))
                                      for member_id, member in sorted(group.members.items())])
