"""The applyInPandasWithState adapter: one call per bucket of groups per micro-batch, one core call per due group.

Thin on purpose; every protocol decision is the core's (`state.batch`). Keys are `(kind, bucket)` from the source:
`group` rows carry `bucket = crc32(group_id) mod state.buckets` (`streaming.buckets.bucket_of`), so one key holds
many groups and Spark's per-key cost (a pandas frame in and out, a state row through the JVM) is paid per bucket,
not per group.
`directory` (ListGroups) and `reject` rows use bucket 0 and never carry state.

Per `group` call: decode the rows, order them by (partition, offset), split them by group_id (plain Python), and call
`step_group` (with the batch's processing time as `now_ms`, each record's timestamp as its arrival time, and the rows'
`resumed`: the first new batch after a restart) for every group that has requests or whose stored deadline is due;
the other groups' bytes are kept untouched. Each stepped group's `GroupStep` becomes output records, which the call
produces itself (`streaming.sink.KafkaOutput`: a response leaves as soon as its bucket is done), and the bucket's row
stores every group's bytes and deadline. The call returns one summary row (`SUMMARY_SCHEMA`): counts for the metrics
and the bucket's earliest deadline, which the timer file keeps until the source's timer row calls the bucket again
(see `coordinator_function`).
"""

from __future__ import annotations

import json
import struct
import time
from dataclasses import dataclass
from typing import Any, Iterator, Protocol, Sequence

import numpy as np
import pandas as pd

from state.batch import GroupStep, step_group
from state.config import CoordinatorConfig
from state.records import dumps, group_key
from streaming.buckets import DEFAULT_BUCKETS
from streaming.sink import GROUP_STATES, SUMMARY_COLUMNS
from streaming.timers import merge_deadlines
from streaming.worker_heap import freeze_survivors

STATE_SCHEMA = "version INT, buckets INT, groups BINARY"
"""The state store row of one bucket. `groups` packs (`pack_groups`), sorted by group_id, each group's core bytes
(which carry the core's own schema version; the core upgrades older ones) and next deadline: one opaque BINARY,
because PySpark 4.3's workers cannot parse an ARRAY or MAP state schema (KeyError 'elementType'), and one bytes
value is also the cheapest to pickle through the JVM. `version` is this envelope's, so a later shell can change the
row and still read an old checkpoint; `buckets` is the `state.buckets` the checkpoint was made with (a group's
bucket depends on it, so it cannot change afterwards)."""
ENVELOPE_VERSION = 2

INPUT_COLUMNS = ["kind", "bucket", "group_id", "partition", "offset", "key", "value", "reply_key", "reason",
                 "response", "timestamp", "resumed"]

_GROUP_RECORD_KEY = dumps(group_key("")).partition(b'"group"')[0]
"""How a group metadata record's key starts (`state.records.group_key`), as opposed to an offset record's."""


class Output(Protocol):
    def send(self, rows: Sequence[tuple]) -> None: ...


