"""The shell's entry point: run one group's requests at one instant.

CONTRACT (the streaming job depends on exactly these names):

    route(key, value) -> Route
        Decides where a control-topic record goes, without Spark knowing the protocol:
        Route(kind="group", group_id=...)      -> to the per-group coordinator keyed by group_id
        Route(kind="directory", reply_key=...) -> ListGroups, answered from the group directory
        Route(kind="topics")                   -> the cluster's topics (`TopicMetadata`): to every state bucket, as
                                                  a request of the group TOPIC_METADATA_GROUP there
        Route(kind="reject", reason=..., response=bytes|None, reply_key=...) -> dead letter (+ error response)

    step_group(group_id, stored, requests, now_ms, config, request_times_ms=None, resumed=False,
               read_offsets=None, topics=None) -> GroupStep
        stored:   the StoredGroup this function returned last time for this group (None: never seen). It has two
                  parts, kept apart because most requests touch only the first: `metadata` (membership, timers,
                  everything but offsets) and `offsets` (the committed offsets; None when there are none).
        read_offsets: instead of `stored.offsets`, a function that reads them; called at most once, and only when
                  the step uses offsets (a shell that keeps the two parts in separate rows reads the second only
                  then).
        requests: the raw record values routed to this group, in (partition, offset) order; may be empty
                  (a timer call). Before each request, fires every timer due at its arrival time
                  (request_times_ms: the records' timestamps; default now_ms); a call without requests fires
                  what is due at now_ms. What comes due later is next_deadline_ms, which may be <= now_ms.
        resumed:  the shell restarted since its last completed call (the first new micro-batch after a restart):
                  every member's session restarts at now_ms before the requests, as when Kafka loads a group.
        topics:   the metadata of the bucket's TOPIC_METADATA_GROUP as stored (None: none yet): the cluster's topics
                  the consumer groups' server-side assignors see. The shell steps TOPIC_METADATA_GROUP first in a
                  bucket call (its requests are `TopicMetadata`; its step has no responses, records or deadline)
                  and passes what that step stored to every other group of the call.
        Returns GroupStep(metadata, offsets, offsets_changed, responses, records, dead_letters, next_deadline_ms):
          metadata         bytes to store, or None: the group is gone (drop both parts)
          offsets          the offsets part to store (None: none left), meaningful when offsets_changed; when it
                           is False the stored offsets stay as they are (and may not even have been read)
          responses        JSON values for the response topic (key = group_id)
          records          (key, value | None) for the compacted records topic; None value = tombstone
          dead_letters     (index into requests, reason) for records that could not be handled
          next_deadline_ms when to be called again with no requests (None: no timer); see state.handling.timers.is_due
        `GroupStep.stored(before)` is the StoredGroup to pass next time.
        Never raises for any input bytes. Deterministic: same arguments -> byte-identical GroupStep, whether the
        offsets come in `stored` or through `read_offsets`.

    load_group(group_id, records, now_ms, config) -> StoredGroup | None
        Rebuilds a group's stored state from its records-topic records (checkpoint lost): as Kafka loads
        __consumer_offsets, the group comes back Stable or Empty with its offsets and fresh session timers.
        None: the records leave no group. Call step_group with it at now_ms afterwards as usual.

The metadata part is JSON `{"v": STATE_SCHEMA_VERSION, "group": {...}}`, the offsets part JSON
`{"v": STATE_SCHEMA_VERSION, "offsets": [...]}`; `decode_state` reads older versions (`upgrade_state` splits a
version 1 state, which held both in one document).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Sequence, cast

import msgspec
from msgspec import UNSET, UnsetType

from schemas.consumer_group import TopicMetadata
from schemas.messages import (MAX_STRING_BYTES, GroupMetadataKey, JoinGroupRequest, LoadGroup, Liveness,
                              OffsetCommitKey, TransactionMarker, TxnOffsetCommitKey)
from state.runtime import coordinator, load
from state.views import fast_answers
from state.views import published as views
from state.config import CoordinatorConfig
from state.views.fast_answers import FastAnswer
from state.errors import INVALID_GROUP_ID, INVALID_REQUEST
from state.consumer import handlers as consumer
from state.consumer.group import ConsumerGroup
from state.consumer.stored import ConsumerGroupDoc
from state.consumer.stored import from_doc as consumer_group_of
from state.consumer.stored import to_doc as consumer_group_doc
from state.topics.image import ImageRow, apply_topic_metadata, decode_image_row, image_doc
from state.classic.group import ClassicGroup, GroupState
from state.classic.stored import CURRENT, GroupDoc
from state.classic.stored import from_doc as classic_group_of
from state.classic.stored import to_doc as classic_group_doc
from state.offset_values import Offsets, StoredOffset, StoredPending
from state.classic.member_id_round import PENDING_MEMBER, pending_member_id
from state.classic.handlers import session
from state.handling.step import CoordinatorResult, Env, answer
from state.runtime.replay import applied
from state.offsets.handlers import offsets_can_expire
from state.offsets import retention, transactions
from state.share import handlers as share
from state.share.group import ShareGroup
from state.share.stored import ShareGroupDoc
from state.share.stored import from_doc as share_group_of
from state.share.stored import to_doc as share_group_doc
from schemas.share_group import GroupConfigKey, SharePartitionSnapshotKey
from state.classic.records import kafka_group_value
from state.records import Record
from state.wire import (
    API_VERSIONS,
    BadRequest,
    decode_json,
    decode_request,
    encode,
    error_response,
    parse,
    readable_group_id,
    readable_request_id,
)

_SAFE_CHARS = MAX_STRING_BYTES // 4
"""A string of at most this many characters is at most MAX_STRING_BYTES bytes in UTF-8."""

STATE_SCHEMA_VERSION = 2
"""1: one document, offsets inside (release 0.1.0); 2: metadata and offsets apart."""


TOPIC_METADATA_GROUP = "\x00topic-metadata"
"""The reserved group id under which a state bucket keeps the cluster's topics (route kind `topics`); a client
request naming it is refused (INVALID_GROUP_ID)."""


_RESERVED = frozenset({TOPIC_METADATA_GROUP, transactions.TRANSACTIONS_GROUP})
"""Group ids a bucket keeps its own rows under; a request naming one is refused (INVALID_GROUP_ID)."""


@dataclass(frozen=True)
class Route:
    kind: Literal["group", "directory", "topics", "reject"]
    group_id: str | None = None
    reply_key: bytes | None = None
    reason: str | None = None
    response: bytes | None = None


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """A group as the shell stores it: two parts, written and read separately (see the module's contract)."""

    metadata: bytes
    offsets: bytes | None = None


OffsetsReader = Callable[[], bytes | None]


@dataclass(frozen=True)
class GroupStep:
    metadata: bytes | None
    offsets: bytes | None = None
    offsets_changed: bool = False
    responses: list[bytes] = field(default_factory=list)
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    dead_letters: list[tuple[int, str]] = field(default_factory=list)
    next_deadline_ms: int | None = None
    members_expired: int = 0
    """Members whose session (or sync deadline) ran out in this call: the job's "members expired" metric."""
    states_entered: tuple[str, ...] = ()
    """The state each group metadata record of this call put the group in, in order (the job's metrics)."""
    view: bytes | None = None
    publish_view: bool = False
    """The call may have changed the group's view (`state.views.published`), or was resumed: publish `view` on the views topic,
    keyed by the group id (None: a tombstone, the group is gone)."""
    fast_answers: tuple[FastAnswer, ...] = ()
    """Requests a gateway answered from the group's view, as the coordinator checked them (`state.views.fast_answers`):
    the job counts them and their mispredictions."""

    def stored(self, before: StoredGroup | None) -> StoredGroup | None:
        """The group to pass to the next call, given the one passed to this call."""
        if self.metadata is None:
            return None
        offsets = self.offsets if self.offsets_changed else (before.offsets if before is not None else None)
        return StoredGroup(self.metadata, offsets)


class _Envelope(msgspec.Struct):
    """What routing reads of a request; msgspec skips the rest without building it."""

    api: str
    request_id: str
    group_id: str | None = None


_ENVELOPE = msgspec.json.Decoder(_Envelope)


def route(key: bytes | None, value: bytes | None) -> Route:
    """Group requests go to their group, ListGroups to the directory; what has no usable `api`, `group_id` or
    `request_id` is rejected here, with an error response when the request id can be read.

    Reads only the envelope (the core decodes the whole request once, in `step_group`); anything unusual takes the
    field-by-field path, which says what is wrong."""
    try:
        envelope = _ENVELOPE.decode(value if value is not None else b"")
    except msgspec.DecodeError:
        pass
    else:
        api, group_id = envelope.api, envelope.group_id
        if api == "ListGroups":
            return Route("directory", reply_key=key)
        if api == TOPIC_METADATA:
            return Route("topics")
        if (group_id is not None and (api in API_VERSIONS or api in _INTERNAL_APIS) and len(group_id) <= _SAFE_CHARS
                and group_id not in _RESERVED):
            return Route("group", group_id=group_id)
    try:
        body = decode_json(value)
    except BadRequest as exc:
        return Route("reject", reason=exc.reason, reply_key=key)
    request_id = readable_request_id(body)
    api = body.get("api")
    if api == TOPIC_METADATA:
        return Route("topics")  # the step says what is wrong with it
    if request_id is None:
        return Route("reject", reason="request_id: missing or not a string", reply_key=key)
    if api == "ListGroups":
        return Route("directory", reply_key=key)
    group_id = body.get("group_id")
    if isinstance(api, str) and api in _INTERNAL_APIS and isinstance(group_id, str) and group_id not in _RESERVED:
        return Route("group", group_id=group_id)
    if not isinstance(api, str) or api not in API_VERSIONS:
        reason, code = f"unknown api {api!r}", INVALID_REQUEST
    else:
        try:
            group_id = readable_group_id(body)
        except BadRequest as exc:
            reason, code = exc.reason, INVALID_GROUP_ID
        else:
            if group_id not in _RESERVED:
                return Route("group", group_id=group_id)
            reason, code = "group_id: reserved for the coordinator's topic metadata", INVALID_GROUP_ID
    response = encode(error_response(api, request_id, group_id, code, reason))
    return Route("reject", reason=reason, reply_key=key, response=response)


def step_group(
    group_id: str, stored: StoredGroup | None, requests: Sequence[bytes], now_ms: int, config: CoordinatorConfig,
    request_times_ms: Sequence[int] | None = None, resumed: bool = False, read_offsets: OffsetsReader | None = None,
    topics: bytes | None = None,
    position: tuple[int, int] | None = None, recheck_retention: bool = False,
) -> GroupStep:
    """Never raises. A request whose handling fails unexpectedly is dead-lettered and the whole step is re-run
    from `stored` without it, so a failure cannot leave half a change behind.

    `request_times_ms` (one per request: when it reached the control topic) makes each request count at its
    arrival, as Kafka handles a request when it arrives: timers due before a request fire before it, so a
    heartbeat that arrived in time keeps its member even when the micro-batch runs late. Times are clamped
    between the group's last processing time and `now_ms`, so time never goes back. Without them every
    request counts at `now_ms`. Timers that come due after the last request fire on the next call
    (`next_deadline_ms` may then be <= `now_ms`).

    `resumed` says the coordinator was restarted before this call: a restarted query first replays its unfinished
    micro-batch at that batch's original time (which keeps its output byte-identical), so the members get those
    answers only after the outage and their next requests come late, after deadlines the replay set. Kafka restarts
    every session when a coordinator loads a group after a failover; so does a resumed call.

    `position`: the requests-topic (partition, offset) of the last of `requests`; a view published by this call
    carries it with the group's offsets where they can answer an OffsetFetch (`_fetch_position`).

    `recheck_retention`: the retention configuration may be shorter than the one the group's retention check was
    armed under (a query started with a shorter `offsets.retention.minutes`): the check is armed again under
    `config`, at the first check instant after `now_ms` at which it would remove something, as Kafka applies its
    configuration at every check (`state.offsets.retention`)."""
    if group_id == TOPIC_METADATA_GROUP:
        return _step_topics(stored, requests)
    failed: dict[int, str] = {}
    while True:
        try:
            return _step(group_id, stored, requests, now_ms, config, failed, request_times_ms, resumed,
                         read_offsets, topics, position, recheck_retention)
        except _RequestFailed as exc:
            failed[exc.index] = exc.reason
        except Exception as exc:  # noqa: BLE001 - the state itself cannot be processed: keep it untouched
            reason = f"group state cannot be processed: {type(exc).__name__}: {exc}"
            return GroupStep(metadata=None if stored is None else stored.metadata,
                             dead_letters=[(i, reason) for i in range(len(requests))])


class _RequestFailed(Exception):
    def __init__(self, index: int, reason: str) -> None:
        super().__init__(reason)
        self.index = index
        self.reason = reason


def _step(group_id: str, stored: StoredGroup | None, requests: Sequence[bytes], now_ms: int,
          config: CoordinatorConfig, failed: dict[int, str], request_times_ms: Sequence[int] | None, resumed: bool,
          read_offsets: OffsetsReader | None, topics: bytes | None,
          position: tuple[int, int] | None, recheck_retention: bool = False) -> GroupStep:
    group, persisted_current, configs = _decode_stored(stored, read_offsets)
    offsets_before = None if group is None else group.offsets
    clock = group.clock_ms if group is not None else -1
    decoded = group
    written: list = []
    responses: list = []
    fast: list = []
    members_expired = 0
    view_changed = False

    # a record of this step may have moved the group's next retention check earlier, or the configuration did
    retention_moved = recheck_retention
    changed_at = now_ms  # when the group last changed by a record: every check after it sees the group as it ends
    at_ms, waited_ms = now_ms, 0

    def take(result: CoordinatorResult) -> None:
        """The step loop's one way to take a handler's result: the group after it (`applied`), its output kept,
        and the group's retention check re-armed after its records (`state.offsets.retention`)."""
        nonlocal group, members_expired, view_changed, configs, retention_moved, changed_at
        group = applied(group, result)
        if result.records and isinstance(group, (ClassicGroup, ConsumerGroup)):
            changed_at = at_ms
            rearm, moved = retention.after(group, result.records, at_ms, config)
            if rearm is not None:
                group = applied(group, CoordinatorResult([], [], [rearm]))
            retention_moved = retention_moved or moved
        for record in result.records:
            if type(record) is Record and type(record.key) is GroupConfigKey:
                configs = {} if record.value is None else dict(record.value.configs)  # type: ignore[union-attr]
        written.extend(result.records)
        responses.extend(result.responses)
        members_expired += result.members_expired
        fast.extend(result.fast_answers)
        view_changed = view_changed or result.view_changed

    cached_env: Env | None = None

    def env(at_ms: int, waited_ms: int = 0) -> Env:
        """The environment of a handler at `at_ms` (one per instant and group, as most calls have one)."""
        nonlocal cached_env
        timers = group.timers if group is not None else None
        if (cached_env is None or cached_env.now_ms != at_ms or cached_env.waited_ms != waited_ms
                or cached_env.timers is not timers or cached_env.group_configs is not configs):
            cached_env = Env(at_ms, config, timers=timers, waited_ms=waited_ms, topics=topics, group_configs=configs,
                             batch_ms=now_ms)
        return cached_env

    if group is not None and (resumed or _after_outage(group, clock, now_ms, request_times_ms, config)):
        # As when Kafka loads a group after a failover: every member's session restarts now, and what queued up
        # during the outage is handled after the "load".
        if isinstance(group, ConsumerGroup):
            take(consumer.restarted_sessions(group, env(now_ms)))
        elif isinstance(group, ShareGroup):
            take(share.restarted(group, env(now_ms)))
        else:
            restart = env(now_ms)
            take(CoordinatorResult([], [], [session(member, restart) for member in group.members.values()]))
        clock = now_ms
    dead_letters = []
    fired_at = None
    reconciling = False
    for index, raw in enumerate(requests):
        if request_times_ms is not None:
            clock = min(max(request_times_ms[index], clock), now_ms)
            at_ms = clock
            waited_ms = max(now_ms - request_times_ms[index], 0)
        if at_ms != fired_at:  # requests of one instant see the timers as they were at that instant
            take(coordinator.fire_timers(group, env(at_ms, waited_ms)))
            fired_at = at_ms
        if index in failed:
            dead_letters.append((index, failed[index]))
            continue
        typed_load = _typed_load(raw)
        if typed_load is not None:  # a rebuild's load: what the BadRequest path below does with it, decoded once
            group, configs, reasons = _load_request(group_id, group, typed_load, env(at_ms, waited_ms))
            retention_moved, changed_at = True, now_ms
            dead_letters.extend((index, reason) for reason in reasons)
            continue
        try:
            req = decode_request(raw)
            reconciling = reconciling or req.api == "ConsumerGroupHeartbeat"
            if req.group_id != group_id:
                raise BadRequest(f"group_id {req.group_id!r} routed to group {group_id!r}",
                                 body={"api": req.api, "request_id": req.request_id, "group_id": req.group_id})
        except BadRequest as exc:
            try:
                if _api_of(exc) == LOAD_GROUP:
                    group, configs, reasons = _load_request(group_id, group, exc.body, env(at_ms, waited_ms))
                    retention_moved, changed_at = True, now_ms  # loaded at the step's time
                else:
                    result, reasons = _refused(group, exc, env(at_ms, waited_ms))
                    take(result)
                dead_letters.extend((index, reason) for reason in reasons)
            except BadRequest as unanswerable:
                dead_letters.append((index, unanswerable.reason))
            continue
        try:
            take(coordinator.handle(group, req, env(at_ms, waited_ms)))
        except Exception as exc:  # noqa: BLE001 - reported as a dead letter, the step is re-run without it
            raise _RequestFailed(index, f"internal error: {type(exc).__name__}: {exc}") from exc
    if not requests:
        take(coordinator.fire_timers(group, env(now_ms, waited_ms)))
    if retention_moved and isinstance(group, (ClassicGroup, ConsumerGroup)):
        rearm = retention.settled(group, changed_at, config)
        if rearm is not None:
            group = applied(group, CoordinatorResult([], [], [rearm]))
    if group is not None:
        group.clock_ms = now_ms
    # A group created, loaded or deleted in this step has other offsets than it came with, whether or not they
    # were touched.
    if group is None:
        offsets_changed = stored is not None
    else:
        offsets_changed = group.offsets is not offsets_before or group.offsets.changed
    only_offsets = group is decoded and _only_offsets(written) and not view_changed
    written = _last_snapshots([r for r in written if isinstance(r, Record)])
    # The group's view (state.views.published) changes only through a record other than an offset's, or when the group is
    # loaded, created or deleted: then it is published (at times as it was, after a record of a rebalance that left
    # it unchanged), and on a resumed call, since the views topic may lack it (a first run of this release). A
    # step with a ConsumerGroupHeartbeat the coordinator answered publishes it too, changed or not: its position is
    # then past that heartbeat (a member acknowledging its partitions), so the member's OffsetFetch that follows
    # can be answered from it (docs/gateway.md); a heartbeat that changes nothing is answered by the gateway.
    publish_view = (not only_offsets or resumed or reconciling) and (group is not None or decoded is not None)
    return GroupStep(
        metadata=encode_metadata(group, persisted_current and only_offsets, configs),
        offsets=encode_offsets(group) if offsets_changed else None,
        offsets_changed=offsets_changed,
        responses=[encode(r) for r in responses],
        records=[r.encode() for r in written],
        dead_letters=dead_letters,
        next_deadline_ms=coordinator.next_deadline(group),
        members_expired=members_expired,
        states_entered=tuple(r.value.directory.group_state for r in written  # type: ignore[union-attr]
                             if isinstance(r.key, GroupMetadataKey) and r.value is not None),
        view=(views.encode_view(views.view_of(group, config, _fetch_position(group, position),
                                              _longest_wait(now_ms, request_times_ms), configs))
              if publish_view else None),
        publish_view=publish_view,
        fast_answers=tuple(fast),
    )


def _longest_wait(now_ms: int, request_times_ms: Sequence[int] | None) -> int:
    """The longest any of the call's requests waited for it: its view tells the longest heartbeat interval this
    call told (`state.consumer.heartbeat.heartbeat_interval_ms`), so a heartbeat the gateway answers is told what
    the coordinator would."""
    return max((now_ms - t for t in request_times_ms or ()), default=0)


VIEW_OFFSETS_MAX = 1000
"""A group with more committed partitions publishes its views without offsets (its OffsetFetch waits for the
coordinator): a view is written at every rebalance."""


def _fetch_position(group: ClassicGroup | ConsumerGroup | None,
                    position: tuple[int, int] | None) -> tuple[int, int] | None:
    """`position` where the group's view may carry its offsets for a gateway to answer an OffsetFetch from: a
    Stable classic group, or a consumer group, none of whose offsets the retention check could remove (a timer's
    change would not show in the requests topic, which is what the gateway checks the view against), with at most
    VIEW_OFFSETS_MAX of them."""
    if (position is None or group is None or isinstance(group, ShareGroup)
            or (isinstance(group, ClassicGroup) and group.state != GroupState.STABLE)
            or offsets_can_expire(group) or len(group.offsets) > VIEW_OFFSETS_MAX or group.offsets.pending):
        return None
    return position


def _only_offsets(records: list) -> bool:
    """Whether these records leave what a group metadata value holds as it was: offset records change offsets only,
    so a persisted value stored as CURRENT still is, without comparing it member by member (a call of heartbeats
    and commits only, the common one). A share-partition's snapshot changes no view unless its grant changed,
    which the share runtime says (`CoordinatorResult.view_changed`)."""
    return all(type(r) is Record and type(r.key) in _VIEW_NEUTRAL for r in records)


_VIEW_NEUTRAL = (OffsetCommitKey, TxnOffsetCommitKey, SharePartitionSnapshotKey)


def _last_snapshots(written: list[Record]) -> list[Record]:
    """A step's records with only the last snapshot of each share-partition: a snapshot is the share-partition
    whole, so the ones before it in the same step are what compaction drops anyway (a step applying a thousand
    acknowledgements writes one record per share-partition)."""
    last: dict = {}
    for index, record in enumerate(written):
        if type(record.key) is SharePartitionSnapshotKey:
            last[record.key] = index
    if not last:
        return written
    return [r for i, r in enumerate(written) if type(r.key) is not SharePartitionSnapshotKey or last[r.key] == i]


def _api_of(exc: BadRequest) -> object:
    return None if exc.body is None else exc.body.get("api")


def _refused(group: ClassicGroup | ConsumerGroup | None, exc: BadRequest,
             env: Env) -> tuple[CoordinatorResult, list[str]]:
    """Answer a request that cannot be handled with its error, when its `request_id` can be read; else raise
    (a dead letter). An internal request is not refused but handled (`_INTERNAL`): a Liveness request taken as its
    members' heartbeats, a PendingMember as the JoinGroup it is; what it returns besides its result is why it could
    not be handled in part (a dead letter each). (A LoadGroup is the runtime's: `_load_request`.)"""
    body = exc.body
    api = _api_of(exc)
    internal = _INTERNAL.get(api) if isinstance(api, str) else None
    if internal is not None:
        return internal(group, body, env)  # type: ignore[arg-type]
    request_id = None if body is None else readable_request_id(body)
    if request_id is None:
        raise exc
    return answer(error_response(body.get("api"), request_id, body.get("group_id"), exc.code, exc.reason)), []


def _after_outage(group: ClassicGroup | ConsumerGroup, clock: int, now_ms: int, request_times_ms: Sequence[int] | None,
                  config: CoordinatorConfig) -> bool:
    """The coordinator should have run at the earliest of the group's timer deadlines and its first queued
    request's arrival; running more than `coordinator.session.reset.lateness.ms` after that means it was not
    running (the driver was down, the query stalled). Decided from the state and the inputs alone, so a replayed
    batch decides the same."""
    lateness = config.coordinator_session_reset_lateness_ms
    if lateness <= 0:
        return False
    due = list(group.timers.values())
    if request_times_ms:
        due.append(max(request_times_ms[0], clock))
    return bool(due) and now_ms - min(due) > lateness


LOAD_GROUP = "LoadGroup"
"""The internal request `schemas.messages.LoadGroup` (a rebuild's), routed like a group request."""
TOPIC_METADATA = "TopicMetadata"
"""The internal request `schemas.consumer_group.TopicMetadata` (the driver's), routed to every bucket."""
_TOPIC_METADATA = msgspec.json.Decoder(TopicMetadata)


def _step_topics(stored: StoredGroup | None, requests: Sequence[bytes]) -> GroupStep:
    """A bucket's topic metadata after its `TopicMetadata` requests: the newest version wins, so a duplicate or a
    late copy changes nothing (`state.topics.image.apply_topic_metadata`). A request that is not one is a dead
    letter."""
    image = decode_image_row(None if stored is None else stored.metadata)
    before = image
    dead_letters = []
    for index, raw in enumerate(requests):
        try:
            image = apply_topic_metadata(image, _TOPIC_METADATA.decode(raw))
        except msgspec.DecodeError as exc:
            dead_letters.append((index, f"TopicMetadata: {exc}"))
    if image is before:
        return GroupStep(metadata=None if stored is None else stored.metadata, dead_letters=dead_letters)
    return GroupStep(metadata=encode(ImageRow(STATE_SCHEMA_VERSION, image_doc(image))), dead_letters=dead_letters)


def _pending_member(group: ClassicGroup | ConsumerGroup | None, body: dict,
                    env: Env) -> tuple[CoordinatorResult, list[str]]:
    """A gateway's member-id round (`state.classic.member_id_round`): the JoinGroup it is, handled as any JoinGroup,
    its new member getting the id the gateway gave; a JoinGroup that is not valid is answered as one."""
    try:
        request = cast(JoinGroupRequest, parse({**body, "api": "JoinGroup"}))
        new_member_id = pending_member_id(request.group_id, request.client_id, request.request_id)
        return coordinator.handle(group, request, env, new_member_id=new_member_id), []
    except BadRequest as exc:
        request_id = readable_request_id(body)
        if request_id is None:
            raise
        return answer(error_response("JoinGroup", request_id, body.get("group_id"), exc.code, exc.reason)), []


def _liveness(group: ClassicGroup | ConsumerGroup | None, body: dict,
              env: Env) -> tuple[CoordinatorResult, list[str]]:
    """Heartbeats a gateway answered (`state.views.fast_answers.liveness`)."""
    try:
        request = msgspec.convert(body, Liveness)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"Liveness: {exc}") from None
    return fast_answers.liveness(group, request, env), []


