"""The default state operator: `transformWithState` keyed by bucket, one state row per group.

Spark's Python state operators cost about 0.4 ms per key called, whatever the key holds, so keys stay coarse
(buckets of groups, `streaming.buckets`); but `transformWithState`'s `MapState` costs the same per entry touched
whether it holds ten thousand entries or a million. So each bucket key holds its groups as map entries, and a call
reads and writes only the groups it steps, never the rest of the bucket:

- `groups`: group_id -> (metadata, deadline, registered): the core's metadata part (`state.batch.StoredGroup`),
  the group's next deadline, and where the deadline index has it filed;
- `offsets`: group_id -> offsets: the core's offsets part, read only when a step uses offsets
  (`step_group(read_offsets=...)`) and written only when it changed them;
- `deadlines`: slot -> groups filed there, and at slot -1 the bucket's schedule of slots
  (`streaming.group_stores.deadline_index`, which finds the due groups without reading the others).

Every state call is a request to the JVM, answered before the next (about 0.1 ms idle, far more on busy cores), so
the processor pipelines them (`streaming.group_stores.state_pipe`): the rows of every group a call steps are read in one
exchange before the first step, and writes are not waited for until the call ends. Time is the batch's processing time (`timeMode="ProcessingTime"`, recorded in the offset log, so a
replayed batch sees the same); no Spark timer is ever registered, and the query runs no batch without input
(`spark.sql.streaming.noDataMicroBatches.enabled=false`): deadlines come back as the source's timer rows
(`streaming.kafka_io.timer_schedule`).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Iterator, Sequence

from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType

from state.api import CoordinatorConfig, GroupStep, StoredGroup
from streaming.group_stores.deadline_index import DeadlineIndex, registration
from streaming.group_stores.state_pipe import PipelinedMap, StatePipe
from streaming.kafka_io.sink import SUMMARY_COLUMNS
from streaming.stateful import Held, Input, Output, call, sorted_inputs

_TYPES = {"STRING": StringType(), "BINARY": BinaryType(), "LONG": LongType()}


def _struct(ddl: str) -> StructType:
    """A field list such as `"slot LONG, entries BINARY"` as the StructType Spark would parse it to (nullable
    fields). Given as a string, `getMapState` has the JVM's state server parse each schema, a round trip apiece in
    every task: six per batch, a measurable part of an idle batch's state task."""
    return StructType([StructField(name, _TYPES[kind]) for name, kind in (f.split() for f in ddl.split(","))])


GROUPS = ("groups", _struct("group_id STRING"), _struct("metadata BINARY, deadline LONG, registered LONG"))
OFFSETS = ("offsets", _struct("group_id STRING"), _struct("offsets BINARY"))
DEADLINES = ("deadlines", _struct("slot LONG"), _struct("entries BINARY"))
"""The state variables: (name, key schema, value schema)."""
SCHEDULE_SLOT = -1
"""Where `deadlines` keeps the schedule: a map entry rather than a value state of its own, which spares a state
variable and Spark's warning on every read of an empty value state."""

OFFSETS_HINTS: dict[str, bool] = {}
"""group_id -> whether its last step in this worker process read its offsets row: a call reads the offsets of the
groups whose hint says so (or that have none) ahead, with their group rows, instead of one round trip each in the
middle of the step. Only a guess about the next step, never state: a wrong one costs a read not needed, or the round
trip it would have saved. Kept across calls (`spark.python.worker.reuse`), emptied when it reaches `MAX_HINTS`."""
MAX_HINTS = 1 << 17

INITIAL_STATE_COLUMNS = ["kind", "bucket", "group_id", "metadata", "offsets", "deadline"]
"""Rows of an initial state (a checkpoint being upgraded, `streaming.recovery.upgrade`): one per group."""


