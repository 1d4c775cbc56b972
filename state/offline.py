"""Answers from stored groups as they are: what an operator reads from a stopped query's checkpoint.

The read-only requests (DescribeGroups, OffsetFetch, ListGroups) are answered by the same handlers the running
coordinator uses, so an offline answer and a live one agree. Unlike `state.batch.step_group`, nothing here moves
time: no timer fires, a member whose session ran out while the query was stopped is still shown, as the checkpoint
holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from state.runtime import coordinator
from state.batch import StoredGroup, decode_state
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.consumer.records import directory_record
from state.handling.step import Env
from state.views.directory import GroupDirectory
from state.classic.records import group_record
from state.share import records as share_records
from state.share.group import ShareGroup
from state.share.partitions.partition import StateBatch
from state.wire import BadRequest, decode_request, encode, error_response, readable_request_id

READ_ONLY_APIS = ("DescribeGroups", "ConsumerGroupDescribe", "OffsetFetch", "ShareGroupDescribe",
                  "DescribeShareGroupOffsets")


def answer(group_id: str, stored: StoredGroup | None, raw_request: bytes,
           config: CoordinatorConfig | None = None, topics: bytes | None = None) -> bytes:
    """The response to a read-only request (`READ_ONLY_APIS`) for `group_id`, from its stored state (`topics`: its bucket's topic metadata, which names a consumer group's topics)."""
    try:
        req = decode_request(raw_request)
        if req.api not in READ_ONLY_APIS or req.group_id != group_id:
            raise BadRequest(f"offline: only {', '.join(READ_ONLY_APIS)} for group {group_id!r}",
                             body={"api": req.api, "request_id": req.request_id, "group_id": req.group_id})
    except BadRequest as exc:
        body = exc.body or {}
        return encode(error_response(body.get("api"), readable_request_id(body) or "", body.get("group_id"),
                                     exc.code, exc.reason))
    group = decode_state(stored)
    env = Env(group.clock_ms if group is not None else 0, config or CoordinatorConfig(),
              timers=group.timers if group is not None else {}, topics=topics)
    (response,) = coordinator.handle(group, req, env).responses
    return encode(response)


def list_groups(groups: Iterable[tuple[str, StoredGroup]], raw_request: bytes) -> bytes:
    """The ListGroups response over the stored groups."""
    directory = GroupDirectory()
    for group_id, stored in groups:
        group = decode_state(stored)
        if isinstance(group, ConsumerGroup):
            directory.apply(*directory_record(group).encode())
        elif isinstance(group, ShareGroup):
            directory.apply(*share_records.group_epoch(group_id, group.group_epoch, group.metadata_hash,
                                                       members=len(group.members)).encode())
        elif group is not None:
            directory.apply(*group_record(group).encode())
    return directory.answer(raw_request)


@dataclass(frozen=True)
class SharePartitionState:
    """One share-partition's durable state as the checkpoint holds it (Kafka's share coordinator's ShareSnapshot:
    what ReadShareGroupState answers), with its grant: which gateway process held it, at which epoch."""

    topic: str
    """The topic's name as the group's initialised topics name it (its id when they do not)."""
    partition: int
    state_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    """The in-flight ranges past the start offset: delivery state (never ACQUIRED: acquisitions are not durable)
    and delivery count."""
    holder: str | None
    grant_epoch: int


def share_partition_states(stored: StoredGroup | None) -> list[SharePartitionState] | None:
    """Every share-partition of a stored share group, by topic name and partition; None when it is no share
    group."""
    group = decode_state(stored)
    if not isinstance(group, ShareGroup):
        return None
    names = {topic_id: t.name for topic_id, t in group.initialized.items()} | dict(group.deleting)
    states = [SharePartitionState(names.get(topic_id, topic_id), partition, snapshot.persisted.state_epoch,
                                  snapshot.persisted.start_offset, snapshot.persisted.batches, snapshot.grant.holder,
                                  snapshot.grant.epoch)
              for (topic_id, partition), snapshot in group.partitions.items()]
    return sorted(states, key=lambda s: (s.topic, s.partition))