_LOAD_PREFIX = b'{"api":"LoadGroup",'
_LOAD_DECODER = msgspec.json.Decoder(LoadGroup)


def _typed_load(raw: bytes) -> LoadGroup | None:
    """A LoadGroup as a rebuild writes it (`streaming.recovery.rebuild`: msgspec's encoding, `api` first), decoded
    by msgspec in one pass; None for anything else, which takes the general path (`decode_request`, then Python's
    JSON decoder and `msgspec.convert`: a load is larger than `decode_request`'s msgspec path takes, and that
    path cost a tenth of loading a 10-member group). Either way the same `LoadGroup` is loaded."""
    if raw is None or not raw.startswith(_LOAD_PREFIX):
        return None
    try:
        return _LOAD_DECODER.decode(raw)
    except msgspec.DecodeError:  # also ValidationError: the general path says what is wrong
        return None


def _load_request(group_id: str, group: ClassicGroup | ConsumerGroup | ShareGroup | None, body: dict | LoadGroup,
                  env: Env) -> tuple[ClassicGroup | ConsumerGroup | ShareGroup | None, dict[str, str], list[str]]:
    """A LoadGroup request (a rebuild's): the group its records leave, when there is none yet (`state.runtime.load`),
    with the group id's configs, and why each of its records that could not be loaded was not.

    The group is loaded at the step's time (`Env.batch_ms`), not at the request's arrival: Kafka loads a group when
    its coordinator takes the partition, and every timer of the load (sessions, the retention check) starts then.
    A load published before a retention-check instant and stepped after it would otherwise leave a check already
    due (a timer due after a call's last request fires on the next call): the next batch stepped every group the
    loading batch loaded again (issue 35: 50,014 groups called for 613 requests, ~100 s of a million-member
    rebuild)."""
    try:
        load_group_request = body if isinstance(body, LoadGroup) else msgspec.convert(body, LoadGroup)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"LoadGroup: {exc}") from None
    if group is not None:
        return group, env.group_configs, []  # type: ignore[return-value]
    records = load_group_request.records
    loaded = load.load(group_id, [(r.key.encode(), None if r.value is None else r.value.encode())
                                  for r in records], env.batch_ms, env.config,
                       read_at=[(r.partition, r.offset) for r in records])
    return loaded.group, loaded.configs, [f"LoadGroup: {reason}" for _, reason in loaded.unreadable]


