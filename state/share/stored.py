"""A share group as the shell stores it: its records as compaction leaves them (so decoding is the same replay a
load makes), and what the runtime keeps beside them (timers, leases among them, the clock, the directory entry last
written, the members owing a heartbeat, the share-partitions another gateway waits for). As a consumer group's
(`state.consumer.stored`)."""

from __future__ import annotations

import msgspec

from state.records import Record, decode_record
from state.share import records
from state.share.group import ShareGroup
from state.share.replay import replay


class ShareGroupDoc(msgspec.Struct):
    """Stored as `{"v": ..., "share": {...}}`."""

    group_id: str
    records: list[tuple[msgspec.Raw, msgspec.Raw]]
    timers: list[tuple[str, int]]
    clock_ms: int
    directory: list | None
    heartbeat_owed: list[str] = []
    wanted: list[tuple[str, int, str]] = []


def snapshot(group: ShareGroup) -> list[Record]:
    """The group's records as compaction leaves them: replaying them in this order gives the group back."""
    group_id = group.group_id
    members = sorted(group.members)
    out = [records.group_epoch(group_id, group.group_epoch, group.metadata_hash)]
    out += [records.member_subscription(group_id, group.members[m]) for m in members]
    out += [records.target_assignment(group_id, m, group.target_assignment[m]) for m in sorted(group.target_assignment)]
    out.append(records.target_assignment_epoch(group_id, group.assignment_epoch, group.assignment_timestamp_ms)
               if group.assignment_epoch != -1 else records.target_assignment_epoch_tombstone(group_id))
    out += [records.current_assignment(group_id, group.members[m]) for m in members]
    if group.has_state_partition_metadata:
        out.append(records.state_partition_metadata(group_id, group.initialized, group.deleting))
    out += [records.snapshot(group_id, t, p, group.partitions[(t, p)]) for t, p in sorted(group.partitions)]
    return out


def to_doc(group: ShareGroup) -> ShareGroupDoc:
    encoded = [r.encode() for r in snapshot(group)]
    return ShareGroupDoc(
        group.group_id, [(msgspec.Raw(k), msgspec.Raw(b"null" if v is None else v)) for k, v in encoded],
        sorted(group.timers.items()), group.clock_ms, group.directory, sorted(group.heartbeat_owed),
        [(t, p, h) for (t, p), h in sorted(group.wanted.items())])


def from_doc(doc: ShareGroupDoc) -> ShareGroup:
    """The group `to_doc` stored, rebuilt by replaying its records."""
    group: ShareGroup | None = None
    for key, value in doc.records:
        raw = bytes(value)
        group = replay(group, decode_record(bytes(key), None if raw == b"null" else raw))
    if group is None:
        raise ValueError(f"stored share group {doc.group_id!r} has no records")
    group.timers = dict(doc.timers)
    group.clock_ms = doc.clock_ms
    group.directory = doc.directory
    group.heartbeat_owed = set(doc.heartbeat_owed)
    group.wanted = {(t, p): h for t, p, h in doc.wanted}
    return group
