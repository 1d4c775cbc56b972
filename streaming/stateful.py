"""One state call: a bucket of groups (or the directory, or rejects) for one micro-batch, whatever the operator.

Thin on purpose; every protocol decision is the core's (`state.batch`). Keys are `(kind, bucket)` from the source:
`group` rows carry `bucket = crc32(group_id) mod state.buckets` (`streaming.buckets.bucket_of`), so one key holds
many groups and Spark's per-key cost is paid per bucket, not per group. `directory` (ListGroups) and `reject` rows
use bucket 0 and never carry state.

Per `group` call (`step_bucket`): order the rows by (partition, offset), split them by group_id, and call
`step_group` (with the batch's processing time as `now_ms`, each record's timestamp as its arrival time, and the
rows' `resumed`: the first new batch after a restart) for every group that has requests or whose deadline is due.
How a bucket's groups are stored is the operator's (`GroupStore`): a row per group (`streaming.group_stores.group_rows`,
`transformWithState`, the default) or one row per bucket (`streaming.group_stores.bucket_blobs`,
`applyInPandasWithState`). The call produces its output itself (`streaming.kafka_io.sink.KafkaOutput`: a response leaves
as soon as its bucket is done), including the bucket's deadline for the timers topic, from which the source calls the
bucket again; when a group is due and when a call publishes are `streaming.bucket_deadlines`'. It returns one summary
row (`SUMMARY_SCHEMA`) for the metrics.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol, Sequence

from state.api import (
    OPEN_TRANSACTIONS_KEY,
    TOPIC_METADATA_GROUP,
    TRANSACTIONS_GROUP,
    CoordinatorConfig,
    FastAnswer,
    GroupStep,
    OffsetsReader,
    StoredGroup,
    deliver_markers,
    open_transactions,
    step_group,
)
from streaming.bucket_deadlines import RETENTION_RECHECK, deadline_record, is_due, publishes
from streaming.kafka_io.sink import FAST_APIS, FAST_COUNTED_AS, GROUP_STATES, SUMMARY_COLUMNS, OutputRow
from streaming.spark_runtime.worker_heap import freeze_survivors

log = logging.getLogger(__name__)

INPUT_COLUMNS = ["kind", "bucket", "group_id", "partition", "offset", "key", "value", "reply_key", "reason",
                 "response", "timestamp", "resumed"]


@dataclass(frozen=True, slots=True)
class Input:
    """One input row of a state call (`INPUT_COLUMNS` minus the key columns). A timer row has no group_id."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reply_key: bytes | None
    reason: str | None
    response: bytes | None
    timestamp: int
    group_id: str | None
    resumed: bool


class Output(Protocol):
    def send(self, rows: Sequence[OutputRow]) -> None:
        """Hand rows to the producer (`streaming.kafka_io.sink.KafkaOutput`)."""

    def flush(self) -> None:
        """Wait until every row sent is acknowledged; raise if one was not."""


@dataclass(frozen=True, slots=True)
class Held:
    """A group as its store holds it before a step: what to pass to `step_group`, and its deadline."""

    stored: StoredGroup
    deadline: int | None
    read_offsets: OffsetsReader | None = None
    """Set when the offsets are not in `stored` but read on first use (a row of their own)."""


class GroupStore(Protocol):
    """A bucket's groups during one call, as an operator keeps them."""

    def earliest(self) -> int | None:
        """The bucket's earliest deadline as stored now (after `finish`: as the call left it)."""

    def due(self, now_ms: int) -> Iterable[str]:
        """Groups that may have a deadline due (the caller checks each against `Held.deadline`)."""

    def group_ids(self) -> Iterable[str]:
        """Every group the bucket holds (a retention recheck's, `bucket_deadlines.RETENTION_RECHECK`)."""

    def prefetch(self, group_ids: Sequence[str]) -> None:
        """The groups `read` is about to be asked for, in that order (a store may read them all at once)."""

    def read(self, group_id: str) -> Held | None: ...

    def write(self, group_id: str, held: Held | None, step: GroupStep, now_ms: int) -> None:
        """Store the group after `step` (`step.metadata` None: the group is gone)."""

    def keep(self, group_id: str, held: Held | None, now_ms: int) -> None:
        """A group `due` named that turned out not to be due: it stays as it is (its deadline moved later)."""

    def finish(self) -> None:
        """Write what the call changed."""