def _transaction_marker(group: ClassicGroup | ConsumerGroup | None, body: dict,
                        env: Env) -> tuple[CoordinatorResult, list[str]]:
    """A transaction's end, read in the control topic by the job's source (`state.offsets.transactions`)."""
    try:
        marker = msgspec.convert(body, TransactionMarker)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"TransactionMarker: {exc}") from None
    if isinstance(group, ShareGroup):
        return CoordinatorResult(), []
    return transactions.transaction_marker(group, marker, env), []


_INTERNAL = {fast_answers.LIVENESS: _liveness, "TransactionMarker": _transaction_marker, PENDING_MEMBER: _pending_member, "ShareGrant": share.grant,
             "ShareUpdate": share.update, "IncrementalAlterGroupConfigs": share.alter_configs_body,
             "DescribeGroupConfigs": share.describe_configs_body}
"""The internal requests a handler takes (written by the job and the gateways, never by clients) by `api`: no
response."""
_INTERNAL_APIS = frozenset({LOAD_GROUP, *_INTERNAL})
"""Every internal request (a LoadGroup is the job's), routed like a group request."""


def load_group(group_id: str, records: Iterable[tuple[bytes, bytes | None]], now_ms: int,
               config: CoordinatorConfig) -> StoredGroup | None:
    """The stored group the records leave (see `state.runtime.load`; records that cannot be decoded are logged)."""
    loaded = load.load(group_id, records, now_ms, config)
    return encode_state(loaded.group, loaded.configs)