class GroupRows(StatefulProcessor):
    """The coordinator's `StatefulProcessor`; picklable, shipped to the workers with its arguments."""

    def __init__(self, config: CoordinatorConfig, records_source: dict[str, Any], output: Output) -> None:
        self.config = config
        self.records_source = records_source
        self.output = output

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.pipe = StatePipe.of(handle)
        maps = [handle.getMapState(*variable) for variable in (GROUPS, OFFSETS, DEADLINES)]
        if self.pipe is not None:
            maps = [PipelinedMap(state, self.pipe) for state in maps]
        self.groups, self.offsets, self.deadlines = maps

    def _store(self) -> "RowStore":
        return RowStore(self.groups, self.offsets, self.deadlines, None if self.pipe is None else self.pipe.drain)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues) -> Iterator[Row]:
        kind, bucket = key[0], int(key[1])
        inputs = sorted_inputs(_inputs(rows))
        values = call(kind, bucket, inputs, timerValues.getCurrentProcessingTimeInMs(), self.config,
                      self.records_source, self.output, self._store, flush=False)
        yield Row(**dict(zip(SUMMARY_COLUMNS, values)))

    def handleInitialState(self, key: Any, initialState: Row, timerValues) -> None:
        """One group of a checkpoint being upgraded: stored as a step would store it."""
        store = self._store()
        group_id = initialState.group_id
        store.put(group_id, StoredGroup(bytes(initialState.metadata),
                                        None if initialState.offsets is None else bytes(initialState.offsets)),
                  initialState.deadline, timerValues.getCurrentProcessingTimeInMs())
        store.finish()

    def close(self) -> None:
        """The end of the task (PySpark calls it once per partition and batch): wait for the output of every call
        of the task at once, instead of once per bucket; a failure fails the task, so the batch cannot commit
        without its output."""
        self.output.flush()


_INPUT_FIELDS = ("partition", "offset", "key", "value", "reply_key", "reason", "response", "timestamp", "group_id",
                 "resumed")


def _inputs(rows: Iterator[Row]) -> Iterator[Input]:
    """The rows as `Input`s, their fields taken by position (found once, from the first row's field names):
    `Row.__getattr__` looks each name up in the row's field list, 60% of turning 50,000 rows into inputs."""
    get = None
    for row in rows:
        if get is None:
            get = itemgetter(*(row.__fields__.index(name) for name in _INPUT_FIELDS))
        yield Input(*get(row))


