"""ConsumerGroupHeartbeat and the consumer-group timers: Kafka's GroupMetadataManager.consumerGroupHeartbeat (with
GroupCoordinatorService's request validation) and the timer operations it schedules.

`consumer_group_heartbeat(group, request, env)` validates and returns a `Result`; it changes nothing. A regular
heartbeat, as Kafka's:

1. the member is created or updated: a subscription record when anything it declares changed; a new member, a
   changed set of topic names, a regular expression the group has resolved already, or a change of the
   subscribed topics' metadata (their metadata hash, KIP-1101) bumps the group epoch;
2. when the group epoch is ahead of the target assignment's, the server-side assignor computes a new target
   (the members' preferred assignor, else the first of `group.consumer.assignors`);
3. the member is reconciled towards its target (`state.consumer.assignment.reconciliation`), and its session timer re-armed.

Epoch -1 leaves (the member is fenced: its records tombstoned, the group epoch bumped); -2 is a static member's
temporary leave (it keeps its partitions, at epoch -2, until it rejoins with its instance id or its session
expires). Every error is Kafka's, with Kafka's message: see `validate_request` and the `_throw_*` functions.

Where Kafka's releases differ, this follows the newest (docs/wire-format.md): a member rejoining with epoch 0 and
its own member id gets its current state back instead of FENCED_MEMBER_EPOCH (KAFKA-19233, 4.2); the group epoch
record carries the metadata hash and no subscription-metadata record is written (KIP-1101, 4.1); regular
expressions are also resolved again every `group.consumer.regex.refresh.interval.ms` (4.2).

`env` carries what Kafka's coordinator reads besides the group: the time, the configuration, the metadata image,
the group's scheduled timers (Kafka's `timer.isScheduled`) and the server-side assignors.
"""

from __future__ import annotations

import enum
from dataclasses import replace
from typing import Iterable, Mapping

from msgspec import UNSET, structs

from assignors.api import PartitionAssignorError, SubscriptionType
from schemas.consumer_group import (
    CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartitions,
)
from schemas.messages import API_VERSIONS
from state.consumer import records
from state.config import CoordinatorConfig
from state.consumer.migration.conversion import downgrade_record, validate_online_downgrade
from state.consumer.group import (
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    Partitions,
    partitions_of,
    same_partitions,
    subscription_type,
)
from state.consumer.assignment.reconciliation import is_subscription_consistent, reconcile, subscribed_topic_ids
from state.topics.regex import InvalidRegularExpression, compile_regex, matching_topics
from state.consumer.assignment.target import build_target_assignment
from state.topics.image import (
    ResolvedRegularExpression,
    kafka_uuid,
    metadata_hash,
)
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.errors import CoordinatorError, Errors
from state.records import Record
from state.rules import authorize_member
from state.handling.timers import (
    CONSUMER_JOIN_TIMEOUT_PREFIX,
    CONSUMER_REBALANCE_TIMEOUT_PREFIX,
    CONSUMER_REGEX_REFRESH,
    CONSUMER_SYNC_TIMEOUT_PREFIX,
    CONSUMER_SESSION_TIMEOUT_PREFIX,
    Cancel,
    Schedule,
    TimerOperation,
    consumer_join_timeout_key,
    consumer_rebalance_timeout_key,
    consumer_session_timeout_key,
    consumer_sync_timeout_key,
    parse_consumer_rebalance_timeout_key,
)

REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000
"""Kafka's minimum time between two resolutions of a group's regular expressions."""


def _result(written: Iterable[Record] = (), response: object = None,
            timers: Iterable[TimerOperation] = ()) -> CoordinatorResult:
    return CoordinatorResult(list(written), [] if response is None else [response], list(timers))  # type: ignore


# -- the request ---------------------------------------------------------------------------------------------------

def consumer_group_heartbeat(group: ConsumerGroup | None, request: ConsumerGroupHeartbeatRequest,
                             env: Env) -> CoordinatorResult:
    """The records, response and timer operations of one heartbeat; an error is answered, never raised."""
    try:
        if not env.config.consumer_protocol_enabled:
            raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "The consumer group protocol is not enabled.")
        validate_request(request, env)
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return _leave(group, request, env)
        return _heartbeat(group, request, env)
    except CoordinatorError as exc:
        return _result(response=ConsumerGroupHeartbeatResponse(
            request_id=request.request_id, group_id=request.group_id, error_code=exc.code,
            error_message=exc.message or None))