@dataclass
class CallStats:
    """What one state call did besides its output records: the values of its summary row."""

    groups: int = 0
    groups_with_timer: int = 0
    members_expired: int = 0
    timer_rows: int = 0
    deadline: int | None = None  # the bucket's earliest pending deadline after the call
    states_entered: Counter = field(default_factory=Counter)
    fast_answers: Counter = field(default_factory=Counter)  # by api: requests a gateway answered, checked
    mispredictions: Counter = field(default_factory=Counter)  # by api: of those, decided otherwise
    call_us: int = 0
    produce_us: int = 0


def sorted_inputs(rows: Iterable[Input]) -> list[Input]:
    return sorted(rows, key=lambda r: (r.partition, r.offset))


def call(kind: str, bucket: int, rows: list[Input], now_ms: int, config: CoordinatorConfig,
         records_source: dict[str, Any], output: Output, open_store: Callable[[], GroupStore],
         flush: bool = True) -> list:
    """One state call, whatever the operator: the output produced, and the summary row's values returned.

    `flush=False` leaves the output unacknowledged when the call returns: the operator then flushes once per task,
    before the task ends (`streaming.group_stores.group_rows.GroupRows.close`), so that a batch never commits without
    it.

    `open_store` gives the bucket's `GroupStore` (only `group` calls open it). The bucket's deadline goes to the
    timers topic as `streaming.bucket_deadlines.publishes` says: when the call changed it, and in a resumed batch."""
    started = time.perf_counter()
    freeze_survivors()
    stats = CallStats()
    if kind == "group":
        store = open_store()
        before = store.earliest()
        resumed = any(row.resumed for row in rows)  # the whole batch is, or none of it (`streaming.kafka_io.source`)
        out = step_bucket(rows, store, now_ms, config, resumed, stats, bucket)
        if publishes(before, stats.deadline, resumed):
            out.append(OutputRow("deadline", *deadline_record(bucket, stats.deadline)))
    elif kind == "directory":
        out = _directory(rows, records_source)
    else:
        out = _rejects(rows)
    computed = time.perf_counter()
    produce(output, out, flush)
    stats.call_us = int((computed - started) * 1e6)
    stats.produce_us = int((time.perf_counter() - computed) * 1e6)
    return summary(kind, bucket, out, stats)


def produce(output: Output, out: list[OutputRow], flush: bool) -> None:
    """Hand a call's output to the producer, the views acknowledged before any response is sent.

    A gateway that hears a group's answer reads the views topic to its end, and from then on answers the group's
    heartbeats and fetches from the view it read (`gateway.fast.fast_path`). Sent together, a response on one topic can
    be acknowledged before the view on another: the gateway would then answer from the view before the change,
    telling a member its old epoch. One acknowledgement's wait (about 0.3 ms) on the calls that publish a view and
    answer something."""
    views = [row for row in out if row.sink == "view"]
    if views and any(row.sink == "response" for row in out):
        output.send(views)
        output.flush()
        out = [row for row in out if row.sink != "view"]
    output.send(out)
    if flush:
        output.flush()


