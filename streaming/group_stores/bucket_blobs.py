"""Release 0.1.0's operator, `state.operator=applyInPandasWithState`: one state row per bucket of groups.

`applyInPandasWithState` keeps one state value per key, so a bucket key holds all its groups in one BINARY value
(`pack_groups`); a call that steps one group rewrites the whole bucket. It needs no deadline index (a call reads
every group of its bucket anyway) and makes one state read and one write per bucket, which is cheap while buckets
are small; with hundreds of thousands of groups the rows grow to megabytes and every batch pays for them
(docs/operations.md). `transformWithState` with a row per group (`streaming.group_stores.group_rows`) is the default.

The row is `STATE_SCHEMA`: an envelope version, the `state.buckets` it was made with, and the packed groups, each
with both parts of its stored state (`state.batch.StoredGroup`) and its next deadline. One opaque BINARY, because
PySpark's workers cannot parse an ARRAY or MAP state schema, and one bytes value is also the cheapest to pickle
through the JVM.
"""

from __future__ import annotations

import struct
from typing import Any, Iterator

import numpy as np
import pandas as pd

from state.api import CoordinatorConfig, GroupStep, StoredGroup
from streaming.bucket_deadlines import earliest, is_due
from streaming.kafka_io.sink import SUMMARY_COLUMNS
from streaming.stateful import Held, Input, Output, call, sorted_inputs

STATE_SCHEMA = "version INT, buckets INT, groups BINARY"
ENVELOPE_VERSION = 3
"""2: release 0.1.0 (one stored document per group); 3: the two parts of `StoredGroup`."""


def bucket_function(config: CoordinatorConfig, records_source: dict[str, Any], output: Output, buckets: int):
    """The function Spark calls per key; its arguments are shipped to the workers."""

    def coordinate(key: tuple, batches: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        kind, bucket = key[0], int(key[1])
        inputs = sorted_inputs(
            Input(*row) for pdf in batches
            for row in zip(pdf["partition"], pdf["offset"], pdf["key"], pdf["value"], pdf["reply_key"],
                           pdf["reason"], pdf["response"], pdf["timestamp"], pdf["group_id"], pdf["resumed"]))
        values = call(kind, bucket, inputs, state.getCurrentProcessingTimeMs(), config, records_source, output,
                      lambda: BlobStore(state, buckets))
        # An object array keeps None a null (not NaN) and builds the frame about 4x faster than from a list of rows.
        array = np.empty((1, len(values)), dtype=object)
        array[0] = values
        yield pd.DataFrame(array, columns=SUMMARY_COLUMNS, copy=False)

    return coordinate


class BlobStore:
    """`streaming.stateful.GroupStore` over one bucket's row, for one call."""

    def __init__(self, state, buckets: int) -> None:
        self._state = state
        self._buckets = buckets
        self._groups = _load(state.get, buckets) if state.exists else {}
        self._changed = False

    def earliest(self) -> int | None:
        return earliest(deadline for _, deadline in self._groups.values())

    def due(self, now_ms: int) -> list[str]:
        return [g for g, (_, deadline) in self._groups.items() if is_due(deadline, now_ms)]

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def prefetch(self, group_ids) -> None:
        pass  # the whole bucket is one row, read already

    def read(self, group_id: str) -> Held | None:
        held = self._groups.get(group_id)
        return None if held is None else Held(*held)

    def write(self, group_id: str, held: Held | None, step: GroupStep, now_ms: int) -> None:
        stored = step.stored(None if held is None else held.stored)
        if stored is None:
            self._groups.pop(group_id, None)
        else:
            self._groups[group_id] = (stored, step.next_deadline_ms)
        self._changed = True

    def keep(self, group_id: str, held: Held | None, now_ms: int) -> None:
        pass  # `due` names only groups whose deadline is due

    def finish(self) -> None:
        if not self._changed:
            return
        if self._groups:
            self._state.update((ENVELOPE_VERSION, self._buckets, pack_groups(self._groups)))
        elif self._state.exists:
            self._state.remove()


def _load(stored: tuple, buckets: int) -> dict[str, tuple[StoredGroup, int | None]]:
    """The bucket's groups as {group_id: (stored group, deadline)}; refuses another envelope or bucket count."""
    version, stored_buckets, packed = stored
    if version != ENVELOPE_VERSION:
        raise ValueError(f"state envelope version {version} is not readable by this release (reads "
                         f"{ENVELOPE_VERSION}); a checkpoint of release 0.1.0 is upgraded with `coordinator upgrade`")
    if stored_buckets != buckets:
        raise ValueError(f"the checkpoint was made with state.buckets={stored_buckets} but the query runs with "
                         f"state.buckets={buckets}; state.buckets is fixed once a checkpoint exists")
    return unpack_groups(bytes(packed))


_HEADER = struct.Struct(">IIiq")  # group_id length, metadata length, offsets length (-1: none), deadline
NO_DEADLINE = -1


def pack_groups(groups: dict[str, tuple[StoredGroup, int | None]]) -> bytes:
    """Groups sorted by id, each `header, group_id (UTF-8), metadata, offsets`: deterministic bytes."""
    parts = []
    for group_id in sorted(groups):
        stored, deadline = groups[group_id]
        name = group_id.encode()
        offsets = stored.offsets
        parts += [_HEADER.pack(len(name), len(stored.metadata), -1 if offsets is None else len(offsets),
                               NO_DEADLINE if deadline is None else deadline), name, stored.metadata, offsets or b""]
    return b"".join(parts)


def unpack_groups(packed: bytes) -> dict[str, tuple[StoredGroup, int | None]]:
    groups: dict[str, tuple[StoredGroup, int | None]] = {}
    at, size = 0, _HEADER.size
    while at < len(packed):
        name_len, metadata_len, offsets_len, deadline = _HEADER.unpack_from(packed, at)
        at += size
        group_id = packed[at:at + name_len].decode()
        at += name_len
        metadata = packed[at:at + metadata_len]
        at += metadata_len
        offsets = None if offsets_len < 0 else packed[at:at + offsets_len]
        at += max(offsets_len, 0)
        groups[group_id] = (StoredGroup(metadata, offsets), None if deadline == NO_DEADLINE else deadline)
    return groups
