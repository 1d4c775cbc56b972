"""ShareGroupHeartbeat and a share group's timers: Kafka's GroupMetadataManager.shareGroupHeartbeat (with
GroupCoordinatorService's request validation), its session timeout and its assignment interval.

`share_group_heartbeat(group, request, env)` validates and returns a `CoordinatorResult`; it changes nothing. A
heartbeat, as Kafka's:

1. the member is created (epoch 0) or found; a change of rack, client or subscription writes its record (10);
2. its subscribed topics' partitions are initialised at once (record 15; Kafka initialises them in the background
   and assigns them one heartbeat later, here the answer that subscribes already carries them);
3. the group epoch (11) is bumped when a subscription changed, when initialised partitions are not assigned yet,
   or when the subscribed topics' metadata changed (their hash, KIP-1101);
4. when the group epoch is ahead of the target assignment's, the simple assignor computes a new target (12, 13),
   at most once per `share.assignment.interval.ms` (Kafka 4.3, KIP-1263: a timer computes it later otherwise);
5. the member jumps to its target (14): no revocation, partitions can be shared; its session timer is re-armed.

Epoch -1 leaves: the member is fenced (its records tombstoned, the group epoch bumped). Errors are Kafka's, with
Kafka's messages.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from assignors.server import simple
from schemas.share_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupHeartbeatResponseAssignment,
    ShareTopicPartitions,
)
from state.config import CoordinatorConfig
from state.topics.image import MetadataImage, metadata_hash, topic_ids
from state.handling import step
from state.handling.step import CoordinatorResult
from state.errors import CoordinatorError, Errors
from state.records import Record
from state.rules import authorize_member
from state.share import records
from state.share.configs import ShareSettings
from state.share.group import InitializedTopic, Partitions, ShareGroup, ShareGroupMember
from state.handling.timers import Cancel, Schedule, TimerOperation

SHARE_SESSION_TIMEOUT_PREFIX = "share-session-timeout:"
"""+ member id: a share member's session; it is fenced when it expires."""
SHARE_ASSIGNMENT = "share-assignment"
"""A target assignment put off by `share.assignment.interval.ms`."""


def share_session_timeout_key(member_id: str) -> str:
    return SHARE_SESSION_TIMEOUT_PREFIX + member_id


class Env(step.Env):
    """What a share handler reads besides the group and the request: the one shape's `Env`, whose group id's
    configs are a share group's settings (`ShareSettings`)."""

    __slots__ = ()

    def __init__(self, now_ms: int, config: CoordinatorConfig | None = None, image: MetadataImage | None = None,
                 timers: Mapping[str, int] | None = None, group_configs: Mapping[str, str] | None = None,
                 waited_ms: int = 0, topics: bytes | None = None, assignors: Mapping | None = None,
                 batch_ms: int | None = None) -> None:
        super().__init__(now_ms, config, image, timers, assignors, waited_ms, topics, group_configs, batch_ms)

    @classmethod
    def of(cls, env: step.Env) -> Env:
        """A share handler's environment from the step loop's."""
        return cls(env.now_ms, env.config, env._image, env.timers, env.group_configs, env.waited_ms, env._topics,
                   env.assignors, env.batch_ms)

    @property
    def settings(self) -> ShareSettings:
        return ShareSettings.of(self.group_configs, self.config)

    def at(self, now_ms: int) -> Env:
        """The same environment at another time (a heartbeat a gateway heard earlier)."""
        return self.replace(now_ms=now_ms)  # type: ignore[return-value]


def _result(written: Iterable[Record] = (), response: object = None,
            timers: Iterable[TimerOperation] = ()) -> CoordinatorResult:
    return CoordinatorResult(list(written), [] if response is None else [response], list(timers))  # type: ignore


def _blank(value: str) -> bool:
    """Java's `value.trim().isEmpty()`."""
    return not value.strip("".join(map(chr, range(0x21))))