def coordinator_function(config: CoordinatorConfig, records_source: dict[str, Any], output: Output,
                         buckets: int = DEFAULT_BUCKETS, processing_time_timeout: bool = False,
                         timer_file: str = ""):
    """The function Spark calls per key; `config`, `records_source` (how to read the records topic for the group
    directory), `output` (where the output records go: `streaming.sink.KafkaOutput`) and `buckets`
    (`state.buckets`, checked against the stored envelope) are shipped to the workers.

    Timers: by default each group call writes its bucket's earliest deadline to `timer_file`
    (`streaming.timers`), the source's timer rows (a `group` row with a null group_id) call a bucket once that
    deadline is due, and the query runs without Spark timeouts, which spares every batch a second Python round trip
    for timed-out keys (Spark makes it even when none are due). With `processing_time_timeout` (the query runs
    `GroupStateTimeout.ProcessingTimeTimeout`, `timer.ticks.enabled=false`) each call sets the bucket's timeout to
    its earliest deadline instead."""

    def coordinate(key: tuple, batches: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        started = time.perf_counter()
        freeze_survivors()
        kind, bucket = key[0], int(key[1])
        rows = sorted(
            (row for pdf in batches for row in zip(pdf["partition"], pdf["offset"], pdf["key"], pdf["value"],
                                                   pdf["reply_key"], pdf["reason"], pdf["response"],
                                                   pdf["timestamp"], pdf["group_id"], pdf["resumed"])),
            key=lambda r: (r[0], r[1]))
        now_ms = state.getCurrentProcessingTimeMs()
        called = Called()
        if kind == "group":
            out = _bucket(rows, state, now_ms, config, buckets, called, processing_time_timeout)
            if timer_file:
                merge_deadlines(timer_file, {bucket: called.deadline})
        elif kind == "directory":
            out = _directory(rows, records_source)
        else:
            out = _rejects(rows)
        computed = time.perf_counter()
        output.send(out)
        called.call_us = int((computed - started) * 1e6)
        called.produce_us = int((time.perf_counter() - computed) * 1e6)
        yield _summary(kind, bucket, out, called)

    return coordinate


@dataclass
class Called:
    """What a group call did besides its output records, for the summary row."""

    groups: int = 0
    groups_with_timer: int = 0
    members_expired: int = 0
    timer_rows: int = 0
    deadline: int | None = None  # the bucket's earliest pending deadline after the call
    call_us: int = 0
    produce_us: int = 0


def _summary(kind: str, bucket: int, out: list[tuple], called: Called) -> pd.DataFrame:
    counts = dict.fromkeys(("response", "record", "dead_letter"), 0)
    to_state = dict.fromkeys(GROUP_STATES, 0)
    for sink, key, value, *_ in out:
        counts[sink] += 1
        if sink == "record" and value is not None and key.startswith(_GROUP_RECORD_KEY):
            to_state[json.loads(value)["directory"]["group_state"]] += 1
    row = [kind, bucket, called.deadline, counts["response"], counts["record"], counts["dead_letter"],
           called.groups, called.groups_with_timer, called.members_expired, called.timer_rows, *to_state.values(),
           called.call_us, called.produce_us]
    # An object array keeps None a null (not NaN) and builds the frame about 4x faster than from a list of rows.
    array = np.empty((1, len(row)), dtype=object)
    array[0] = row
    return pd.DataFrame(array, columns=SUMMARY_COLUMNS, copy=False)


def _bucket(rows: list[tuple], state, now_ms: int, config: CoordinatorConfig, buckets: int, called: Called,
            processing_time_timeout: bool) -> list[tuple]:
    groups = _load(state.get, buckets) if state.exists else {}
    by_group: dict[str, list[tuple]] = {}
    for row in rows:  # already in (partition, offset) order, which each group's list keeps
        if row[8] is not None:
            by_group.setdefault(row[8], []).append(row)
        else:  # a timer row only makes Spark call the bucket
            called.timer_rows += 1
    due = [g for g, (_, deadline) in groups.items() if deadline is not None and deadline <= now_ms]
    resumed = any(row[9] for row in rows)  # the whole batch is, or none of it (`streaming.source`)
    out: list[tuple] = []
    for group_id in sorted(by_group.keys() | set(due)):
        group_rows = by_group.get(group_id, [])
        stored = groups.get(group_id, (None, None))[0]
        # Each request counts at its record's timestamp, so a late batch does not expire members whose heartbeats
        # arrived in time (the core clamps the times between the group's last call and now).
        step: GroupStep = step_group(group_id, stored, [bytes(r[3]) for r in group_rows], now_ms, config,
                                     [int(r[7]) for r in group_rows], resumed)
        out += _step_rows(group_id, group_rows, step)
        called.groups += 1
        called.groups_with_timer += step.next_deadline_ms is not None
        called.members_expired += step.members_expired
        if step.state is None:
            groups.pop(group_id, None)
        else:
            groups[group_id] = (step.state, step.next_deadline_ms)
    if not groups:
        if state.exists:
            state.remove()
        return out
    state.update((ENVELOPE_VERSION, buckets, pack_groups(groups)))
    pending = [d for _, d in groups.values() if d is not None]
    if pending:
        called.deadline = min(pending)
        if processing_time_timeout:
            # Spark stores batch time + duration: exactly the earliest deadline (1 ms when overdue).
            state.setTimeoutDuration(max(1, called.deadline - now_ms))
    return out


def _step_rows(group_id: str, rows: list[tuple], step: GroupStep) -> list[tuple]:
    key = group_id.encode()
    out: list[tuple] = [("response", key, value, None, None, None) for value in step.responses]
    out += [("record", rkey, rvalue, None, None, None) for rkey, rvalue in step.records]
    for index, reason in step.dead_letters:
        partition, offset, rkey, value = rows[index][:4]
        out.append(("dead_letter", rkey, value, reason, partition, offset))
    return out


def _load(stored: tuple, buckets: int) -> dict[str, tuple[bytes, int | None]]:
    """The bucket's groups as {group_id: (state bytes, deadline)}; refuses another envelope or bucket count."""
    version = stored[0]
    if version != ENVELOPE_VERSION:
        raise ValueError(f"state envelope version {version} is not readable by this release "
                         f"(reads {ENVELOPE_VERSION})")
    _, stored_buckets, packed = stored
    if stored_buckets != buckets:
        raise ValueError(f"the checkpoint was made with state.buckets={stored_buckets} but the query runs with "
                         f"state.buckets={buckets}; state.buckets is fixed once a checkpoint exists (set it back "
                         f"to {stored_buckets}, or start a new checkpoint)")
    return unpack_groups(bytes(packed))


_HEADER = struct.Struct(">IIq")  # group_id length, state length, deadline (NO_DEADLINE: none)
NO_DEADLINE = -1


def pack_groups(groups: dict[str, tuple[bytes, int | None]]) -> bytes:
    """Groups sorted by id, each `header, group_id (UTF-8), state`: deterministic bytes for the same groups."""
    parts = []
    for group_id in sorted(groups):
        blob, deadline = groups[group_id]
        name = group_id.encode()
        parts += [_HEADER.pack(len(name), len(blob), NO_DEADLINE if deadline is None else deadline), name, blob]
    return b"".join(parts)


def unpack_groups(packed: bytes) -> dict[str, tuple[bytes, int | None]]:
    groups: dict[str, tuple[bytes, int | None]] = {}
    at, size = 0, _HEADER.size
    while at < len(packed):
        name_len, blob_len, deadline = _HEADER.unpack_from(packed, at)
        at += size
        group_id = packed[at:at + name_len].decode()
        at += name_len
        groups[group_id] = (packed[at:at + blob_len], None if deadline == NO_DEADLINE else deadline)
        at += blob_len
    return groups


def _directory(rows: list[tuple], records_source: dict[str, Any]) -> list[tuple]:
    from streaming.directory import current_directory

    directory = current_directory(records_source)
    return [("response", row[4], directory.answer(bytes(row[3])), None, None, None) for row in rows]


def _rejects(rows: list[tuple]) -> list[tuple]:
    out: list[tuple] = []
    for partition, offset, key, value, reply_key, reason, response, *_ in rows:
        out.append(("dead_letter", key, value, reason, partition, offset))
        if response is not None:
            out.append(("response", reply_key, response, None, None, None))
    return out
