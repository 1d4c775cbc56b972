"""A share group's admin APIs: Describe/Alter/DeleteShareGroupOffsets and DeleteGroups, as Kafka's
GroupMetadataManager and GroupCoordinatorService answer them (ShareGroupDescribe: `state.share.describe`).

The admin changes to share-partitions (Alter, Delete, DeleteGroups) need the group Empty, Kafka's rule, and, ours,
none of the share-partitions they change held by a gateway (docs/share-groups.md, "Admin changes need the
share-partitions free"): NON_EMPTY_GROUP otherwise.
"""

from __future__ import annotations

from dataclasses import replace

from schemas.share_group import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from state.topics.image import MetadataImage
from state.handling.step import CoordinatorResult
from state.handling.timers import Cancel
from state.errors import CoordinatorError, Errors
from state.records import Record
from state.share.partitions import grant as grants
from state.share import records
from state.share.group import InitializedTopic, Partitions, ShareGroup, SharePartitionKey, ShareSnapshot
from state.share.partitions.partition import UNRESOLVED, PersistedState

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
UNKNOWN_TOPIC_OR_PARTITION_MESSAGE = "This server does not host this topic-partition."


def describe_share_group_offsets(group: ShareGroup | None, request: DescribeShareGroupOffsetsRequest,
                                 image: MetadataImage) -> DescribeShareGroupOffsetsResponse:
    """Each named partition's start offset (-1 when it has none) and delivery-complete count, from which the
    gateway computes the lag against the log end; null topics: every initialised share-partition."""
    topics = []
    if request.topics is None:
        wanted = [] if group is None else [
            (t.name, topic_id, sorted(t.partitions)) for topic_id, t in sorted(group.initialized.items(),
                                                                               key=lambda kv: kv[1].name)]
    else:
        wanted = []
        for t in request.topics:
            topic = image.by_name.get(t.topic_name)
            wanted.append((t.topic_name, None if topic is None else topic.topic_id, list(t.partitions)))
    for name, topic_id, partitions in wanted:
        answers = []
        for p in partitions:
            snapshot = None if group is None or topic_id is None else group.partitions.get((topic_id, p))
            if snapshot is None or snapshot.persisted.start_offset == UNRESOLVED:
                answers.append(DescribeShareGroupOffsetsResponsePartition(p, UNRESOLVED))
            else:
                persisted = snapshot.persisted
                answers.append(DescribeShareGroupOffsetsResponsePartition(
                    p, persisted.start_offset, delivery_complete_count=persisted.delivery_complete_count()))
        topics.append(DescribeShareGroupOffsetsResponseTopic(name, topic_id or ZERO_UUID, tuple(answers)))
    return DescribeShareGroupOffsetsResponse(request_id=request.request_id, group_id=request.group_id,
                                             error_code=Errors.NONE, topics=tuple(topics))


def _throw_if_busy(group: ShareGroup | None, partitions: list[SharePartitionKey] | None = None) -> None:
    if group is None:
        return
    if group.members:
        raise CoordinatorError(Errors.NON_EMPTY_GROUP, "The group is not empty.")
    held = group.held() if partitions is None else [tp for tp in partitions if tp in group.held()]
    if held:
        raise CoordinatorError(Errors.NON_EMPTY_GROUP, "The group is empty, but a gateway still holds its "
                               f"share-partition(s) {', '.join(f'{t}:{p}' for t, p in held)} (it releases them once "
                               "no share session names them; a crashed one's lease ends them).")