def step_bucket(rows: list[Input], store: GroupStore, now_ms: int, config: CoordinatorConfig, resumed: bool,
                stats: CallStats, bucket: int = 0) -> list[OutputRow]:
    """Step every group of the bucket that has requests (`rows`, in (partition, offset) order) or a due deadline."""
    by_group: dict[str, list[Input]] = {}
    recheck = False
    for row in rows:
        if row.group_id is not None:
            by_group.setdefault(row.group_id, []).append(row)
        else:  # a timer row only makes Spark call the bucket
            stats.timer_rows += 1
            recheck = recheck or row.key == RETENTION_RECHECK
    out: list[OutputRow] = []
    topic_rows = by_group.pop(TOPIC_METADATA_GROUP, [])
    marker_rows = by_group.pop(TRANSACTIONS_GROUP, [])
    called = by_group.keys() | set(store.due(now_ms))
    if recheck:  # every group once, its retention check armed again under this run's retention
        called |= set(store.group_ids()) - {TOPIC_METADATA_GROUP, TRANSACTIONS_GROUP}
    group_ids = sorted(called)
    store.prefetch([TOPIC_METADATA_GROUP, TRANSACTIONS_GROUP, *group_ids])
    topics = _bucket_topics(store, topic_rows, now_ms, config, out)
    group_ids = _deliver_markers(store, by_group, marker_rows, group_ids, now_ms, bucket, out)
    for group_id in group_ids:
        group_rows = by_group.get(group_id, [])
        held = store.read(group_id)
        if not group_rows and not recheck and not is_due(None if held is None else held.deadline, now_ms):
            store.keep(group_id, held, now_ms)
            continue
        if held is None and not group_rows:
            continue  # named by `due` or the recheck, and gone since
        # Each request counts at its record's timestamp, so a late batch does not expire members whose heartbeats
        # arrived in time (the core clamps the times between the group's last call and now).
        step = step_group(group_id, None if held is None else held.stored, [bytes(r.value) for r in group_rows],
                          now_ms, config, [int(r.timestamp) for r in group_rows], resumed,
                          read_offsets=None if held is None else held.read_offsets, topics=topics,
                          position=(group_rows[-1].partition, group_rows[-1].offset) if group_rows else None,
                          recheck_retention=recheck)
        out += _step_rows(group_id, group_rows, step)
        stats.groups += 1
        stats.groups_with_timer += step.next_deadline_ms is not None
        stats.members_expired += step.members_expired
        stats.states_entered.update(step.states_entered)
        if step.fast_answers:
            _count_fast_answers(group_id, step.fast_answers, stats)
        store.write(group_id, held, step, now_ms)
    store.finish()
    stats.deadline = store.earliest()
    return out


def _deliver_markers(store: GroupStore, by_group: dict[str, list[Input]], marker_rows: list[Input],
                     group_ids: list[str], now_ms: int, bucket: int, out: list[OutputRow]) -> list[str]:
    """The bucket's open transactions (the reserved group TRANSACTIONS_GROUP) after this call's TxnOffsetCommits
    and transaction markers: each marker becomes a TransactionMarker request of the groups it is for
    (`state.api.deliver_markers`), at its place among their requests. The groups to step. When they changed, they
    are published on the views topic (`state.api.open_transactions`), where gateways find those past their
    timeout."""
    held = store.read(TRANSACTIONS_GROUP)
    before = None if held is None else held.stored.metadata
    requests = [(g, r.partition, r.offset, r.timestamp, r.value) for g, rows in by_group.items() for r in rows]
    index, added = deliver_markers(before, requests, [(r.partition, r.offset, r.value) for r in marker_rows])
    if index != before:
        store.write(TRANSACTIONS_GROUP, held, GroupStep(metadata=index), now_ms)
        out.append(OutputRow("view", OPEN_TRANSACTIONS_KEY + str(bucket).encode(), open_transactions(index)))
    elif held is not None:
        store.keep(TRANSACTIONS_GROUP, held, now_ms)
    at = {(r.partition, r.offset): r for r in marker_rows}
    for group_id, partition, offset, value in added:
        rows = by_group.setdefault(group_id, [])
        marker = at[(partition, offset)]
        rows.append(Input(partition, offset, None, value, None, None, None, marker.timestamp, group_id,
                          marker.resumed))
        rows.sort(key=lambda r: (r.partition, r.offset))
    return sorted(set(group_ids) | {g for g, *_ in added})


