"""OffsetCommit, OffsetFetch, OffsetDelete and offset retention (KIP-211), after Kafka's OffsetMetadataManager.

Handlers have the one shape (`state.handling.step`): they validate, then return one offset record (or tombstone) per
partition; the offsets map changes only when those records are replayed (`state.runtime.replay.replay`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from schemas.messages import (
    OffsetCommitRequest,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from state import rules
from state.views import fast_answers
from state.consumer.group import ConsumerGroup
from state.consumer.records import delete_records
from state.consumer.offsets import fetch_member_error, validate_offset_commit, validate_offset_fetch
from state.consumer.replay import then
from state.handling.step import NOTHING, CoordinatorResult, Env, answer
from state.errors import (GROUP_ID_NOT_FOUND, GROUP_SUBSCRIBED_TO_TOPIC, NON_EMPTY_GROUP, NONE,
                          UNSTABLE_OFFSET_COMMIT, CoordinatorError)
from state.classic.group import ClassicGroup, GroupState
from state.offsets.transactions import pending_tombstones
from state.offset_values import OffsetValue
from state.classic.handlers import create_group, session
from state.records import group_tombstone, offset_record, offset_tombstone
from state.offsets import retention
from state.handling.timers import OFFSETS_EXPIRATION, Cancel, Schedule
from state.views.published import PublishedConsumerGroup, PublishedView
from state.wire import simple_response


def offset_commit(group: ClassicGroup | ConsumerGroup | None, req: OffsetCommitRequest,
                  env: Env) -> CoordinatorResult:
    """Kafka's commitOffset: the request's check (`state.rules.commit_error`, a consumer group's own), then each
    partition's; an offset record per partition committed. A commit without group management (admin tools,
    assign()) to no group creates a "simple" group; a classic member's accepted commit restarts its session. The
    answer is the coordinator's, unless a gateway answered the commit already (`state.views.fast_answers`)."""
    partition_error = None
    if isinstance(group, ConsumerGroup):
        error, partition_error = _consumer_commit_error(group, req, env)
    else:
        error = rules.commit_error(group, req)
    done = NOTHING
    if error == NONE and group is None:
        group, done = then(group, done, create_group(req.group_id, env))
    max_metadata = env.config.offset_metadata_max_bytes
    written = []
    topics = []
    for topic in req.topics:
        partitions = []
        for p in topic.partitions:
            code = error
            if code == NONE and partition_error is not None:
                code = partition_error(topic.name, p.partition_index)
            metadata = p.committed_metadata or ""
            if code == NONE:
                code = rules.partition_error(metadata, max_metadata)
            if code == NONE:
                commit_ts = p.commit_timestamp if req.version == 1 and p.commit_timestamp >= 0 else env.now_ms
                expire = req.retention_time_ms
                written.append(offset_record(req.group_id, topic.name, p.partition_index, OffsetValue(
                    p.committed_offset, p.committed_leader_epoch, metadata, commit_ts,
                    env.now_ms + expire if expire >= 0 else None,
                )))
            partitions.append(OffsetCommitResponsePartition(p.partition_index, code))
        topics.append(OffsetCommitResponseTopic(topic.name, tuple(partitions)))
    sessions = []
    if error == NONE and isinstance(group, ClassicGroup) and group.state in (GroupState.STABLE,
                                                                           GroupState.PREPARING_REBALANCE):
        member = group.members.get(req.member_id)
        if member is not None:
            sessions.append(session(member, env))
    settled = fast_answers.settle_commit(req, simple_response(req, error, topics=tuple(topics)))
    return done + CoordinatorResult(written, settled.responses, sessions, fast_answers=settled.fast_answers)