class RowStore:
    """`streaming.stateful.GroupStore` over one bucket's state variables (`MapState`s), for one call."""

    def __init__(self, groups, offsets, deadlines, drain: Callable[[], None] | None = None,
                 hints: dict[str, bool] | None = None) -> None:
        self._groups = groups
        self._offsets = offsets
        self._index = DeadlineIndex(_IndexState(deadlines))
        self._registered: dict[str, int | None] = {}
        self._read: dict[str, tuple | None] = {}
        self._offsets_read: dict[str, tuple | None] = {}
        self._offsets_used: set[str] = set()
        self._drain = drain
        self._hints = OFFSETS_HINTS if hints is None else hints

    def prefetch(self, group_ids: Sequence[str]) -> None:
        """Read the rows of the groups about to be stepped, and the offsets of those whose last step read them
        (`OFFSETS_HINTS`), each map in one exchange where the maps pipeline."""
        rows = _get_many(self._groups, group_ids)
        self._read.update(zip(group_ids, rows))
        guessed = [g for g, row in zip(group_ids, rows) if row is not None and self._hints.get(g, True)]
        self._offsets_read.update(zip(guessed, _get_many(self._offsets, guessed)))

    def earliest(self) -> int | None:
        return self._index.earliest()

    def due(self, now_ms: int) -> list[str]:
        return list(dict.fromkeys(group_id for group_id, _ in self._index.pop_due(now_ms)))

    def group_ids(self) -> list[str]:
        return [key[0] for key in self._groups.keys()]

    def read(self, group_id: str) -> Held | None:
        row = self._read.pop(group_id) if group_id in self._read else self._groups.getValue((group_id,))
        if row is None:
            return None
        metadata, deadline, self._registered[group_id] = row
        return Held(StoredGroup(bytes(metadata)), deadline, read_offsets=lambda: self._read_offsets(group_id))

    def _read_offsets(self, group_id: str) -> bytes | None:
        self._offsets_used.add(group_id)
        if group_id in self._offsets_read:
            row = self._offsets_read.pop(group_id)
        else:
            row = self._offsets.getValue((group_id,))
        return None if row is None else bytes(row[0])

    def write(self, group_id: str, held: Held | None, step: GroupStep, now_ms: int) -> None:
        if len(self._hints) >= MAX_HINTS:
            self._hints.clear()
        self._hints[group_id] = group_id in self._offsets_used
        if step.metadata is None:
            self._groups.removeKey((group_id,))
            self._offsets.removeKey((group_id,))
            return
        self._put_metadata(group_id, step.metadata, step.next_deadline_ms, now_ms)
        if step.offsets_changed and (step.offsets is not None or held is not None):
            self._put_offsets(group_id, step.offsets)

    def keep(self, group_id: str, held: Held | None, now_ms: int) -> None:
        if held is None:
            return  # a group deleted since it was filed
        registered, refile = registration(self._registered.get(group_id), held.deadline, now_ms)
        if refile:
            self._index.file(group_id, registered)
            self._groups.updateValue((group_id,), (held.stored.metadata, held.deadline, registered))

    def put(self, group_id: str, stored: StoredGroup, deadline: int | None, now_ms: int) -> None:
        """Store a whole group (an upgrade's initial state)."""
        self._put_metadata(group_id, stored.metadata, deadline, now_ms)
        if stored.offsets is not None:
            self._put_offsets(group_id, stored.offsets)

    def _put_metadata(self, group_id: str, metadata: bytes, deadline: int | None, now_ms: int) -> None:
        registered, refile = registration(self._registered.get(group_id), deadline, now_ms)
        if refile:
            self._index.file(group_id, registered)
        self._groups.updateValue((group_id,), (metadata, deadline, registered))

    def _put_offsets(self, group_id: str, offsets: bytes | None) -> None:
        if offsets is None:
            self._offsets.removeKey((group_id,))
        else:
            self._offsets.updateValue((group_id,), (offsets,))

    def finish(self) -> None:
        self._index.flush()
        if self._drain is not None:
            self._drain()


def _get_many(state, group_ids: Sequence[str]) -> list[tuple | None]:
    """The values of `group_ids` in a map: in one exchange where it pipelines (`PipelinedMap.getValues`)."""
    if not group_ids:
        return []
    keys = [(group_id,) for group_id in group_ids]
    get_many = getattr(state, "getValues", None)
    return get_many(keys) if get_many is not None else [state.getValue(key) for key in keys]


class _IndexState:
    """`streaming.group_stores.deadline_index.SlotStore` over the `deadlines` map."""

    def __init__(self, deadlines) -> None:
        self._deadlines = deadlines

    def read_schedule(self) -> bytes | None:
        return self.read_slot(SCHEDULE_SLOT)

    def write_schedule(self, packed: bytes | None) -> None:
        self.write_slot(SCHEDULE_SLOT, packed)

    def read_slot(self, slot: int) -> bytes | None:
        row = self._deadlines.getValue((slot,))
        return None if row is None else bytes(row[0])

    def write_slot(self, slot: int, packed: bytes | None) -> None:
        if packed is None:
            self._deadlines.removeKey((slot,))
        else:
            self._deadlines.updateValue((slot,), (packed,))


class ReadOnlyRows(StatefulProcessor):
    """A standby's rehearsal (`streaming.query.rehearse`): takes its rows as `GroupRows` does, and neither keeps
    state nor produces anything."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        for name, key_schema, value_schema in (GROUPS, OFFSETS, DEADLINES):
            handle.getMapState(name, key_schema, value_schema)

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues) -> Iterator[Row]:
        for _ in rows:
            pass
        return iter(())

    def close(self) -> None:
        pass