def validate_request(request: ShareGroupHeartbeatRequest) -> None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid, in its order."""
    if _blank(request.member_id):
        raise CoordinatorError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
    if _blank(request.group_id):
        raise CoordinatorError(Errors.INVALID_REQUEST, "GroupId can't be empty.")
    if request.rack_id is not None and _blank(request.rack_id):
        raise CoordinatorError(Errors.INVALID_REQUEST, "RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise CoordinatorError(Errors.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise CoordinatorError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")


def share_group_heartbeat(group: ShareGroup | None, request: ShareGroupHeartbeatRequest,
                          env: Env) -> CoordinatorResult:
    """The records, response and timer operations of one heartbeat; an error is answered, never raised."""
    try:
        if env.config.share_version < 1:
            raise CoordinatorError(Errors.UNSUPPORTED_VERSION, "Share groups are not enabled.")
        validate_request(request)
        if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            return _leave(group, request, env)
        return _heartbeat(group, request, env)
    except CoordinatorError as exc:
        return _result(response=ShareGroupHeartbeatResponse(
            request_id=request.request_id, group_id=request.group_id, error_code=exc.code,
            error_message=exc.message or None))


# -- leaving -------------------------------------------------------------------------------------------------------


def _existing_group(group: ShareGroup | None, group_id: str) -> ShareGroup:
    if group is None:
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
    return group


def _existing_member(group: ShareGroup, member_id: str) -> ShareGroupMember:
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(Errors.UNKNOWN_MEMBER_ID,
                               f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def _leave(group: ShareGroup | None, request: ShareGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    group = _existing_group(group, request.group_id)
    member = _existing_member(group, request.member_id)
    authorize_member(member, member.member_id, request.principal)
    response = ShareGroupHeartbeatResponse(request_id=request.request_id, group_id=request.group_id,
                                           error_code=Errors.NONE, member_id=request.member_id,
                                           member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
    return fence_member(group, member, response, env)


def fence_member(group: ShareGroup, member: ShareGroupMember, response: object, env: Env) -> CoordinatorResult:
    """Kafka's shareGroupFenceMember: tombstones 14, 13 and 10, the group epoch bumped (with the metadata hash of
    the subscriptions left), the session timer cancelled. A leave or an expiry releases no record: a member's
    records go back when its share session closes or their locks expire."""
    group_id = group.group_id
    out = [records.current_assignment_tombstone(group_id, member.member_id),
           records.target_assignment_tombstone(group_id, member.member_id),
           records.member_subscription_tombstone(group_id, member.member_id)]
    names = _names_after(group, {member.member_id: None})
    hashed = metadata_hash(names, env.image) if env.image.known else group.metadata_hash
    out.append(records.group_epoch(group_id, group.group_epoch + 1, hashed))
    timers: list[TimerOperation] = [Cancel(share_session_timeout_key(member.member_id))]
    return _result(out, response, timers)


def _names_after(group: ShareGroup, changed: Mapping[str, ShareGroupMember | None]) -> list[str]:
    counts = dict(group.subscribed_names)
    for member_id, member in changed.items():
        old = group.members.get(member_id)
        if old is not None:
            for name in old.subscribed_topic_names:
                counts[name] -= 1
        if member is not None:
            for name in member.subscribed_topic_names:
                counts[name] = counts.get(name, 0) + 1
    return sorted(name for name, n in counts.items() if n > 0)


# -- a regular heartbeat -------------------------------------------------------------------------------------------


def _heartbeat(group: ShareGroup | None, request: ShareGroupHeartbeatRequest, env: Env) -> CoordinatorResult:
    group_id = request.group_id
    joining = request.member_epoch == 0
    if group is None:
        if not joining:
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = ShareGroup(group_id)  # new: its records create it
    limit = env.config.group_share_max_size
    if len(group.members) >= limit and request.member_id not in group.members:
        raise CoordinatorError(Errors.GROUP_MAX_SIZE_REACHED,
                               f"The share group has reached its maximum capacity of {limit} members.")
    member = group.members.get(request.member_id)
    if member is None:
        if not joining:
            _existing_member(group, request.member_id)
        member = ShareGroupMember(request.member_id)
    else:
        authorize_member(member, member.member_id, request.principal)
        _throw_if_member_epoch_is_invalid(member, request.member_epoch)

    updated = replace(
        member,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        subscribed_topic_names=(tuple(sorted(set(request.subscribed_topic_names)))
                                if request.subscribed_topic_names is not None else member.subscribed_topic_names),
        client_id=request.client_id, client_host=request.client_host,
        principal=request.principal if request.principal is not None else member.principal)
    out: list[Record] = []
    timers: list[TimerOperation] = []
    subscription_changed = False
    if updated != member or request.member_id not in group.members:
        out.append(records.member_subscription(group_id, updated))
        subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
    names = _names_after(group, {updated.member_id: updated})

    # Initialisation: every partition of the subscribed topics, at once.
    initialized, init_changed = _initialized_after(group, names, env.image)
    if init_changed:
        out.append(records.state_partition_metadata(group_id, initialized, group.deleting))

    # The group epoch.
    group_epoch = group.group_epoch
    hashed = metadata_hash(names, env.image) if env.image.known else group.metadata_hash
    if (subscription_changed or init_changed or hashed != group.metadata_hash
            or _assignment_pending(group, names, initialized)):
        group_epoch += 1
        out.append(records.group_epoch(group_id, group_epoch, hashed))

    # The target assignment.
    members = {**group.members, updated.member_id: updated}
    if group_epoch > group.assignment_epoch and _may_assign(group, env):
        targets, assigned = compute_target(group_id, members, group.target_assignment, initialized, group_epoch, env)
        target = targets[updated.member_id]
        out += assigned
        target_epoch = group_epoch
        timers.append(Cancel(SHARE_ASSIGNMENT))
    else:
        target = group.target_assignment.get(updated.member_id, {})
        target_epoch = group.assignment_epoch if group.assignment_epoch >= 0 else 0
        if group_epoch > group.assignment_epoch and SHARE_ASSIGNMENT not in env.timers:
            timers.append(Schedule(SHARE_ASSIGNMENT, group.assignment_timestamp_ms + env.settings.assignment_interval_ms))

    # Reconciliation: straight to the target, filtered to the subscribed topics.
    reconciled = _reconcile(updated, target_epoch, target, subscription_changed, env.image)
    if reconciled != updated or request.member_id not in group.members:
        out.append(records.current_assignment(group_id, reconciled))
    timers.append(Schedule(share_session_timeout_key(updated.member_id), env.now_ms + env.settings.session_timeout_ms))

    full_request = request.subscribed_topic_names is not None
    assignment = None
    if joining or full_request or reconciled.assigned_partitions != member.assigned_partitions:
        assignment = response_assignment(reconciled.assigned_partitions)
    return _result(out, ShareGroupHeartbeatResponse(
        request_id=request.request_id, group_id=group_id, error_code=Errors.NONE, member_id=reconciled.member_id,
        member_epoch=reconciled.member_epoch, heartbeat_interval_ms=env.settings.heartbeat_interval_ms,
        assignment=assignment), timers)


def response_assignment(partitions: Partitions) -> ShareGroupHeartbeatResponseAssignment:
    return ShareGroupHeartbeatResponseAssignment(tuple(
        ShareTopicPartitions(topic, tuple(sorted(parts))) for topic, parts in sorted(partitions.items()) if parts))


def _throw_if_member_epoch_is_invalid(member: ShareGroupMember, received: int) -> None:
    """Kafka's throwIfShareGroupMemberEpochIsInvalid: the current epoch, or the previous one (its answer may
    have been lost); 0 rejoins."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise CoordinatorError(Errors.FENCED_MEMBER_EPOCH, (
            f"The share group member has a greater member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."))
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise CoordinatorError(Errors.FENCED_MEMBER_EPOCH, (
            f"The share group member has a smaller member epoch ({received}) than the one known by the group "
            f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin."))


def _initialized_after(group: ShareGroup, names: list[str],
                       image: MetadataImage) -> tuple[dict[str, InitializedTopic], bool]:
    """The initialised topics once the subscribed ones are: every partition of each subscribed topic the cluster
    has (a topic that grew gets its new partitions), the others kept (their state stays until deleted)."""
    initialized = dict(group.initialized)
    for name in names:
        topic = image.by_name.get(name)
        if topic is None or topic.topic_id in group.deleting:
            continue
        partitions = frozenset(range(topic.partitions))
        current = initialized.get(topic.topic_id)
        if current is None or not partitions <= current.partitions:
            initialized[topic.topic_id] = InitializedTopic(name, partitions | (current.partitions if current
                                                                                 else frozenset()))
    return initialized, initialized != group.initialized


def _assignment_pending(group: ShareGroup, names: list[str], initialized: Mapping[str, InitializedTopic]) -> bool:
    """Kafka's initializedAssignmentPending: members, and an initialised subscribed topic whose partitions the
    target does not cover exactly."""
    if not group.members or not initialized or not names:
        return False
    assigned: dict[str, set[int]] = {}
    for target in group.target_assignment.values():
        for topic, parts in target.items():
            assigned.setdefault(topic, set()).update(parts)
    wanted = set(names)
    return any(topic.name in wanted and assigned.get(topic_id) != set(topic.partitions)
               for topic_id, topic in initialized.items())


def _may_assign(group: ShareGroup, env: Env) -> bool:
    """KIP-1263: a new target at most once per assignment interval (the first one at once)."""
    interval = env.settings.assignment_interval_ms
    return (group.assignment_epoch < 0 or interval <= 0
            or env.now_ms - group.assignment_timestamp_ms >= interval)


def compute_target(group_id: str, members: Mapping[str, ShareGroupMember], current: Mapping[str, Partitions],
                   initialized: Mapping[str, InitializedTopic], group_epoch: int,
                   env: Env) -> tuple[dict[str, Partitions], list[Record]]:
    """The simple assignor over the initialised partitions: every member's target, and the records that write it
    (13 for each member whose target changed, then 12 with the epoch)."""
    assignable = {t: sorted(i.partitions) for t, i in initialized.items()}
    spec = [simple.ShareMember(m.member_id, topic_ids(m.subscribed_topic_names, env.image),
                               {t: tuple(sorted(p)) for t, p in current.get(m.member_id, {}).items()})
            for _, m in sorted(members.items())]
    result = simple.assign(spec, assignable)
    targets: dict[str, Partitions] = {}
    written: list[Record] = []
    for member_id in sorted(members):
        target = {t: frozenset(p) for t, p in result.get(member_id, {}).items()}
        targets[member_id] = target
        if target != dict(current.get(member_id, {})) or member_id not in current:
            written.append(records.target_assignment(group_id, member_id, target))
    written.append(records.target_assignment_epoch(group_id, group_epoch, env.now_ms))
    return targets, written


def _reconcile(member: ShareGroupMember, target_epoch: int, target: Partitions, subscription_changed: bool,
               image: MetadataImage) -> ShareGroupMember:
    """Kafka's ShareGroupAssignmentBuilder: a new target epoch moves the member to it at once (state STABLE); a
    changed subscription filters the assignment to the subscribed topics."""
    if target_epoch == member.member_epoch and not subscription_changed:
        return member
    subscribed = topic_ids(member.subscribed_topic_names, image)
    assigned = {t: p for t, p in target.items() if t in subscribed and p}
    if target_epoch != member.member_epoch:
        return replace(member, member_epoch=target_epoch, previous_member_epoch=member.member_epoch, state=0,
                       assigned_partitions=assigned)
    return replace(member, assigned_partitions=assigned)


# -- timers --------------------------------------------------------------------------------------------------------


def on_session_timeout(group: ShareGroup, member_id: str, env: Env) -> CoordinatorResult:
    """A member's session ran out: it is fenced, as on a leave."""
    member = group.members.get(member_id)
    if member is None:
        return _result()
    return fence_member(group, member, None, env)


def on_assignment_timer(group: ShareGroup, env: Env) -> CoordinatorResult:
    """The put-off target assignment: computed now, for every member; each reconciles at its next heartbeat."""
    if group.group_epoch <= group.assignment_epoch or not group.members:
        return _result()
    _, written = compute_target(group.group_id, group.members, group.target_assignment, group.initialized,
                                group.group_epoch, env)
    return _result(written)
