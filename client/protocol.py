"""The JSON requests of the control topic, built from plain arguments (the wire format: docs/wire-format.md).

Each function returns the request body without `request_id`: the transport adds it, because a retry must carry
the same id as the first attempt. Field names are Kafka's `<Api>Request` fields in snake_case; byte fields are
base64. Versions are the latest the coordinator supports, so responses carry every field the client reads.
"""

from __future__ import annotations

import base64
from typing import Any, Iterable, Mapping, Sequence

API_VERSIONS: dict[str, int] = {
    "JoinGroup": 9,
    "SyncGroup": 5,
    "Heartbeat": 4,
    "LeaveGroup": 5,
    "OffsetCommit": 8,
    "OffsetFetch": 8,
    "OffsetDelete": 0,
    "DescribeGroups": 5,
    "ListGroups": 5,
    "DeleteGroups": 2,
}

Json = dict[str, Any]
Offsets = Mapping[tuple[str, int], tuple[int, str | None]]
"""(topic, partition) -> (offset, metadata)."""


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


def _envelope(api: str, **fields: Any) -> Json:
    return {"api": api, "api_version": API_VERSIONS[api], **fields}


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
    body = _envelope(
        "JoinGroup",
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        group_instance_id=group_instance_id,
        client_id=client_id,
        client_host=client_host,
        protocol_type="consumer",
        protocols=[{"name": name, "metadata": b64(md)} for name, md in protocols],
        reason=reason,
    )
    if topic_partitions is not None:
        body["topic_partitions"] = [{"name": t, "partitions": n} for t, n in sorted(topic_partitions.items())]
    return body


def sync_group(
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    protocol_name: str,
    assignments: Mapping[str, bytes],
) -> Json:
    return _envelope(
        "SyncGroup",
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
        protocol_type="consumer",
        protocol_name=protocol_name,
        assignments=[{"member_id": m, "assignment": b64(a)} for m, a in assignments.items()],
    )


def heartbeat(group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> Json:
    return _envelope(
        "Heartbeat",
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id,
    )


def leave_group(group_id: str, members: Iterable[tuple[str, str | None]], reason: str | None = None) -> Json:
    """`members`: (member_id, group_instance_id); member_id "" with an instance id removes a static member
    (what `kafka-consumer-groups.sh`'s cousin `RemoveMembersFromConsumerGroup` does)."""
    return _envelope(
        "LeaveGroup",
        group_id=group_id,
        members=[{"member_id": m, "group_instance_id": i, "reason": reason} for m, i in members],
    )


def _topics(offsets: Offsets) -> list[Json]:
    by_topic: dict[str, list[Json]] = {}
    for (topic, partition), (offset, metadata) in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": metadata,
            }
        )
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]


def offset_commit(
    group_id: str, generation_id: int, member_id: str, group_instance_id: str | None, offsets: Offsets
) -> Json:
    """generation -1 and member "" is an admin commit, accepted only while the group is Empty (Kafka)."""
    return _envelope(
        "OffsetCommit",
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
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    return _envelope("OffsetFetch", group_id=group_id, topics=topics, require_stable=False)


def offset_delete(group_id: str, partitions: Iterable[tuple[str, int]]) -> Json:
    by_topic: dict[str, list[Json]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append({"partition_index": partition})
    return _envelope(
        "OffsetDelete", group_id=group_id, topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()]
    )


def describe_group(group_id: str) -> Json:
    return _envelope("DescribeGroups", group_id=group_id, include_authorized_operations=False)


def list_groups(states_filter: Sequence[str] = (), types_filter: Sequence[str] = ()) -> Json:
    return _envelope("ListGroups", states_filter=list(states_filter), types_filter=list(types_filter))


def delete_group(group_id: str) -> Json:
    return _envelope("DeleteGroups", group_id=group_id)


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
