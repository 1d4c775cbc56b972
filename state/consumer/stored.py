"""A consumer group as the shell stores it: the records a compacted records topic holds for it, and what the runtime
keeps beside them.

The group's own part is its records, the latest of each key (`snapshot`: what compaction of the records topic
would leave, written in the order Kafka's load would replay them), so that decoding a stored group (`from_doc`)
is the same replay that loads one from the records topic (`state.runtime.load`) and that a live call makes: there is no
second encoding of a group to keep in step with the first. Beside them: the timers, the clock, the directory entry
last written, the members owing a heartbeat (the fast path) and the time of the last regular-expression resolution
(which a log holds only in records since tombstoned). Offsets are stored apart, as a classic group's
(`state.offset_values.Offsets`).
"""

from __future__ import annotations

import msgspec

from state.consumer import records
from state.consumer.group import ConsumerGroup
from state.consumer.replay import replay
from state.offset_values import Offsets
from state.records import Record, decode_record


class ConsumerGroupDoc(msgspec.Struct):
    """Stored as `{"v": ..., "consumer": {...}}` beside a classic group's `{"v": ..., "group": {...}}`."""

    group_id: str
    records: list[tuple[msgspec.Raw, msgspec.Raw]]
    """(key, value) as written to the records topic; a tombstone's value is JSON null."""
    timers: list[tuple[str, int]]
    clock_ms: int
    directory: list | None
    last_regex_refresh_ms: int | None
    last_regex_version: int
    heartbeat_owed: list[str] = []


def snapshot(group: ConsumerGroup) -> list[Record]:
    """The group's records as compaction leaves them: replaying them in this order gives the group back."""
    group_id = group.group_id
    members = sorted(group.members)
    out = [records.group_epoch(group_id, group.group_epoch, group.metadata_hash)]
    out += [records.member_subscription(group_id, group.members[m]) for m in members]
    out += [records.target_assignment(group_id, m, group.target_assignment[m]) for m in sorted(group.target_assignment)]
    out.append(records.target_assignment_epoch(group_id, group.assignment_epoch, group.assignment_timestamp_ms)
               if group.assignment_epoch != -1 else records.target_assignment_epoch_tombstone(group_id))
    out += [records.current_assignment(group_id, group.members[m]) for m in members]
    out += [records.regular_expression(group_id, r, group.resolved_regexes[r]) for r in sorted(group.resolved_regexes)]
    return out


def to_doc(group: ConsumerGroup) -> ConsumerGroupDoc:
    encoded = [r.encode() for r in snapshot(group)]
    return ConsumerGroupDoc(
        group.group_id, [(msgspec.Raw(k), msgspec.Raw(b"null" if v is None else v)) for k, v in encoded],
        sorted(group.timers.items()), group.clock_ms, group.directory, group.last_regex_refresh_ms,
        group.last_regex_version, sorted(group.heartbeat_owed))


def from_doc(doc: ConsumerGroupDoc, offsets: Offsets) -> ConsumerGroup:
    """The group `to_doc` stored, rebuilt by replaying its records."""
    group: ConsumerGroup | None = None
    for key, value in doc.records:
        raw = bytes(value)
        group = replay(group, decode_record(bytes(key), None if raw == b"null" else raw))
    if group is None:
        raise ValueError(f"stored consumer group {doc.group_id!r} has no records")
    group.timers = dict(doc.timers)
    group.offsets = offsets
    group.clock_ms = doc.clock_ms
    group.directory = doc.directory
    group.last_regex_refresh_ms = doc.last_regex_refresh_ms
    group.last_regex_version = doc.last_regex_version
    group.heartbeat_owed = set(doc.heartbeat_owed)
    return group
