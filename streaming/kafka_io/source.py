"""The Kafka streaming source: PySpark's Python Data Source API over kafka-python.

Offsets are `{"topic": {"<partition>": next_offset, ...}, "tick": n}`, with `"due": [bucket, ...]` when timers are
due, so the checkpoint's offset log records exactly what each micro-batch read; `read` re-reads a `[start, end)`
range deterministically when Spark replays a batch.
Options follow the JVM connector: `subscribe`, `startingOffsets` (earliest | latest | JSON
`{"topic": {"0": 23, "1": -2}}` with -2 = earliest and -1 = latest), `maxOffsetsPerTrigger`, `failOnDataLoss`, and
`kafka.*` settings for kafka-python (security included). Partitions added to the topic are read from offset 0.
Unlike the JVM connector's `pollTimeoutMs`, a read never fails for records slow to become readable: it waits and
logs a line every `readWaitLogMs` (default 60000; `read_range`).

`route=true` makes the source the coordinator's front door: each record is routed with the core's `route` while it
is read, so the routing costs no extra Python stage.

`read` yields Arrow record batches built column-wise (`record_batches`), which spares PySpark's per-value
conversion of yielded tuples.

`topicMetadataRefreshMs` (> 0) makes the reader publish the cluster's topics into the subscribed (control) topic
at the start and whenever they change, checked that often (`streaming.kafka_io.topic_watch`), for the consumer
groups' assignors; the routing sends them to every bucket.

`timersTopic` enables timer rows: with `spark.sql.streaming.noDataMicroBatches.enabled=false` an idle query runs
no batches, and a bucket of groups is only called when it has input. The state calls publish each bucket's
earliest deadline on that topic; `latestOffset` reads it (`streaming.kafka_io.timer_schedule`), lists the buckets whose
deadline is due in the offset (`"due"`, and advances `"tick"` so that the offset changes), and `read` yields one timer
row per due bucket (`timer_rows`), which makes Spark call that bucket, where the core fires what is due. The offset
log records the due buckets, so a replayed batch calls the same ones. Which buckets a batch calls, the first new batch
of a query run among them (every bucket), is `streaming.bucket_deadlines`'.

`viewsTopic` makes the source write the views topic's completeness marks (`streaming.kafka_io.view_marks`) each time it
plans a batch: the batch that ended at its start offsets has committed.

The offset also records `"buckets"` (`state.buckets`): a group's bucket depends on it, so a checkpoint refuses
another value. And `"retentionMs"` (`offsetsRetentionMs`, the run's `offsets.retention.minutes`): a group's retention
check is armed under the retention of the call that armed it, so when a run's is shorter than the one its checkpoint's
last batch recorded, the run's first new batch carries `"recheck": true` and its timer rows call every group of every
bucket once (`streaming.bucket_deadlines.RETENTION_RECHECK`). A checkpoint that recorded none (an earlier release)
is taken to have run with this run's retention.

A restarted query first replays its unfinished batch (same offsets, same batch time); the first new batch after
that carries `"resumed": true` in its offset, and every routed row of it `resumed = true`, which tells the core that
the coordinator was restarted (it restarts sessions, as Kafka does when it loads a group after a failover).
"""

from __future__ import annotations

import json
import logging
from bisect import bisect_left
import time
from dataclasses import dataclass, replace
from itertools import chain, islice
from typing import Iterable, Iterator, Mapping

import pyarrow as pa
from kafka import TopicPartition
from kafka.errors import OffsetOutOfRangeError
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from common.config import client_config
from common.generations import generation_of, generations, split, stream_partition, topic_of
from common.markers import gaps, read_markers
from common.topics import create_generation, delete_generation
from state.api import TOPIC_METADATA_GROUP, TRANSACTIONS_GROUP, marker_request, route
from streaming.bucket_deadlines import RETENTION_RECHECK, buckets_to_call
from streaming.buckets import bucket_of
from streaming.kafka_io.kafka_clients import cached_consumer, chosen_client, high_watermarks
from streaming.kafka_io.read_wait import ReadWait
from streaming.kafka_io.timer_schedule import TimerSchedule
from streaming.kafka_io.topic_watch import TopicWatch
from streaming.kafka_io.view_marks import ViewMarks
from streaming.spark_runtime.worker_heap import freeze_survivors