def _consumer_commit_error(group: ConsumerGroup, req: OffsetCommitRequest,
                           env: Env) -> tuple[int, Callable[[str, int], int] | None]:
    """Kafka's ConsumerGroup.validateOffsetCommit (`state.consumer.offsets`): the request's error, and for an
    accepted one the check of each partition, for a member one epoch behind (KIP-1251: a partition it held since
    then may still be committed; the topic's id comes from the cluster's topics, and a topic they lack cannot be
    judged: STALE_MEMBER_EPOCH)."""
    try:
        check = validate_offset_commit(group, member_id=req.member_id, instance_id=req.group_instance_id,
                                       member_epoch=req.generation_id_or_member_epoch,  # type: ignore[arg-type]
                                       api_version=req.version, principal=req.principal)
    except CoordinatorError as exc:
        return exc.code, None
    by_name = env.image.by_name

    def partition_error(topic: str, partition: int) -> int:
        found = by_name.get(topic)
        return check(found.topic_id if found is not None else "", partition)

    return NONE, partition_error


def offset_fetch(group: ClassicGroup | ConsumerGroup | None, req: OffsetFetchRequest,
                 env: Env) -> CoordinatorResult:
    """Any state, no member checks (classic groups; a consumer group checks the member and its epoch when the
    request names them, OffsetFetch v9+); unknown partitions answer offset -1. With `require_stable` (v7+), a
    partition some open transaction holds an offset of answers UNSTABLE_OFFSET_COMMIT: the client retries until
    the transaction ends."""
    if isinstance(group, ConsumerGroup):
        try:
            validate_offset_fetch(group, member_id=req.member_id, member_epoch=req.member_epoch,
                                  principal=req.principal)
        except CoordinatorError as exc:
            return answer(simple_response(req, exc.code))
    if group is None:
        return answer(fetch_response(req, {}))
    unstable = None
    if req.require_stable and group.offsets.pending:
        unstable = {(t, p) for _, t, p in group.offsets.pending}
    return answer(fetch_response(req, group.offsets, unstable))


def fetch_response(req: OffsetFetchRequest, offsets: Mapping[tuple[str, int], Any],
                   unstable: set[tuple[str, int]] | None = None) -> OffsetFetchResponse:
    """The answer to an OffsetFetch given the group's committed offsets (values with `offset`, `leader_epoch` and
    `metadata`: the group's own, or a view's, `fetch_from_view`), and the partitions to answer
    UNSTABLE_OFFSET_COMMIT (a view carries no offsets while any is pending, `state.batch`)."""
    topics = []
    if req.topics is None:
        by_topic: dict[str, list] = {}
        for (topic, partition), value in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(_fetched(partition, value, unstable, topic))
        topics = [OffsetFetchResponseTopic(t, tuple(parts)) for t, parts in by_topic.items()]
    else:
        for topic in req.topics:
            parts = tuple(_fetched(p, offsets.get((topic.name, p)), unstable, topic.name)
                          for p in topic.partition_indexes)
            topics.append(OffsetFetchResponseTopic(topic.name, parts))
    return simple_response(req, NONE, topics=tuple(topics))  # type: ignore[return-value]


def fetch_from_view(view: PublishedView | None, req: OffsetFetchRequest,
                    log_end: int | None) -> OffsetFetchResponse | None:
    """The answer to an OffsetFetch from the view's offsets, where they are the group's now: the view carries them
    as of the last request it applied (`position`), and every request written to the group's requests-topic
    partition before the OffsetFetch arrived is at or before that request (`log_end`, that partition's end noted
    after the fetch arrived, is at most just past it; a view read later may be past it). A commit acknowledged
    before the fetch arrived, by any member through any gateway, lies past an older view's position and sends the
    fetch to the coordinator. A consumer group's view also checks the member and epoch the fetch names
    (OffsetFetch v9+) with the coordinator's rule, over its members as of that request. None: ask the
    coordinator."""
    if (view is None or view.offsets is None or view.position is None or log_end is None
            or log_end > view.position.offset + 1):
        return None
    if isinstance(view, PublishedConsumerGroup):
        if view.committers is None:
            return None
        try:  # the member and its epoch, as `offset_fetch` checks them, over the members as of `position`
            fetch_member_error(view.committers, req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
                               principal=req.principal)
        except CoordinatorError:
            return None
    return fetch_response(req, view.offsets)