def _version(request: ConsumerGroupHeartbeatRequest) -> int:
    version = request.api_version
    return API_VERSIONS["ConsumerGroupHeartbeat"][1] if version is UNSET else version  # type: ignore


def _blank(value: str) -> bool:
    """Java's `value.trim().isEmpty()`: only characters up to U+0020."""
    return not value.strip("".join(map(chr, range(0x21))))


def _invalid(message: str) -> CoordinatorError:
    return CoordinatorError(Errors.INVALID_REQUEST, message)


def validate_request(request: ConsumerGroupHeartbeatRequest, env: Env) -> None:
    """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid, in its order (INVALID_REQUEST unless said)."""
    epoch = request.member_epoch
    if (_version(request) >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION or epoch > 0
            or epoch == LEAVE_GROUP_MEMBER_EPOCH) and _blank(request.member_id):
        raise _invalid("MemberId can't be empty.")
    if _blank(request.group_id):
        raise _invalid("GroupId can't be empty.")
    if request.instance_id is not None and _blank(request.instance_id):
        raise _invalid("InstanceId can't be empty.")
    if request.rack_id is not None and _blank(request.rack_id):
        raise _invalid("RackId can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise _invalid("TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if request.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid("MemberEpoch is invalid.")
    names = env.assignor_names
    if request.server_assignor is not None and request.server_assignor not in names:
        raise CoordinatorError(Errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not "
                               f"supported. Supported assignors: {', '.join(names)}.")


# -- leaving -------------------------------------------------------------------------------------------------------

def _existing_group(group: ConsumerGroup | None, group_id: str) -> ConsumerGroup:
    if group is None:
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return group


def _existing_member(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID,
                               f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def _leave(group: ConsumerGroup | None, request: ConsumerGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    group = _existing_group(group, request.group_id)
    response = ConsumerGroupHeartbeatResponse(request_id=request.request_id, group_id=request.group_id,
                                              error_code=Errors.NONE, member_id=request.member_id,
                                              member_epoch=request.member_epoch)
    if request.instance_id is None:
        member = _existing_member(group, request.member_id)
        authorize_member(member, member.member_id, request.principal)
        return fence_members(group, [member], response, env)
    member = _throw_if_static_member_is_unknown(group.static_member(request.instance_id), request.instance_id)
    _throw_if_instance_id_is_fenced(member, request.member_id, request.instance_id)
    authorize_member(member, member.member_id, request.principal)
    if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
        return fence_members(group, [member], response, env)
    # A static member's temporary leave: it keeps its partitions (held from epoch 0 by whoever rejoins with its
    # instance id, KIP-1251) and its session timer, which fences it if it does not come back in time.
    leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={},
                      assigned_partitions={t: dict.fromkeys(p, 0) for t, p in member.assigned_partitions.items()})
    return _result((records.current_assignment(group.group_id, leaving),),
                  structs.replace(response, member_id=member.member_id))


def fence_members(group: ConsumerGroup, members: Iterable[ConsumerGroupMember], response: object,
                  env: Env) -> CoordinatorResult:
    """Remove the members (Kafka's consumerGroupFenceMembers): their records tombstoned, the regular expressions
    only they subscribed to tombstoned, the group epoch bumped, their timers cancelled."""
    leaving = list(members)
    if not leaving:
        return _result(response=response)
    if len(leaving) == 1 and validate_online_downgrade(group, leaving[0].member_id, env.config):
        # The last member of the consumer protocol leaves members of the classic protocol only: the group goes
        # back to a classic group (Kafka's convertToClassicGroup), whose runtime prepares a rebalance.
        timers: list[TimerOperation] = []
        for member_id in sorted(group.members):
            timers += _cancel_member_timers(member_id, env)
        return _result((*records.delete_records(group),
                        downgrade_record(group, leaving[0].member_id, env.image, env.now_ms)), response, timers)
    out: list[Record] = []
    for member in leaving:
        out += _remove_member(group.group_id, member.member_id)
    regexes = _last_subscribers(group, leaving)
    out += [records.regular_expression_tombstone(group.group_id, regex) for regex in regexes]
    changed: dict[str, ConsumerGroupMember | None] = {m.member_id: None for m in leaving}
    names, regex_counts = _counts_after(group, changed)
    resolved = {r: v for r, v in group.resolved_regexes.items() if r not in regexes}
    topics = _topic_counts(names, regex_counts, resolved)
    metadata = metadata_hash(topics, env.image) if env.image.known else group.metadata_hash
    out.append(records.group_epoch(group.group_id, group.group_epoch + 1, metadata))
    timers = []
    for member in leaving:
        timers += _cancel_member_timers(member.member_id, env)
    return _result(tuple(out), response, tuple(timers))


def _remove_member(group_id: str, member_id: str) -> list[Record]:
    """The order matters: replaying them removes the member only after its assignments are gone."""
    return [records.current_assignment_tombstone(group_id, member_id),
            records.target_assignment_tombstone(group_id, member_id),
            records.member_subscription_tombstone(group_id, member_id)]


def _last_subscribers(group: ConsumerGroup, leaving: list[ConsumerGroupMember]) -> list[str]:
    """The regular expressions no member subscribes to once `leaving` are gone (Kafka's
    maybeDeleteResolvedRegularExpressions)."""
    counts: dict[str, int] = {}
    for member in leaving:
        if member.regex is not None:
            counts[member.regex] = counts.get(member.regex, 0) + 1
    return sorted(regex for regex, n in counts.items() if group.subscribed_regexes[regex] == n)


def _cancel_member_timers(member_id: str, env: Env) -> list[TimerOperation]:
    return [Cancel(consumer_session_timeout_key(member_id)), *_cancel_rebalance_timers(member_id, env),
            *(Cancel(key) for key in (consumer_join_timeout_key(member_id), consumer_sync_timeout_key(member_id))
              if key in env.timers)]


def _cancel_rebalance_timers(member_id: str, env: Env, keep: str | None = None) -> list[TimerOperation]:
    return [Cancel(key) for key in sorted(env.timers)
            if key.startswith(CONSUMER_REBALANCE_TIMEOUT_PREFIX) and key != keep
            and parse_consumer_rebalance_timeout_key(key)[0] == member_id]


# -- a regular heartbeat -------------------------------------------------------------------------------------------

def _heartbeat(group: ConsumerGroup | None, request: ConsumerGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    group_id = request.group_id
    joining = request.member_epoch == 0
    if group is None:
        if not joining:
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        group = ConsumerGroup(group_id)  # new: its records create it
    _throw_if_group_is_full(group, request.member_id, env.config)
    member_id = request.member_id or kafka_uuid(f"{group_id}\x00{request.request_id}\x00{env.now_ms}")
    owned = _owned(request)
    taken_over, replaced = NOTHING, None
    if request.instance_id is None:
        member = _dynamic_member(group, member_id, request.member_epoch, owned, joining, request.principal)
    else:
        member, taken_over, replaced = _static_member(group, member_id, request.member_epoch, request.instance_id,
                                                      owned, joining, request.principal)

    updated = replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor_name=(request.server_assignor if request.server_assignor is not None
                              else member.server_assignor_name),
        subscribed_topic_names=(tuple(sorted(set(request.subscribed_topic_names)))
                                if request.subscribed_topic_names is not None else member.subscribed_topic_names),
        subscribed_topic_regex=(request.subscribed_topic_regex if request.subscribed_topic_regex is not None
                                else member.subscribed_topic_regex),
        client_id=request.client_id,
        client_host=request.client_host,
        principal=request.principal if request.principal is not None else member.principal,
    )
    changed = {} if replaced is None else {replaced: None}
    updated, reconciled = update_and_reconcile(group, member, updated, owned, changed, env)
    session = Schedule(consumer_session_timeout_key(member_id), env.now_ms + env.config.group_consumer_session_timeout_ms)

    full_request = (request.rebalance_timeout_ms != -1 and request.topic_partitions is not None
                    and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None))
    assignment = None
    if joining or full_request or not same_partitions(member.assigned_partitions, updated.assigned_partitions):
        assignment = response_assignment(partitions_of(updated.assigned_partitions))
    response = ConsumerGroupHeartbeatResponse(
        request_id=request.request_id, group_id=group_id, error_code=Errors.NONE, member_id=updated.member_id,
        member_epoch=updated.member_epoch, heartbeat_interval_ms=heartbeat_interval_ms(env.config, env.waited_ms),
        assignment=assignment)
    return taken_over + reconciled + answer(response, session)


def update_and_reconcile(group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                         owned: Partitions | None, changed: Mapping[str, ConsumerGroupMember | None],
                         env: Env) -> tuple[ConsumerGroupMember, CoordinatorResult]:
    """Steps 1-3 of a heartbeat for a member whose declared state is `updated` (`member` as the group has it; the
    other members `changed` by the same request: None when removed): the subscription record and group epoch, a new
    target when the group epoch is ahead, and the reconciliation. A classic member's JoinGroup inside a consumer
    group goes through the same steps (`state.consumer.migration`). Returns the member as reconciled, and the
    records and timer operations of the three steps."""
    group_id = group.group_id
    changed = {**changed, updated.member_id: updated}

    # 1. The member's subscription, the regular expressions, the group epoch.
    names_changed = False
    subscription = NOTHING
    if updated != member:
        subscription = CoordinatorResult([records.member_subscription(group_id, updated)])
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
    regex_status, regexes = _maybe_update_regular_expressions(group, member, updated, env)
    subscription_changed = names_changed or regex_status is not _RegexStatus.NO_CHANGE
    bump = group.group_epoch == 0 or names_changed or regex_status is _RegexStatus.UPDATED_AND_RESOLVED
    group_epoch, kind, epoch = _update_subscription_metadata(group, bump, changed, env)

    # 2. The target assignment.
    if group_epoch > group.assignment_epoch:
        target, assigned = _update_target_assignment(group, group_epoch, updated, changed, kind, env)
        target_epoch = group_epoch
    else:
        target, assigned = group.target_of(updated.member_id, updated.instance_id), NOTHING
        target_epoch = group.assignment_epoch

    # 3. Reconciliation.
    reconciled, reconciliation = _maybe_reconcile(group, updated, target_epoch, target, subscription_changed, owned,
                                                  env)
    return reconciled, subscription + regexes + epoch + assigned + reconciliation


def response_assignment(partitions: Partitions) -> ConsumerGroupHeartbeatResponseAssignment:
    return ConsumerGroupHeartbeatResponseAssignment(tuple(
        ConsumerGroupHeartbeatResponseTopicPartitions(topic, tuple(sorted(parts)))
        for topic, parts in sorted(partitions.items()) if parts))


def _owned(request: ConsumerGroupHeartbeatRequest) -> Partitions | None:
    if request.topic_partitions is None:
        return None
    owned: dict[str, frozenset[int]] = {}
    for tp in request.topic_partitions:
        owned[tp.topic_id] = owned.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return owned


def _throw_if_group_is_full(group: ConsumerGroup, member_id: str, config: CoordinatorConfig) -> None:
    limit = config.group_consumer_max_size
    if len(group.members) >= limit and (not member_id or member_id not in group.members):
        raise CoordinatorError(Errors.GROUP_MAX_SIZE_REACHED,
                               f"The consumer group has reached its maximum capacity of {limit} members.")


def _dynamic_member(group: ConsumerGroup, member_id: str, epoch: int, owned: Partitions | None,
                    joining: bool, principal: str | None) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        if not joining:
            _existing_member(group, member_id)
        return ConsumerGroupMember(member_id)
    authorize_member(member, member_id, principal)
    _throw_if_member_epoch_is_invalid(member, epoch, owned)
    return member


def _static_member(group: ConsumerGroup, member_id: str, epoch: int, instance_id: str, owned: Partitions | None,
                   joining: bool, principal: str | None,
                   classic: bool = False) -> tuple[ConsumerGroupMember, CoordinatorResult, str | None]:
    """The member of a static member's request, the records of its taking over its instance id's place (when it
    comes back under a new member id), and the id of the member it replaced (None: none).

    `classic`: the member joins with the classic protocol, so it replaces a member of its instance id that has
    not left (Kafka does, when either of them uses the classic protocol). Taking over the instance id acts on its
    member, which must belong to `principal` (`state.rules.authorize`), as a classic group's static member."""
    existing = group.static_member(instance_id)
    if not joining:
        member = _throw_if_static_member_is_unknown(existing, instance_id)
        _throw_if_instance_id_is_fenced(member, member_id, instance_id)
        authorize_member(member, member_id, principal)
        _throw_if_member_epoch_is_invalid(member, epoch, owned)
        return member, NOTHING, None
    if existing is None:
        member = group.members.get(member_id)
        if member is None:
            return ConsumerGroupMember(member_id), NOTHING, None
        authorize_member(member, member_id, principal)
        return member, NOTHING, None
    authorize_member(existing, existing.member_id, principal)
    if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not (classic or existing.uses_classic_protocol):
        raise CoordinatorError(Errors.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                               f"{instance_id} cannot join the group because the instance id is owned by "
                               f"{existing.member_id} member.")
    # The instance comes back under a new member id: a copy of the member at epoch 0 takes its place, with its
    # subscription, target and partitions, so a rejoin moves no partition.
    member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
    taken_over = CoordinatorResult([
        *_remove_member(group.group_id, existing.member_id),
        records.member_subscription(group.group_id, member),
        records.target_assignment(group.group_id, member_id, group.target_assignment.get(existing.member_id, {})),
        records.current_assignment(group.group_id, member)])
    return member, taken_over, existing.member_id if existing.member_id != member_id else None


def _throw_if_static_member_is_unknown(member: ConsumerGroupMember | None, instance_id: str) -> ConsumerGroupMember:
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    return member


def _throw_if_instance_id_is_fenced(member: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
    if member.member_id != member_id:
        raise CoordinatorError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                               f"{instance_id} was fenced by member {member.member_id}.")


def _throw_if_member_epoch_is_invalid(member: ConsumerGroupMember, received: int, owned: Partitions | None) -> None:
    """Epoch 0 always passes: the member rejoins and gets its current state back (KAFKA-19233). The previous
    epoch passes with owned partitions that are all still assigned: the answer that bumped it may be lost."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise CoordinatorError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                               f"({received}) than the one known by the group coordinator ({member.member_epoch}). "
                               "The member must abandon all its partitions and rejoin.")
    if received < member.member_epoch and (received != member.previous_member_epoch
                                           or not _is_subset(owned, member.assigned())):
        raise CoordinatorError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch "
                               f"({received}) than the one known by the group coordinator ({member.member_epoch}). "
                               "The member must abandon all its partitions and rejoin.")


def _is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(topic in assigned and parts <= assigned[topic] for topic, parts in owned.items())


# -- subscriptions and regular expressions -------------------------------------------------------------------------

class _RegexStatus(enum.Enum):
    NO_CHANGE = enum.auto()
    UPDATED = enum.auto()
    UPDATED_AND_RESOLVED = enum.auto()


def _maybe_update_regular_expressions(group: ConsumerGroup, member: ConsumerGroupMember,
                                      updated: ConsumerGroupMember,
                                      env: Env) -> tuple[_RegexStatus, CoordinatorResult]:
    """Kafka's maybeUpdateRegularExpressions: a regular expression new to the group is compiled (an invalid one is
    INVALID_REGULAR_EXPRESSION) and resolved soon; one the group has resolved already counts at once; the last
    subscriber of one tombstones it. The group's expressions are resolved again (a timer due now, as Kafka's
    executor) when none is being resolved, the last resolution is 10 s old, and an expression is unresolved,
    topics were created since, or `group.consumer.regex.refresh.interval.ms` passed."""
    old, new = member.regex, updated.regex
    status = _RegexStatus.NO_CHANGE
    refresh = False
    tombstone: list[Record] = []
    if member.subscribed_topic_regex != updated.subscribed_topic_regex:
        status = _RegexStatus.UPDATED
        if old is not None and group.subscribed_regexes[old] == 1:
            tombstone.append(records.regular_expression_tombstone(group.group_id, old))
        if new is not None:
            if group.subscribed_regexes[new] == 0:
                try:
                    compile_regex(new)
                except InvalidRegularExpression as exc:
                    raise CoordinatorError(Errors.INVALID_REGULAR_EXPRESSION, str(exc)) from None
                refresh = True
            elif new in group.resolved_regexes:
                status = _RegexStatus.UPDATED_AND_RESOLVED
        elif old is not None:
            status = _RegexStatus.UPDATED_AND_RESOLVED
    if not refresh and not group.subscribed_regexes:
        return status, CoordinatorResult(tombstone)
    if CONSUMER_REGEX_REFRESH in env.timers:
        return status, CoordinatorResult(tombstone)
    last = group.last_regex_refresh_ms
    if last is not None and env.now_ms <= last + REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
        return status, CoordinatorResult(tombstone)
    _, regexes = _counts_after(group, {member.member_id: updated})
    refresh = (refresh or len(regexes) != len(group.resolved_regexes)
               or group.last_regex_version < env.image.new_topics_version
               or last is None or env.now_ms > last + env.config.group_consumer_regex_refresh_interval_ms)
    if refresh and regexes:
        return status, CoordinatorResult(tombstone, [], [Schedule(CONSUMER_REGEX_REFRESH, env.now_ms)])
    return status, CoordinatorResult(tombstone)


def refresh_regular_expressions(group: ConsumerGroup | None, env: Env) -> CoordinatorResult:
    """Resolve every regular expression the group subscribes to against the image's topic names, and write what
    Kafka's handleRegularExpressionsResult writes: a record per expression, and a group epoch bump when the topics
    of one changed or the subscribed topics' metadata hash did."""
    if group is None or not group.subscribed_regexes:
        return _result()
    topic_names = sorted(env.image.by_name)
    resolved = dict(group.resolved_regexes)
    out: list[Record] = []
    bump = False
    for regex in sorted(group.subscribed_regexes):
        new = ResolvedRegularExpression(matching_topics(regex, topic_names), env.image.version, env.now_ms)
        old = group.resolved_regexes.get(regex)
        bump = bump or old is None or old.topics != new.topics
        resolved[regex] = new
        out.append(records.regular_expression(group.group_id, regex, new))
    topics = _topic_counts(group.subscribed_names, group.subscribed_regexes, resolved)
    metadata = metadata_hash(topics, env.image)
    if bump or metadata != group.metadata_hash:
        out.append(records.group_epoch(group.group_id, group.group_epoch + 1, metadata))
    return _result(tuple(out))