def encode_state(group: ClassicGroup | ConsumerGroup | ShareGroup | None,
                 configs: dict[str, str] | None = None) -> StoredGroup | None:
    metadata = encode_metadata(group, configs=configs)
    return None if metadata is None else StoredGroup(metadata, encode_offsets(group))


class _MetadataDoc(msgspec.Struct, omit_defaults=True):
    v: int
    group: GroupDoc
    configs: dict[str, str] | UnsetType = UNSET


class _ConsumerMetadataDoc(msgspec.Struct, omit_defaults=True):
    v: int
    consumer: ConsumerGroupDoc
    configs: dict[str, str] | UnsetType = UNSET


class _ShareMetadataDoc(msgspec.Struct, omit_defaults=True):
    v: int
    share: ShareGroupDoc
    configs: dict[str, str] | UnsetType = UNSET


class _ConfigsDoc(msgspec.Struct):
    """A group id with configs and no group (yet, or any more)."""

    v: int
    configs: dict[str, str]


class _AnyMetadataDoc(msgspec.Struct):
    """A stored group of any kind: `group` (a classic group, as every release stored it), `consumer` or `share`;
    with the group id's `configs` when it has some (alone when there is no group)."""

    v: int
    group: GroupDoc | UnsetType = UNSET
    consumer: ConsumerGroupDoc | UnsetType = UNSET
    share: ShareGroupDoc | UnsetType = UNSET
    configs: dict[str, str] | UnsetType = UNSET