def alter_share_group_offsets(group: ShareGroup | None, request: AlterShareGroupOffsetsRequest,
                              image: MetadataImage, batch_ms: int) -> CoordinatorResult:
    """Kafka's alterShareGroupOffsets (the group created if missing, which must be empty), with the
    initialisation written at once: each named existing partition gets a new snapshot at the new start offset, no
    batches, the state epoch bumped (a stale holder's updates are then refused), its grant kept."""
    group_id = request.group_id
    named = [(image.by_name[t.topic_name].topic_id, p.partition_index) for t in request.topics
             if t.topic_name in image.by_name for p in t.partitions]
    try:
        _throw_if_busy(group, named)
    except CoordinatorError as exc:
        return CoordinatorResult(responses=[AlterShareGroupOffsetsResponse(
            request_id=request.request_id, group_id=group_id, error_code=exc.code, error_message=exc.message)])
    out: list[Record] = []
    current = ShareGroup(group_id) if group is None else group
    if group is None:
        out.append(records.group_epoch(group_id, 0, 0, members=0))
    initialized = dict(current.initialized)
    answers = []
    for t in request.topics:
        topic = image.by_name.get(t.topic_name)
        if topic is None:
            answers.append(AlterShareGroupOffsetsResponseTopic(t.topic_name, ZERO_UUID, tuple(
                AlterShareGroupOffsetsResponsePartition(p.partition_index, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                        UNKNOWN_TOPIC_OR_PARTITION_MESSAGE) for p in t.partitions)))
            continue
        parts = []
        done: set[int] = set()
        for p in t.partitions:
            if not 0 <= p.partition_index < topic.partitions:
                parts.append(AlterShareGroupOffsetsResponsePartition(
                    p.partition_index, Errors.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
                continue
            parts.append(AlterShareGroupOffsetsResponsePartition(p.partition_index))
            tp = (topic.topic_id, p.partition_index)
            before = current.partitions.get(tp)
            grant = before.grant if before is not None else grants.new_grant(batch_ms)
            state_epoch = (before.persisted.state_epoch + 1) if before is not None else current.group_epoch
            out.append(records.snapshot(group_id, *tp, ShareSnapshot(
                PersistedState(p.start_offset, state_epoch), grant,
                before.create_timestamp_ms if before is not None else batch_ms, batch_ms)))
            done.add(p.partition_index)
        if done:
            known = initialized.get(topic.topic_id)
            initialized[topic.topic_id] = InitializedTopic(
                t.topic_name, frozenset(done) | (known.partitions if known else frozenset()))
        answers.append(AlterShareGroupOffsetsResponseTopic(t.topic_name, topic.topic_id, tuple(parts)))
    deleting = {t: n for t, n in current.deleting.items() if t not in initialized}
    if initialized != current.initialized or deleting != current.deleting:
        out.insert(1 if group is None else 0, records.state_partition_metadata(group_id, initialized, deleting))
    return CoordinatorResult(out, [AlterShareGroupOffsetsResponse(  # type: ignore[arg-type]
        request_id=request.request_id, group_id=group_id, error_code=Errors.NONE, responses=tuple(answers))])


def delete_share_group_offsets(group: ShareGroup | None, request: DeleteShareGroupOffsetsRequest,
                               image: MetadataImage, batch_ms: int) -> CoordinatorResult:
    """Kafka's deleteShareGroupOffsets, whole topics of an empty group: each initialised (or deleting) topic's
    share-partitions lose their state (a snapshot with no start offset and no batches, its grant epochs kept so no
    epoch is ever handed out twice) and the topic leaves record 15's initialised topics."""
    group_id = request.group_id
    if group is None:
        return CoordinatorResult(responses=[DeleteShareGroupOffsetsResponse(
            request_id=request.request_id, group_id=group_id, error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.")])
    named = [(tid, p) for t in request.topics if t.topic_name in image.by_name
             for tid in [image.by_name[t.topic_name].topic_id] for (x, p) in group.partitions if x == tid]
    try:
        _throw_if_busy(group, named)
    except CoordinatorError as exc:
        return CoordinatorResult(responses=[DeleteShareGroupOffsetsResponse(
            request_id=request.request_id, group_id=group_id, error_code=exc.code, error_message=exc.message)])
    out: list[Record] = []
    initialized = dict(group.initialized)
    answers = []
    for t in request.topics:
        topic = image.by_name.get(t.topic_name)
        if topic is None:
            answers.append(DeleteShareGroupOffsetsResponseTopic(
                t.topic_name, ZERO_UUID, Errors.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION_MESSAGE))
            continue
        if topic.topic_id not in initialized and topic.topic_id not in group.deleting:
            answers.append(DeleteShareGroupOffsetsResponseTopic(
                t.topic_name, ZERO_UUID, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                "There is no offset information to delete."))
            continue
        initialized.pop(topic.topic_id, None)
        for (tid, p), snapshot in sorted(group.partitions.items()):
            if tid == topic.topic_id:
                out.append(records.snapshot(group_id, tid, p, replace(
                    snapshot, persisted=PersistedState(UNRESOLVED, snapshot.persisted.state_epoch + 1),
                    write_timestamp_ms=batch_ms)))
        answers.append(DeleteShareGroupOffsetsResponseTopic(t.topic_name, topic.topic_id))
    deleting = {t: n for t, n in group.deleting.items() if t not in {a.topic_id for a in answers}}
    if initialized != group.initialized or deleting != group.deleting:
        out.append(records.state_partition_metadata(group_id, initialized, deleting))
    return CoordinatorResult(out, [DeleteShareGroupOffsetsResponse(  # type: ignore[arg-type]
        request_id=request.request_id, group_id=group_id, error_code=Errors.NONE, responses=tuple(answers))])


def validate_delete(group: ShareGroup) -> None:
    """DeleteGroups deletes an Empty share group none of whose share-partitions a gateway holds."""
    if group.members:
        raise CoordinatorError(Errors.NON_EMPTY_GROUP, "The group is not empty.")
    _throw_if_busy(group)


def delete_group(group: ShareGroup) -> CoordinatorResult:
    """DeleteGroups of a share group `validate_delete` let through: its tombstones and its timers cancelled. Its
    configs stay with the group id, as Kafka's (they live in the cluster's metadata, not in the group)."""
    return CoordinatorResult(delete_records(group), [], [Cancel(key) for key in sorted(group.timers)])


def delete_records(group: ShareGroup) -> list[Record]:
    """The tombstones that delete the group (Kafka's ShareGroup.createGroupTombstoneRecords, then the share
    coordinator's deletion of its state): per member 14, 13, 10; then 12, the share-partitions' snapshots, 15 and
    11. Replaying them leaves no group."""
    group_id = group.group_id
    members = sorted(group.members)
    return [
        *(records.current_assignment_tombstone(group_id, m) for m in members),
        *(records.target_assignment_tombstone(group_id, m) for m in sorted(set(group.target_assignment) | set(members))),
        *(records.member_subscription_tombstone(group_id, m) for m in members),
        records.target_assignment_epoch_tombstone(group_id),
        *(records.snapshot_tombstone(group_id, t, p) for t, p in sorted(group.partitions)),
        records.state_partition_metadata_tombstone(group_id),
        records.group_epoch_tombstone(group_id),
    ]