def _bucket_topics(store: GroupStore, rows: list[Input], now_ms: int, config: CoordinatorConfig,
                   out: list[OutputRow]) -> bytes | None:
    """The bucket's topic metadata (what its consumer groups' assignors see), after this call's `TopicMetadata`
    rows: stored as the reserved group `TOPIC_METADATA_GROUP`, stepped before the groups so that they see it."""
    held = store.read(TOPIC_METADATA_GROUP)
    if not rows:
        return None if held is None else held.stored.metadata
    step = step_group(TOPIC_METADATA_GROUP, None if held is None else held.stored, [bytes(r.value) for r in rows],
                      now_ms, config)
    out += _step_rows(TOPIC_METADATA_GROUP, rows, step)
    store.write(TOPIC_METADATA_GROUP, held, step, now_ms)
    return step.metadata


def _step_rows(group_id: str, rows: list[Input], step: GroupStep) -> list[OutputRow]:
    key = group_id.encode()
    # The view before the responses: a client answered (a SyncGroup) asks next what the view may answer (its
    # OffsetFetch), and a gateway reads the views topic to its end then (gateway.fast.fast_path).
    out = [OutputRow("view", key, step.view)] if step.publish_view else []
    out += [OutputRow("response", key, value) for value in step.responses]
    out += [OutputRow("record", rkey, rvalue) for rkey, rvalue in step.records]
    for index, reason in step.dead_letters:
        row = rows[index]
        out.append(OutputRow("dead_letter", row.key, row.value, reason, row.partition, row.offset))
    return out


MISPREDICTION_LOG_INTERVAL_S = 60.0
_logged_at: dict[str, float] = {}
"""group_id -> when this worker last logged a misprediction of it (once per group and minute)."""


def _count_fast_answers(group_id: str, answers: Sequence[FastAnswer], stats: CallStats) -> None:
    """Count the requests a gateway answered from the group's view; log a misprediction once per group and
    minute (per worker process): it means a gateway's view was stale, and only the client's answer differed."""
    wrong = [a for a in answers if a.mispredicted]
    stats.fast_answers.update(FAST_COUNTED_AS.get(a.api, a.api) for a in answers)
    stats.mispredictions.update(FAST_COUNTED_AS.get(a.api, a.api) for a in wrong)
    now = time.monotonic()
    if wrong and now - _logged_at.get(group_id, -MISPREDICTION_LOG_INTERVAL_S) >= MISPREDICTION_LOG_INTERVAL_S:
        if len(_logged_at) >= 1 << 16:
            _logged_at.clear()
        _logged_at[group_id] = now
        first = wrong[0]
        log.warning("group %s: a gateway answered %s of member %s with error %d from a stale view, the coordinator "
                    "decided %d%s (%d such answer(s) in this call; the next log of this group in a minute at the "
                    "earliest)", group_id, first.api, first.member_id, first.answered, first.decided,
                    f": {first.detail}" if first.detail else "", len(wrong))


def summary(kind: str, bucket: int, out: list[OutputRow], stats: CallStats) -> list:
    """The summary row's values (`SUMMARY_COLUMNS`)."""
    counts = Counter(row.sink for row in out)
    row = [kind, bucket, stats.deadline, counts["response"], counts["record"], counts["dead_letter"],
           stats.groups, stats.groups_with_timer, stats.members_expired, stats.timer_rows,
           *(stats.states_entered[s] for s in GROUP_STATES),
           *(stats.fast_answers[api] for api in FAST_APIS), *(stats.mispredictions[api] for api in FAST_APIS),
           stats.call_us, stats.produce_us]
    if len(row) != len(SUMMARY_COLUMNS):  # Row(**zip(...)) would silently drop or shift columns
        raise ValueError(f"a summary row of {len(row)} values for {len(SUMMARY_COLUMNS)} columns")
    return row


def _directory(rows: list[Input], records_source: dict[str, Any]) -> list[OutputRow]:
    from streaming.directory import current_directory

    directory = current_directory(records_source)
    return [OutputRow("response", row.reply_key, directory.answer(bytes(row.value))) for row in rows]


def _rejects(rows: list[Input]) -> list[OutputRow]:
    out: list[OutputRow] = []
    for row in rows:
        out.append(OutputRow("dead_letter", row.key, row.value, row.reason, row.partition, row.offset))
        if row.response is not None:
            out.append(OutputRow("response", row.reply_key, row.response))
    return out