def _counts_after(group: ConsumerGroup, changed: Mapping[str, ConsumerGroupMember | None]) -> tuple[dict, dict]:
    """(members per topic name, members per regular expression) once `changed` applies (None: removed)."""
    names = dict(group.subscribed_names)
    regexes = dict(group.subscribed_regexes)
    for member_id, new in changed.items():
        for member, step in ((group.members.get(member_id), -1), (new, 1)):
            if member is None:
                continue
            for name in member.subscribed_topic_names:
                names[name] = names.get(name, 0) + step
            if member.regex is not None:
                regexes[member.regex] = regexes.get(member.regex, 0) + step
    return ({n: c for n, c in names.items() if c > 0}, {r: c for r, c in regexes.items() if c > 0})


def _topic_counts(names: Mapping[str, int], regexes: Mapping[str, int],
                  resolved: Mapping[str, ResolvedRegularExpression]) -> dict[str, tuple[int, int]]:
    """Kafka's subscribed topic names: topic -> (members naming it, resolved regular expressions matching it)."""
    by_regex: dict[str, int] = {}
    for regex in regexes:
        if regex in resolved:
            for topic in resolved[regex].topics:
                by_regex[topic] = by_regex.get(topic, 0) + 1
    return {t: (names.get(t, 0), by_regex.get(t, 0)) for t in sorted(set(names) | set(by_regex))}