class _OffsetsDoc(msgspec.Struct, omit_defaults=True):
    v: int
    offsets: list[StoredOffset]
    pending: list[StoredPending] | UnsetType = UNSET
    """The pending transactional offsets (absent when none: states without them are stored as before)."""


class _Versioned(msgspec.Struct):
    v: Any


_METADATA = msgspec.json.Decoder(_AnyMetadataDoc)
_OFFSETS = msgspec.json.Decoder(_OffsetsDoc)


def encode_metadata(group: ClassicGroup | ConsumerGroup | ShareGroup | None, persisted_current: bool = False,
                    configs: dict[str, str] | None = None) -> bytes | None:
    """`persisted_current`: the caller knows the persisted value is the group as it is now (a classic group).
    `configs`: the group id's dynamic configs, stored with it (alone when there is no group)."""
    extra = configs if configs else UNSET
    if group is None:
        return None if extra is UNSET else encode(_ConfigsDoc(STATE_SCHEMA_VERSION, configs))  # type: ignore
    if isinstance(group, ConsumerGroup):
        return encode(_ConsumerMetadataDoc(STATE_SCHEMA_VERSION, consumer_group_doc(group), extra))
    if isinstance(group, ShareGroup):
        return encode(_ShareMetadataDoc(STATE_SCHEMA_VERSION, share_group_doc(group), extra))
    doc = classic_group_doc(group)
    if persisted_current or group.persisted == kafka_group_value(group):
        doc.persisted = CURRENT
    return encode(_MetadataDoc(STATE_SCHEMA_VERSION, doc, extra))


