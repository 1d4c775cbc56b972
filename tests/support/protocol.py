"""Request builders in the wire format (docs/wire-format.md, schemas/), for tests that drive the job by topic."""

from __future__ import annotations

import base64
from typing import Any

SUBSCRIPTION = "AAMAAAABAAZvcmRlcnP/////AAAAAP///////w=="
"""A ConsumerProtocol subscription to topic `orders`, base64 as the wire format carries bytes."""
ASSIGNMENT = base64.b64encode(b"\x00\x03\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x01\x00\x00\x00\x00"
                              b"\xff\xff\xff\xff").decode()


def join(group_id: str, member_id: str = "", session_timeout_ms: int = 6000,
         rebalance_timeout_ms: int = 30000, client_id: str = "test-client") -> dict[str, Any]:
    return {"api": "JoinGroup", "group_id": group_id, "member_id": member_id, "group_instance_id": None,
            "client_id": client_id, "client_host": "/127.0.0.1", "session_timeout_ms": session_timeout_ms,
            "rebalance_timeout_ms": rebalance_timeout_ms, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}]}


def sync(group_id: str, member_id: str, generation_id: int,
         assignments: dict[str, str] | None = None) -> dict[str, Any]:
    return {"api": "SyncGroup", "group_id": group_id, "member_id": member_id, "generation_id": generation_id,
            "group_instance_id": None, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()]}


def heartbeat(group_id: str, member_id: str, generation_id: int) -> dict[str, Any]:
    return {"api": "Heartbeat", "group_id": group_id, "member_id": member_id, "generation_id": generation_id,
            "group_instance_id": None}


def commit(group_id: str, member_id: str, generation_id: int, offsets: dict[tuple[str, int], int]) -> dict:
    topics: dict[str, list] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                             "committed_leader_epoch": -1, "committed_metadata": ""})
    return {"api": "OffsetCommit", "group_id": group_id, "member_id": member_id, "generation_id": generation_id,
            "group_instance_id": None, "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}


def fetch(group_id: str, topics: dict[str, list[int]] | None = None) -> dict[str, Any]:
    return {"api": "OffsetFetch", "group_id": group_id, "require_stable": False,
            "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()]}


def leave(group_id: str, member_id: str) -> dict[str, Any]:
    return {"api": "LeaveGroup", "group_id": group_id,
            "members": [{"member_id": member_id, "group_instance_id": None}]}


def list_groups(states: list[str] | None = None) -> dict[str, Any]:
    return {"api": "ListGroups", "states_filter": states or [], "types_filter": []}


def committed(fetch_response: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(t["name"], p["partition_index"]): p["committed_offset"]
            for t in fetch_response.get("topics", []) for p in t["partitions"]}
