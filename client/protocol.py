"""The JSON requests of the control topic, built from plain arguments (the wire format: docs/wire-format.md).

Each function builds the request's class (`schemas.messages`, the one definition the coordinator decodes) and
returns its JSON object without `request_id`: the transport adds it, because a retry must carry the same id as the
first attempt. Every field is written, defaults included. Versions: `VERSIONS`.
"""

from __future__ import annotations

import base64
from typing import Any, Iterable, Mapping, Sequence

import msgspec

from schemas.consumer_group import ConsumerGroupDescribeRequest
from schemas.messages import (
    API_VERSIONS,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    Request,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    TopicPartitionCount,
)

VERSIONS: dict[str, int] = {api: high for api, (_, high) in API_VERSIONS.items()}
"""The version the client sends of each API: the latest the coordinator answers."""

Json = dict[str, Any]
Offsets = Mapping[tuple[str, int], tuple[int, str | None]]
"""(topic, partition) -> (offset, metadata)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def _body(cls: type[Request], **fields: Any) -> Json:
    """The request's JSON object at the client's version, without `request_id` (the transport adds it)."""
    body = msgspec.json.decode(msgspec.json.encode(
        cls(request_id="", api_version=VERSIONS[cls.__struct_config__.tag], **fields)))
    del body["request_id"]
    return body


def join_group(
    group_id: str,
    member_id: str,
    group_instance_id: str | None,
    client_id: str,
    client_host: str,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    protocols: Sequence[tuple[str, bytes]],
    reason: str | None = None,
    topic_partitions: Mapping[str, int] | None = None,
) -> Json:
    """`topic_partitions` is this project's extension for server-side assignors (`server:uniform`,
    `server:range`): the partition counts the coordinator assigns from, since it has no cluster metadata."""
    return _body(
        JoinGroupRequest,
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        group_instance_id=group_instance_id,
        client_id=client_id,
        client_host=client_host,
        protocol_type="consumer",
        protocols=tuple(JoinGroupRequestProtocol(name, b64(md)) for name, md in protocols),
        reason=reason,
        topic_partitions=tuple(TopicPartitionCount(t, n) for t, n in sorted((topic_partitions or {}).items())),
    )


def sync_group(
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    protocol_name: str,
    assignments: Mapping[str, bytes],
) -> Json:
    return _body(
        SyncGroupRequest,
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        protocol_type="consumer",
        protocol_name=protocol_name,
        assignments=tuple(SyncGroupRequestAssignment(m, b64(a)) for m, a in assignments.items()),
    )


def heartbeat(group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> Json:
    return _body(
        HeartbeatRequest,
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
    )


def leave_group(group_id: str, members: Iterable[tuple[str, str | None]], reason: str | None = None) -> Json:
    """`members`: (member_id, group_instance_id); member_id "" with an instance id removes a static member
    (what `kafka-consumer-groups.sh`'s cousin `RemoveMembersFromConsumerGroup` does)."""
    return _body(LeaveGroupRequest, group_id=group_id,
                 members=tuple(MemberIdentity(m, i, reason) for m, i in members))


def _topics(offsets: Offsets) -> tuple[OffsetCommitRequestTopic, ...]:
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), (offset, metadata) in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata=metadata))
    return tuple(OffsetCommitRequestTopic(t, tuple(ps)) for t, ps in by_topic.items())


def offset_commit(
    group_id: str, generation_id: int, member_id: str, group_instance_id: str | None, offsets: Offsets
) -> Json:
    """generation -1 and member "" is an admin commit, accepted only while the group is Empty (Kafka)."""
    return _body(
        OffsetCommitRequest,
        group_id=group_id,
        generation_id_or_member_epoch=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        topics=_topics(offsets),
    )


def offset_fetch(group_id: str, partitions: Iterable[tuple[str, int]] | None = None) -> Json:
    """`partitions` None fetches every committed partition of the group."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(partitions):
            by_topic.setdefault(topic, []).append(partition)
        topics = tuple(OffsetFetchRequestTopic(t, tuple(ps)) for t, ps in by_topic.items())
    return _body(OffsetFetchRequest, group_id=group_id, topics=topics)


def offset_delete(group_id: str, partitions: Iterable[tuple[str, int]]) -> Json:
    by_topic: dict[str, list[OffsetDeleteRequestPartition]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(OffsetDeleteRequestPartition(partition))
    return _body(OffsetDeleteRequest, group_id=group_id,
                 topics=tuple(OffsetDeleteRequestTopic(t, tuple(ps)) for t, ps in by_topic.items()))


def describe_group(group_id: str) -> Json:
    return _body(DescribeGroupsRequest, group_id=group_id)


def consumer_group_describe(group_id: str) -> Json:
    return _body(ConsumerGroupDescribeRequest, group_id=group_id)


def list_groups(states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()) -> Json:
    return _body(ListGroupsRequest, states_filter=tuple(states_filter), types_filter=tuple(types_filter))


def delete_group(group_id: str) -> Json:
    return _body(DeleteGroupsRequest, group_id=group_id)


def fetched_offsets(response: Json) -> dict[tuple[str, int], tuple[int, str]]:
    """OffsetFetch response -> (topic, partition) -> (offset, metadata), leaving out partitions with no
    committed offset (-1), as KafkaConsumer.committed() reports them as None."""
    out: dict[tuple[str, int], tuple[int, str]] = {}
    for topic in response.get("topics") or []:
        for p in topic.get("partitions") or []:
            if p.get("error_code", 0) == 0 and p.get("committed_offset", -1) >= 0:
                out[(topic["name"], p["partition_index"])] = (p["committed_offset"], p.get("metadata") or "")
    return out


def partition_errors(response: Json) -> dict[tuple[str, int], int]:
    """Per-partition error codes of an OffsetCommit or OffsetDelete response."""
    return {
        (topic["name"], p["partition_index"]): p.get("error_code", 0)
        for topic in response.get("topics") or []
        for p in topic.get("partitions") or []
    }