def encode_offsets(group: ClassicGroup | ConsumerGroup | None) -> bytes | None:
    if group is None or not (group.offsets or group.offsets.pending):
        return None
    pending = group.offsets.pending_to_doc()
    return encode(_OffsetsDoc(STATE_SCHEMA_VERSION, group.offsets.to_doc(), pending or UNSET))


def _decode(raw: bytes, decoder: msgspec.json.Decoder, what: str) -> Any:
    """A stored document of this schema version; ValueError naming the version when it is another."""
    try:
        return decoder.decode(raw)
    except msgspec.DecodeError:
        version = msgspec.json.decode(raw, type=_Versioned).v
        if version != STATE_SCHEMA_VERSION:
            raise ValueError(f"stored {what} has schema version {version}, this release reads "
                             f"{STATE_SCHEMA_VERSION} (older states are upgraded with state.batch.upgrade_state)"
                             ) from None
        raise


def decode_state(stored: StoredGroup | None,
                 read_offsets: OffsetsReader | None = None) -> ClassicGroup | ConsumerGroup | None:
    """The group of a stored state of this schema version; offsets from `read_offsets` (on first use) when given,
    else from `stored.offsets`. Older versions go through `upgrade_state` first."""
    return _decode_group(stored, read_offsets)[0]


def _decode_group(stored: StoredGroup | None,
                  read_offsets: OffsetsReader | None) -> tuple[ClassicGroup | ConsumerGroup | ShareGroup | None, bool]:
    """`decode_state`, and whether the persisted value was stored as CURRENT."""
    group, current, _ = _decode_stored(stored, read_offsets)
    return group, current