def _update_subscription_metadata(group: ConsumerGroup, bump: bool,
                                  changed: Mapping[str, ConsumerGroupMember | None],
                                  env: Env) -> tuple[int, SubscriptionType, CoordinatorResult]:
    """Kafka's updateSubscriptionMetadata: the group epoch (bumped when asked, or when the subscribed topics'
    metadata hash changed) and the subscription type, as they are once `changed` applies, and the records that
    say so. Without a metadata image the hash is not looked at (the group keeps the one it has until the cluster's
    topics are known)."""
    names, regexes = _counts_after(group, changed)
    topics = _topic_counts(names, regexes, group.resolved_regexes)
    added = sum(1 for m, new in changed.items() if new is not None and m not in group.members)
    removed = sum(1 for m, new in changed.items() if new is None and m in group.members)
    kind = subscription_type(regexes, topics, len(group.members) + added - removed)
    epoch = group.group_epoch
    if not (bump or env.image.known):
        return epoch, kind, NOTHING
    metadata = metadata_hash(topics, env.image) if env.image.known else group.metadata_hash
    written = []
    if bump or metadata != group.metadata_hash:
        epoch += 1
        written.append(records.group_epoch(group.group_id, epoch, metadata))
    if group.has_subscription_metadata_record:
        written.append(records.subscription_metadata_tombstone(group.group_id))
    return epoch, kind, CoordinatorResult(written)