def _fetched(partition: int, value: Any, unstable: set[tuple[str, int]] | None = None,
             topic: str = "") -> OffsetFetchResponsePartition:
    if unstable is not None and (topic, partition) in unstable:
        return OffsetFetchResponsePartition(partition, -1, -1, "", UNSTABLE_OFFSET_COMMIT)
    if value is None:
        return OffsetFetchResponsePartition(partition, -1, -1, "", NONE)
    return OffsetFetchResponsePartition(partition, value.offset, value.leader_epoch, value.metadata, NONE)


def offset_delete(group: ClassicGroup | ConsumerGroup | None, req: OffsetDeleteRequest,
                  env: Env) -> CoordinatorResult:
    """KIP-496: offsets of topics a live consumer group still subscribes to are kept (86)."""
    if group is None:
        return answer(simple_response(req, GROUP_ID_NOT_FOUND))
    if isinstance(group, ConsumerGroup):
        live = bool(group.members)  # Kafka's ConsumerGroup.validateOffsetDelete refuses nothing
    else:
        live = group.state != GroupState.EMPTY
        if live and group.protocol_type != "consumer":
            return answer(simple_response(req, NON_EMPTY_GROUP))
    tombstones = []
    topics = []
    for topic in req.topics:
        name = topic.name
        partitions = []
        for p in topic.partitions:
            index = p.partition_index
            if live and group.is_subscribed_to(name):
                code = GROUP_SUBSCRIBED_TO_TOPIC
            else:
                code = NONE
                if (name, index) in group.offsets or group.offsets.has_pending((name, index)):
                    tombstones.append(offset_tombstone(req.group_id, name, index))
                    tombstones.extend(pending_tombstones(group, lambda t, p: (t, p) != (name, index)))
            partitions.append(OffsetDeleteResponsePartition(index, code))
        topics.append(OffsetDeleteResponseTopic(name, tuple(partitions)))
    return CoordinatorResult(tombstones, [simple_response(req, NONE, topics=tuple(topics))])


def on_expiration_timer(group: ClassicGroup | ConsumerGroup, env: Env) -> CoordinatorResult:
    """The periodic retention check: tombstone expired offsets; an Empty group left without offsets is deleted
    (Java always writes the group tombstone; Scala only for generation > 0)."""
    tombstones = []
    base_of = retention.retention_base(group)
    if base_of is not None:
        for (topic, partition), value in sorted(group.offsets.items()):
            base = base_of(topic, value)
            if base is None or group.offsets.has_pending((topic, partition)):
                continue  # Kafka: not while a transaction holds an offset of the partition
            if env.now_ms >= retention.removable_from(value, base, env.config):
                tombstones.append(offset_tombstone(group.group_id, topic, partition))
    group, done = then(group, NOTHING, CoordinatorResult(tombstones))
    if retention.deletable(group):
        return done + delete_group(group)
    at = retention.next_check(group, env.now_ms, env.config)  # the next check that removes something, if any
    return done + CoordinatorResult([], [], [Schedule(OFFSETS_EXPIRATION, at) if at is not None else
                                             Cancel(OFFSETS_EXPIRATION)])


def offsets_can_expire(group: ClassicGroup | ConsumerGroup) -> bool:
    """Whether the retention check could remove any of the group's offsets in its present state (a view carries
    the offsets only when it cannot: timers do not reach the requests topic, `state.views.published.view_of`)."""
    base = retention.retention_base(group)
    return base is not None and any(base(topic, value) is not None for (topic, _), value in group.offsets.items())


def delete_group(group: ClassicGroup | ConsumerGroup) -> CoordinatorResult:
    """Tombstone every offset (the pending transactional ones too), then the group's metadata: the group is gone
    (a later request sees none)."""
    tombstones = [offset_tombstone(group.group_id, topic, partition) for topic, partition in sorted(group.offsets)]
    return CoordinatorResult(tombstones + pending_tombstones(group)) + delete_group_metadata(group)


def delete_group_metadata(group: ClassicGroup | ConsumerGroup) -> CoordinatorResult:
    """Tombstone the group's metadata (a consumer group's records, in Kafka's order); offsets stay (a group left
    with offsets only is the simple group that holds them)."""
    return CoordinatorResult(delete_records(group) if isinstance(group, ConsumerGroup)
                             else [group_tombstone(group.group_id)])