def decode_configs(stored: StoredGroup | None) -> dict[str, str]:
    """The group id's dynamic configs a stored state holds."""
    return _decode_stored(stored, None)[2]


def _decode_stored(stored: StoredGroup | None, read_offsets: OffsetsReader | None
                   ) -> tuple[ClassicGroup | ConsumerGroup | ShareGroup | None, bool, dict[str, str]]:
    if stored is None:
        return None, False, {}
    doc = _decode(stored.metadata, _METADATA, "state")
    if doc.v != STATE_SCHEMA_VERSION:
        raise ValueError(f"stored state has schema version {doc.v}, this release reads {STATE_SCHEMA_VERSION}"
                         " (older states are upgraded with state.batch.upgrade_state)")
    if read_offsets is None:
        values, pending = _offset_values(stored.offsets)
        offsets = Offsets(values, pending=pending)
    else:
        offsets = Offsets(read=lambda: _offset_values(read_offsets()))
    configs = {} if doc.configs is UNSET else dict(doc.configs)
    if doc.consumer is not UNSET:
        return consumer_group_of(doc.consumer, offsets), False, configs
    if doc.share is not UNSET:
        return share_group_of(doc.share), False, configs
    if doc.group is UNSET:
        return None, False, configs
    group = classic_group_of(doc.group, offsets)  # type: ignore[arg-type]
    current = group.persisted == CURRENT
    if current:
        group.persisted = kafka_group_value(group)
    return group, current, configs


def _offset_values(raw: bytes | None) -> tuple[dict, dict]:
    """The committed and the pending transactional offsets of a stored offsets part."""
    if raw is None:
        return {}, {}
    doc = _decode(raw, _OFFSETS, "offsets")
    if doc.v != STATE_SCHEMA_VERSION:
        raise ValueError(f"stored offsets have schema version {doc.v}, this release reads {STATE_SCHEMA_VERSION}")
    pending = {} if doc.pending is UNSET else Offsets.pending_from_doc(doc.pending)
    return Offsets.values_from_doc(doc.offsets), pending


def upgrade_state(stored: bytes) -> StoredGroup:
    """A group stored by release 0.1.0 (schema version 1: one document, offsets inside) as this release stores
    it. The group itself is unchanged: every field it held is carried over."""
    doc = json.loads(stored)
    if doc["v"] != 1:
        raise ValueError(f"upgrade_state reads schema version 1, not {doc['v']}")
    group_doc = doc["group"]
    offsets = group_doc.pop("offsets")
    return StoredGroup(encode({"v": STATE_SCHEMA_VERSION, "group": group_doc}),
                       encode({"v": STATE_SCHEMA_VERSION, "offsets": offsets}) if offsets else None)