log = logging.getLogger(__name__)

RETIRED_TOPIC_KEPT_S = 10.0
"""How long a retired generation's topic outlives the plan that left it out (`KafkaStreamReader._retire`): the
gateways' view followers stop reading its log ends once they read a mark that no longer names it, which is written
at the next plan and read within a second."""

RAW_ARROW = pa.schema([("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()),
                       ("key", pa.binary()), ("value", pa.binary())])
ROUTED_ARROW = pa.schema([*RAW_ARROW, ("kind", pa.string()), ("group_id", pa.string()), ("reply_key", pa.binary()),
                          ("reason", pa.string()), ("response", pa.binary()), ("bucket", pa.int32()),
                          ("resumed", pa.bool_())])
"""A raw row plus the core's routing decision, the group's state bucket (`streaming.buckets.bucket_of`; 0 for
`directory` and `reject` rows) and whether its batch is the first new one after a restart. A timer row
(`timer_rows`) is a `group` row with a null group_id."""
_DDL_TYPES = {pa.int32(): "INT", pa.int64(): "LONG", pa.binary(): "BINARY", pa.string(): "STRING",
              pa.bool_(): "BOOLEAN"}


def ddl(schema: pa.Schema) -> str:
    """The Spark schema of an Arrow schema (the batches `read` yields must match it exactly)."""
    return ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in schema)


RAW_SCHEMA = ddl(RAW_ARROW)
ROUTED_SCHEMA = ddl(ROUTED_ARROW)

EARLIEST, LATEST = -2, -1


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """Records `[start, end)` of one topic-partition: picklable, and the same range on replay. The batch's due
    buckets ride on its first range (an empty one in a timer-only batch), so timer rows cost no extra task;
    `resumed` is the batch's own (see the module's docstring)."""

    topic: str
    partition: int
    start: int
    end: int
    due: tuple[int, ...] = ()
    resumed: bool = False
    recheck: bool = False
    generation: int = 0
    """Which generation of the requests topic `topic` is (`common.generations`): rows carry the stream
    partition."""


class KafkaSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "coordinator-kafka"

    def schema(self) -> str:
        return ROUTED_SCHEMA if _flag(self.options, "route", False) else RAW_SCHEMA

    def streamReader(self, schema) -> "KafkaStreamReader":
        return KafkaStreamReader(dict(self.options))


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Spark hands options over case-insensitively (as lower-case keys once copied); look them up that way."""
    return {k.lower(): v for k, v in options.items()}


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    return str(options.get(name, str(default))).strip().lower() == "true"


class KafkaStreamReader(DataSourceStreamReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        options = lower_keys(options)
        self.topic = options["subscribe"]
        self.client_config = client_config(options)
        self.client = chosen_client(options)
        self.starting_offsets = options.get("startingoffsets", "earliest")
        cap = options.get("maxoffsetspertrigger")
        self.max_offsets_per_trigger = int(cap) if cap else None
        self.fail_on_data_loss = _flag(options, "failondataloss", True)
        self.route = _flag(options, "route", False)
        self.buckets = int(options.get("buckets", "1"))
        retention = options.get("offsetsretentionms")
        self.retention_ms = int(retention) if retention else None
        timers = options.get("timerstopic")
        self.timers = TimerSchedule(self.client_config, timers) if timers else None
        refresh_ms = int(options.get("topicmetadatarefreshms") or 0)
        self.topic_watch = TopicWatch(self.client_config, self.topic, refresh_ms) if refresh_ms > 0 else None
        views = options.get("viewstopic")
        self.marks = ViewMarks(self.client_config, self.client, views, self.topic) if views else None
        self.wait_log_ms = int(options.get("readwaitlogms", "60000"))
        self.rotate_records = int(options.get("rotaterecords") or 0)
        """Start a new generation of the requests topic past this many offsets in a partition (0: never)."""
        self.retire_after_s = int(options.get("retireafterms") or 120_000) / 1000
        """How long after a newer generation began an older one, read to its end, is retired (`_retire`)."""
        self.replication_factor = int(options.get("replicationfactor") or 1)
        self._seen: dict[int, float] = {}
        """When (this reader's monotonic clock) each generation was first named in a plan's start: a restarted
        reader counts a generation's age from its first plan, which only delays retirement."""
        self._retired: dict[int, float] | None = None
        """Generations left out of the offsets whose topics are still to delete -> when they were left out; None
        before the first plan (which adds those an earlier run left out and had not deleted)."""
        # A new reader is a new query run: its first new batch is marked (only routed rows, the coordinator's, carry
        # the mark). Spark writes every offset `latestOffset` returns that differs from its start to the offset log
        # and runs that batch, so the first such offset is the one to mark.
        self.resuming = self.route

    # -- planning (driver) ---------------------------------------------------------------------------------------

    def _driver_consumer(self):
        return cached_consumer("high-watermarks", self.client_config, fetch_max_wait_ms=1,
                               max_partition_fetch_bytes=1024, metadata_max_age_ms=5000)

    def _partitions(self, generation: int = 0) -> list[int]:
        """The topic's partitions; none for a generation g > 0 whose topic the cluster no longer has (retired and
        deleted, `_retire`: a standby's rehearsal or a checkpoint may still name it)."""
        topic = topic_of(self.topic, generation)
        consumer = self._driver_consumer()
        deadline = time.monotonic() + 30
        while not (parts := consumer.partitions_for_topic(topic)):
            if generation and topic not in consumer.topics():  # `topics()` asks the cluster, not the cache
                return []
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {topic!r} does not exist")
            time.sleep(0.2)
        return sorted(parts)

    def _streams(self, generation_list: Iterable[int]) -> list[int]:
        return [stream_partition(g, p) for g in generation_list for p in self._partitions(g)]

    def _tp(self, stream: int) -> TopicPartition:
        generation, partition = split(stream)
        return TopicPartition(topic_of(self.topic, generation), partition)

    def _ends(self, known: Mapping[int, int], generation_list: list[int]) -> dict[int, int]:
        """High watermark of every current partition of the generations (stream partition -> end); `known` (a
        recent offset per stream partition) keeps fetches small. The newest generation's are read first, the
        others after, so that a request a writer appended to an older generation before it moved to the newest is
        read in the same batch as, or a batch before, the requests it appended there after it
        (`common.generations`)."""
        *older, newest = sorted(generation_list)
        ends: dict[int, int] = {}
        for part in ([newest], older) if older else ([newest],):
            streams = {self._tp(s): s for s in self._streams(part)}
            marks = high_watermarks(self._driver_consumer(), {tp: known.get(s, 0) for tp, s in streams.items()})
            ends.update({streams[tp]: mark for tp, mark in marks.items()})
        return ends

    def _generations_now(self) -> list[int]:
        """The generations of the requests topic the cluster holds (the first offset of a new checkpoint)."""
        return generations(self.topic, self._driver_consumer().topics()) or [0]

    def initialOffset(self) -> dict:
        generation_list = self._generations_now()
        ends = self._ends({}, generation_list)
        if self.starting_offsets == "latest":
            start = ends
        elif self.starting_offsets == "earliest":
            start = self._beginnings(list(ends))
        else:
            # Named topics start where they are told; a generation not named, where its log ends now.
            given = {stream_partition(g, int(p)): int(o)
                     for topic, offsets in json.loads(self.starting_offsets).items()
                     if (g := generation_of(self.topic, topic)) is not None for p, o in offsets.items()}
            begin = self._beginnings(list(ends))
            start = {s: {EARLIEST: begin[s], LATEST: ends[s]}.get(given.get(s, default), given.get(s, default))
                     for s in ends
                     for default in (EARLIEST if split(s)[0] == 0 else LATEST,)}
        return {**self._offsets_json(start), "tick": 0, **self._layout()}

    def _offsets_json(self, positions: Mapping[int, int]) -> dict:
        """{topic of each generation: {partition: offset}}, oldest generation first."""
        by_topic: dict[str, dict[str, int]] = {}
        for stream, offset in sorted(positions.items()):
            generation, partition = split(stream)
            by_topic.setdefault(topic_of(self.topic, generation), {})[str(partition)] = offset
        return by_topic

    def _positions(self, offset: Mapping[str, object]) -> dict[int, int]:
        """Stream partition -> offset of every generation an offset names."""
        return {stream_partition(g, int(p)): o for topic, offsets in offset.items()
                if isinstance(offsets, dict) and (g := generation_of(self.topic, topic)) is not None
                for p, o in offsets.items()}

    def _layout(self) -> dict:
        """What the offsets record of the state's layout (routed readers only), and the retention its groups'
        checks are armed under."""
        if not self.route:
            return {}
        return {"buckets": self.buckets, **({} if self.retention_ms is None else {"retentionMs": self.retention_ms})}

    def _shortened(self, start: dict) -> bool:
        """Whether this run's retention is shorter than the one the checkpoint's last batch recorded."""
        before = start.get("retentionMs")
        return self.retention_ms is not None and before is not None and self.retention_ms < int(before)

    def _beginnings(self, streams: list[int]) -> dict[int, int]:
        """The log start of each stream partition. kafka-python 3.0's `beginning_offsets` can leave out a partition
        of a topic created a moment ago (its leader not learnt yet), and then fails on its own result with a
        KeyError: a new checkpoint's first offset just after a rotation failed so in a CI run. Asked again, the
        metadata has caught up."""
        tps = {self._tp(s): s for s in streams}
        deadline = time.monotonic() + 30
        while True:
            try:
                return {tps[tp]: o for tp, o in self._driver_consumer().beginning_offsets(list(tps)).items()}
            except KeyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_offsets_per_trigger) if self.max_offsets_per_trigger else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.route and start.get("buckets") != self.buckets:
            raise ValueError(f"the checkpoint was made with state.buckets={start.get('buckets')} but the query runs "
                             f"with state.buckets={self.buckets}; state.buckets is fixed once a checkpoint exists "
                             f"(set it back to {start.get('buckets')}, or start a new checkpoint)")
        begin = self._positions(start)
        if self.marks is not None:
            self.marks.covered(begin)  # the batch that ended at `start` has committed (streaming.view_marks)
        if self.topic_watch is not None:  # before the ends are read: a change is part of this batch
            self.topic_watch.maybe_publish(int(time.time() * 1000))
        generation_list = sorted({split(s)[0] for s in begin} | {0})
        ends = self._ends(begin, generation_list)
        restart = self._check_data_loss(begin, ends)
        available = {s: max(0, e - begin.get(s, 0)) for s, e in ends.items() if s not in restart}
        take = cap_rows(available, limit.max_rows if isinstance(limit, ReadMaxRows) else None)
        end = {s: o for s, o in begin.items() if s in ends}  # a deleted generation has no ends: it is left out
        end.update({s: begin.get(s, 0) + n for s, n in take.items()})
        end.update(restart)  # this batch reads nothing there; the next one starts at the log start
        end.update(self._rotated(generation_list[-1], ends))
        if self.rotate_records:
            self._retire(begin, ends, generation_list, end)
        due = self._due_buckets(start)
        if end == begin and not due:
            return start  # nothing to read and no timer due: no batch
        offset = {**self._offsets_json(end), "tick": start["tick"] + (1 if due else 0), **self._layout()}
        if due:
            offset["due"] = due
        if self.resuming:
            offset["resumed"] = True
            if due and self._shortened(start):
                offset["recheck"] = True
                log.info("offsets.retention.minutes is shorter than the checkpoint's (%s ms, now %d ms): this batch "
                         "calls every group once", start.get("retentionMs"), self.retention_ms)
            self.resuming = False
        return offset

    def _rotated(self, newest: int, ends: Mapping[int, int]) -> dict[int, int]:
        """The partitions of a new generation of the requests topic, from offset 0, when the newest one's longest
        partition holds `rotateRecords` offsets (`common.generations`); else nothing. The topic is created (and
        usable) before the offset naming it is returned: a gateway writes there once a mark names it, which comes
        after the batch that first read it has committed."""
        longest = max((e for s, e in ends.items() if split(s)[0] == newest), default=0)
        if not self.rotate_records or longest < self.rotate_records:
            return {}
        topic = topic_of(self.topic, newest + 1)
        partitions = self._partitions(newest)
        create_generation(self.client_config, topic, len(partitions), self.replication_factor)
        log.info("requests topic: generation %d (%s) begins; %s holds %d offsets in its longest partition",
                 newest + 1, topic, topic_of(self.topic, newest), longest)
        return {stream_partition(newest + 1, p): 0 for p in partitions}

    def _retire(self, begin: Mapping[int, int], ends: Mapping[int, int], generation_list: list[int],
                end: dict[int, int]) -> None:
        """Leave out of `end` every generation g (0 < g < the newest) read to its end whose next generation began
        `retireAfterMs` ago, and delete the topics of generations left out at least `RETIRED_TOPIC_KEPT_S` ago that
        the start no longer names (the batch that left them out has committed). Without this every generation's
        ends are read on every plan and every gateway round, and on tansu every topic costs each idempotent produce
        (docs/operations-streaming.md, "Retiring generations").

        Generation 0 is never retired: the client library, the admin tools and the drills write there. A gateway
        writes to the newest generation the marks name, within a round of the mark (`gateway.fast.views`); one
        whose follower stalls longer than `retireAfterMs` and writes to a retired generation gets no answer (its
        views are not fresh, so it answers nothing itself): the client times out and retries, nothing acknowledged
        is lost. tansu creates a deleted topic again on a produce; the next run's first plan deletes it."""
        now = time.monotonic()
        if self._retired is None:
            named = set(generation_list)
            self._retired = {g: now for g in self._generations_now() if 0 < g < generation_list[-1] and g not in named}
        for g in generation_list:
            self._seen.setdefault(g, now)
        for g in generation_list[1:-1]:
            began = min(self._seen[h] for h in generation_list if h > g)
            streams = [s for s in ends if split(s)[0] == g]
            if streams and now - began >= self.retire_after_s and all(begin.get(s, 0) >= ends[s] for s in streams):
                for s in streams:
                    end.pop(s, None)
                self._retired.setdefault(g, now)
                log.info("requests topic: generation %d (%s) retired, read to its end", g, topic_of(self.topic, g))
        for g, at in list(self._retired.items()):
            if g not in generation_list and now - at >= RETIRED_TOPIC_KEPT_S:
                if delete_generation(self.client_config, topic_of(self.topic, g)):
                    del self._retired[g]
                    self._driver_consumer().topics()  # forget its partitions now (`_partitions`)

    def _check_data_loss(self, begin: dict[int, int], ends: Mapping[int, int]) -> dict[int, int]:
        """A log that ends before the checkpoint's offset was recreated or truncated (a broker that lost its data,
        a topic deleted and created again): the requests in between are gone. With failOnDataLoss that stops the
        query with an error naming each partition; without it, returns {partition: log start} to restart from."""
        behind = {p: (begin[p], e) for p, e in ends.items() if e < begin.get(p, 0)}
        if not behind:
            return {}
        described = ", ".join(f"{tp.topic}-{tp.partition} checkpoint offset {b} but log end {e}"
                              for s, (b, e) in sorted(behind.items()) for tp in (self._tp(s),))
        if self.fail_on_data_loss:
            raise RuntimeError(f"data loss: {described}; the topic was recreated or truncated. Set "
                               "fail.on.data.loss=false (failOnDataLoss) to restart those partitions from their "
                               "log start")
        log.warning("data loss: %s; restarting those partitions from their log start", described)
        return self._beginnings(sorted(behind))

    def _due_buckets(self, start: dict) -> list[int]:
        """The buckets to call for their deadlines (`streaming.bucket_deadlines.buckets_to_call`); the timers topic
        is read again only once a batch has run since (`TimerSchedule.due`)."""
        if self.timers is None:
            return []
        due = self.timers.due(int(time.time() * 1000), start)  # the first call also fixes where the schedule starts
        return buckets_to_call(due, self.buckets, first_of_run=self.resuming)

    def partitions(self, start: dict, end: dict) -> list[KafkaRange]:
        begin = self._positions(start)
        resumed = bool(end.get("resumed"))  # only a run's first new batch has it
        ranges = [KafkaRange(self._tp(s).topic, split(s)[1], begin.get(s, 0), e, resumed=resumed,
                             generation=split(s)[0])
                  for s, e in sorted(self._positions(end).items()) if e > begin.get(s, 0)]
        due = tuple(end.get("due", ()))  # only a batch that calls buckets for their deadlines has it
        if due:
            ranges[:1] = [replace(ranges[0] if ranges else KafkaRange(self.topic, 0, 0, 0, resumed=resumed), due=due,
                                  recheck=bool(end.get("recheck")))]
        return ranges

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint, not in a Kafka consumer group."""

    # -- reading (executors) -------------------------------------------------------------------------------------

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        freeze_survivors()
        rows = read_range(self.client_config, partition, self.fail_on_data_loss, self.wait_log_ms, self.client)
        if partition.generation:
            stream = stream_partition(partition.generation, partition.partition)
            rows = ((stream, *row[1:]) for row in rows)
        if self.route:
            resumed = partition.resumed
            delivered: list[tuple[int, int]] = []
            routed_rows = (out for row in rows if not delivered.append(row[1:3])
                           for out in routed(row, self.buckets, resumed))
            markers = marker_rows(self.client_config, partition, delivered, self.buckets, resumed)
            return record_batches(chain(timer_rows(partition.due, resumed, partition.recheck), routed_rows, markers),
                                  ROUTED_ARROW)
        return record_batches(rows, RAW_ARROW)


def record_batches(rows: Iterator[tuple], schema: pa.Schema, size: int = 4096) -> Iterator[pa.RecordBatch]:
    """Rows as Arrow record batches of up to `size` rows, transposed to columns in C (`zip(*chunk)`)."""
    rows = iter(rows)
    while chunk := list(islice(rows, size)):
        yield pa.RecordBatch.from_arrays([pa.array(column, type=field.type)
                                          for column, field in zip(zip(*chunk), schema)], schema=schema)


def cap_rows(available: Mapping[int, int], max_rows: int | None) -> dict[int, int]:
    """How many records to take per partition under a per-batch cap: an even share each, and what a short
    partition leaves over goes to the others, so one busy partition cannot starve the rest."""
    if max_rows is None or sum(available.values()) <= max_rows:
        return dict(available)
    take = {p: 0 for p in available}
    budget = max_rows
    waiting = sorted((p for p, n in available.items() if n > 0), key=lambda p: available[p])
    while waiting and budget > 0:
        share = max(1, budget // len(waiting))
        p = waiting.pop(0)
        n = min(available[p], share, budget)
        take[p] = n
        budget -= n
    return take


def read_range(config: Mapping[str, object], part: KafkaRange, fail_on_data_loss: bool, wait_log_ms: int,
               client: str = "kafka-python") -> Iterator[tuple]:
    """Yield `(partition, offset, timestamp, key, value)` for offsets in `[start, end)`, with `client`
    (`streaming.kafka_io.kafka_clients.chosen_client`).

    The read never gives up on records the broker said are there: it waits, with a line every `wait_log_ms`
    (`streaming.kafka_io.read_wait.ReadWait`). A read that failed after a timeout stopped the query under
    sustained load, and the restarted query would have planned the same range again.

    Offsets can have holes (transaction markers, compaction); only records deleted by retention count as data loss:
    with `failOnDataLoss` the task fails, otherwise reading resumes at the log start."""
    if client == "confluent":
        return _read_range_librdkafka(config, part, fail_on_data_loss, wait_log_ms)
    return _read_range_kafka_python(config, part, fail_on_data_loss, wait_log_ms)


def _data_loss(where: str, start: int, fail_on_data_loss: bool) -> None:
    if fail_on_data_loss:
        raise RuntimeError(f"{where} offsets from {start} are gone (deleted by retention?); set failOnDataLoss=false "
                           "to skip them")
    log.warning("%s: offsets from %d are gone; resuming at the log start", where, start)


def _read_range_librdkafka(config: Mapping[str, object], part: KafkaRange, fail_on_data_loss: bool,
                           wait_log_ms: int) -> Iterator[tuple]:
    from streaming.kafka_io import librdkafka

    start = part.start
    while True:
        try:
            yield from librdkafka.read_range(config, part.topic, part.partition, start, part.end,
                                             wait_log_ms / 1000)
            return
        except librdkafka.OffsetOutOfRange:
            _data_loss(f"{part.topic}-{part.partition}", start, fail_on_data_loss)
            start = librdkafka.log_start(config, part.topic, part.partition)


def _read_range_kafka_python(config: Mapping[str, object], part: KafkaRange, fail_on_data_loss: bool,
                             wait_log_ms: int) -> Iterator[tuple]:
    consumer = cached_consumer("read", config, max_poll_records=5000)
    tp = TopicPartition(part.topic, part.partition)
    consumer.assign([tp])
    consumer.seek(tp, part.start)
    waiting = ReadWait(f"{part.topic}-{part.partition}", part.end, wait_log_ms / 1000)
    while consumer.position(tp) < part.end:
        try:
            batch = consumer.poll(timeout_ms=200)
        except OffsetOutOfRangeError:
            _data_loss(str(tp), part.start, fail_on_data_loss)
            consumer.seek_to_beginning(tp)
            continue
        for record in batch.get(tp, ()):
            if record.offset >= part.end:
                break
            yield (part.partition, record.offset, record.timestamp, record.key, record.value)
        waiting.check(consumer.position(tp))


def routed(row: tuple, buckets: int, resumed: bool) -> list[tuple]:
    """Append the core's routing decision, the state bucket and the batch's `resumed` to a raw row (see
    `ROUTED_ARROW`). The cluster's topics (route kind `topics`) go to every bucket, as a request of its topic
    metadata row (`TOPIC_METADATA_GROUP`): one row per bucket."""
    _partition, _offset, _timestamp, key, value = row
    r = route(key, value)
    if r.kind == "topics":
        return [row + ("group", TOPIC_METADATA_GROUP, None, None, None, bucket, resumed) for bucket in range(buckets)]
    group_id = r.group_id or ""
    bucket = bucket_of(group_id, buckets) if r.kind == "group" else 0
    return [row + (r.kind, group_id, r.reply_key, r.reason, r.response, bucket, resumed)]


def marker_rows(config: Mapping[str, object], part: KafkaRange, delivered: list[tuple[int, int]], buckets: int,
                resumed: bool) -> Iterator[tuple]:
    """The transaction markers among the range's offsets that were not delivered (`delivered`: (offset, timestamp)
    of each record read, filled while the range is read, before this runs), each as a `TransactionMarker` row to
    every bucket (`state.api.deliver_markers` finds the groups it is for), at its offset, with the time of the
    record before it. Read raw from the log (`common.markers`): consumers skip control records."""
    skipped = gaps((offset for offset, _ in delivered), part.start, part.end)
    if not skipped:
        return
    bootstrap = config.get("bootstrap_servers")
    servers = bootstrap if isinstance(bootstrap, str) else ",".join(bootstrap)  # type: ignore[arg-type]
    offsets = [offset for offset, _ in delivered]  # ascending: a partition is read in order
    for marker in read_markers(servers, part.topic, part.partition, skipped):
        before = bisect_left(offsets, marker.offset)
        value = marker_request(TRANSACTIONS_GROUP, marker.producer_id, marker.producer_epoch, marker.committed)
        row = (stream_partition(part.generation, part.partition), marker.offset,
               delivered[before - 1][1] if before else 0, None, value)
        yield from (row + ("group", TRANSACTIONS_GROUP, None, None, None, bucket, resumed)
                    for bucket in range(buckets))


def timer_rows(buckets: Iterable[int], resumed: bool, recheck: bool = False) -> Iterator[tuple]:
    """One row per due bucket (`ROUTED_ARROW`): a `group` row with a null group_id, which makes Spark call the
    bucket so that the core can fire its due timers; with `recheck`, keyed `RETENTION_RECHECK`: the call steps every
    group of the bucket."""
    key = RETENTION_RECHECK if recheck else None
    for bucket in buckets:
        yield (-1, -1, 0, key, None, "group", None, None, None, None, bucket, resumed)