def _update_target_assignment(group: ConsumerGroup, group_epoch: int, updated: ConsumerGroupMember,
                              changed: Mapping[str, ConsumerGroupMember | None], kind: SubscriptionType,
                              env: Env) -> tuple[Partitions, CoordinatorResult]:
    """The new target (Kafka's TargetAssignmentBuilder): the member's part of it, and the records."""
    name = group.preferred_server_assignor(changed) or env.assignor_names[0]
    try:
        result = build_target_assignment(
            group_id=group.group_id, group_epoch=group_epoch, assignor=env.assignor(name), members=group.members,
            updated=changed, static_members=group.static_members, subscription_type=kind,
            target=group.target_assignment, resolved_regexes=group.resolved_topics(), image=env.image,
            now_ms=env.now_ms)
    except PartitionAssignorError as exc:
        raise CoordinatorError(Errors.UNKNOWN_SERVER_ERROR,
                               f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from None
    return result.members.get(updated.member_id, {}), CoordinatorResult(list(result.records))


def _subscribed(group: ConsumerGroup, member: ConsumerGroupMember, target: Partitions,
                env: Env) -> tuple[frozenset[str], bool]:
    """(the topic ids the member subscribes to, whether its assignment must be made to match them now). Without a
    metadata image nothing can be judged: every topic counts as subscribed, nothing is enforced."""
    if not env.image.known:
        return frozenset(target) | frozenset(member.assigned_partitions), False
    resolved = group.resolved_topics()
    return (subscribed_topic_ids(member, resolved, env.image),
            not is_subscription_consistent(member, resolved, env.image))


def _maybe_reconcile(group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int, target: Partitions,
                     subscription_changed: bool, owned: Partitions | None,
                     env: Env) -> tuple[ConsumerGroupMember, CoordinatorResult]:
    """Kafka's maybeReconcile: a current-assignment record when the member moves; the revocation deadline armed
    when it must revoke partitions (with the epoch it must leave), cancelled otherwise."""
    subscribed, inconsistent = _subscribed(group, member, target, env)
    enforce = subscription_changed or inconsistent
    if not enforce and member.is_reconciled_to(target_epoch):
        return member, NOTHING
    updated = reconcile(member, target_epoch=target_epoch, target=target,
                        partition_epoch=group.current_partition_epoch, owned=owned, subscribed=subscribed,
                        enforce_subscription=enforce)
    if updated == member:
        return updated, NOTHING
    moved = [records.current_assignment(group.group_id, updated)]
    if updated.state is MemberState.UNREVOKED_PARTITIONS:
        key = consumer_rebalance_timeout_key(updated.member_id, updated.member_epoch)
        timers = [*_cancel_rebalance_timers(updated.member_id, env, keep=key),
                  Schedule(key, env.now_ms + updated.rebalance_timeout_ms)]
    else:
        timers = _cancel_rebalance_timers(updated.member_id, env)
    return updated, CoordinatorResult(moved, [], timers)


# -- timers --------------------------------------------------------------------------------------------------------

def on_timer(group: ConsumerGroup | None, key: str, env: Env) -> CoordinatorResult:
    """A timer that came due (the caller has dropped it): it re-checks what it was armed for, so a timer that no
    longer applies does nothing."""
    if key == CONSUMER_REGEX_REFRESH:
        return refresh_regular_expressions(group, env)
    if group is None:
        return _result()
    if key.startswith(CONSUMER_SESSION_TIMEOUT_PREFIX):
        member = group.members.get(key[len(CONSUMER_SESSION_TIMEOUT_PREFIX):])
        return _result() if member is None else fence_members(group, [member], None, env)
    if key.startswith((CONSUMER_JOIN_TIMEOUT_PREFIX, CONSUMER_SYNC_TIMEOUT_PREFIX)):
        member = group.members.get(key.partition(":")[2])
        return _result() if member is None else fence_members(group, [member], None, env)
    if key.startswith(CONSUMER_REBALANCE_TIMEOUT_PREFIX):
        member_id, epoch = parse_consumer_rebalance_timeout_key(key)
        member = group.members.get(member_id)
        if member is None or member.member_epoch != epoch:
            return _result()
        return fence_members(group, [member], None, env)
    return _result()


def session_timeout_ms(member: ConsumerGroupMember, env: Env) -> int:
    """A classic member's own session timeout (from its JoinGroup); `group.consumer.session.timeout.ms` else."""
    classic = member.classic_member_metadata
    return env.config.group_consumer_session_timeout_ms if classic is None else classic.session_timeout_ms


def on_loaded(group: ConsumerGroup, env: Env) -> tuple[TimerOperation, ...]:
    """The timers a loaded group starts with (Kafka's onLoaded; timers are not in the records): every member's
    session from now, and the revocation deadline of every member that must revoke partitions."""
    timers: list[TimerOperation] = []
    for member_id in sorted(group.members):
        member = group.members[member_id]
        timers.append(Schedule(consumer_session_timeout_key(member_id), env.now_ms + session_timeout_ms(member, env)))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            timers.append(Schedule(consumer_rebalance_timeout_key(member_id, member.member_epoch),
                                   env.now_ms + member.rebalance_timeout_ms))
    return tuple(timers)


# -- the heartbeat interval told -----------------------------------------------------------------------------------

WAITS_PER_INTERVAL = 4
"""How many of the last wait the interval told leaves room for."""


def heartbeat_interval_ms(config: CoordinatorConfig, waited_ms: int) -> int:
    """The interval to tell a member whose heartbeat waited `waited_ms` for its batch: Kafka's, lengthened when
    batches run long.

    Kafka tells every member `group.consumer.heartbeat.interval.ms`. librdkafka gives a ConsumerGroupHeartbeat that
    interval to be answered before it times the request out, and here a heartbeat that changes something waits for a
    micro-batch: when batches run longer than the interval, its answer comes too late and is lost. So the coordinator
    tells a longer interval when a heartbeat waited long for its batch (back-pressure through the protocol itself,
    issue 26 item 5; docs/wire-format.md, "The heartbeat interval"):

        told = min(max(configured, ceil(4 x wait / 1 s) s), max(configured, min(max interval, session timeout / 3)))

    `wait` is the time from the request's arrival (its control-topic record's timestamp) to the batch that handles it
    (the call's time): it comes from the inputs, so a replay tells the same. Four waits cover the wait of the next
    heartbeat and its batch's own run with room for a slower one; whole seconds keep the interval from moving with
    every batch. The cap is Kafka's `group.consumer.max.heartbeat.interval.ms`, and a third of the session timeout so
    that a member still heartbeats at least three times per session; it never goes below the configured interval.
    It learns only from heartbeats that waited: when batches turn slow at once (a large group's rebalance), the answer
    that would tell the longer interval is itself the late one, which is why the configured interval stays Kafka's 5 s
    (docs/operations-streaming.md, "Issue 26's levers, measured").
    """
    configured = config.group_consumer_heartbeat_interval_ms
    lengthened = -(-WAITS_PER_INTERVAL * max(waited_ms, 0) // 1000) * 1000
    limit = max(configured, min(config.group_consumer_max_heartbeat_interval_ms,
                                config.group_consumer_session_timeout_ms // 3))
    return min(max(configured, lengthened), limit)
