"""The gateway's copy of the groups' views, and whether it is fresh enough to answer from (docs/gateway.md).

A thread follows the views topic from its beginning (a compacted topic: each group's latest view, a tombstone for a
deleted group) and its completeness marks (`streaming.kafka_io.view_marks`). Freshness is measured on this gateway's
clock alone, never by comparing it with the coordinator's:

- Every `SAMPLE_INTERVAL_S` the thread notes the time t and the log ends of the requests topic (E) and of the views
  topic (V), then reads the views topic up to V.
- Complete as of t: the marks read (the lowest of the latest mark of each views partition) name requests-topic
  positions at or past E(t). Then every request written before t has been applied and its views written, and all
  of them have been read: the views topic was read up to V(t), and a mark comes after the views it covers in each
  partition.
- Alive as of t: a mark was read at an offset at or past V(t) in its partition, so it was written after t. The
  query writes one at least every second, idle or not, so a stopped query stops this clock.

Where the query rotates the requests topic (`common.generations`), E covers every generation the marks name, by
stream partition; a round whose marks name one its ends did not cover moves neither instant nor answers a refresh
(its E may miss what was written there), and the next round notes that one's end too. After each round the follower
tells the gateway the newest generation the marks name (`on_generation`), which its writes move to.

An OffsetFetch answered from a view needs the requests topic's ends as of after it arrived: `refresh` wakes the
thread for a round at once and hands back the ends that round noted (`gateway.fast.fast_path`).

A view is used while both instants are at most the bound old: `bound_ms`, or `PACE_FACTOR` times the query's
pace where that is longer, up to `max_bound_ms`. The pace is the longest time, over the last `SAMPLES_KEPT_S`,
between two moves of the older instant, measured here: about a batch time, since a mark comes per batch. A request
written at t is covered by the mark written once the batch that applied it has committed, so the older instant is up to
two batch times old just before a mark is read, and a fixed bound switched the fast path off for every group at once
as soon as batches passed half of it (issue 37). Only closed intervals count: a stopped query moves neither instant,
so its pace stays what it was and the bound passes; a query falling behind its requests moves them by less than the
time between its marks, so they age past the bound too. A follower that lags reads a fresh mark late, and its
instants are as old as its reading is: it is not fresh. Otherwise (no view of the group, no mark, a bound passed) the
gateway asks the coordinator. Why following the pace keeps the stale-commit window safe: docs/gateway.md.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from typing import Any, Callable

import msgspec
from kafka import KafkaConsumer, TopicPartition

from common.generations import split, topic_of
from state.api import (MARK_KEY, OPEN_TRANSACTIONS_KEY, OpenTransaction, PublishedView, decode_mark,
                       decode_open_transactions, decode_view)
from common.log_ends import high_watermarks

log = logging.getLogger(__name__)

SAMPLE_INTERVAL_S = 0.1
"""How often the log ends are noted (one small fetch each): freshness is known to this much."""
IDLE_INTERVAL_S = 0.3
"""How often once no request was written for `IDLE_AFTER_S`: an idle gateway used a tenth of a core sampling ten
times a second (issue 37). The query's marks come every second when idle, so views stay fresh within the 2 s bound;
a request written, a wake or a refresh brings back `SAMPLE_INTERVAL_S`."""
IDLE_AFTER_S = 2.0
SAMPLES_KEPT_S = 60.0
PACE_FACTOR = 2.5
"""The bound in paces: the older instant is at most two paces old before a mark is read while the query keeps its
pace (one batch to apply a request, one for the next mark), and a half for a batch slower than the recent ones."""


class ViewFollower:
    def __init__(self, bootstrap_servers: str, views_topic: str, requests_topic: str, kafka_config: dict[str, Any],
                 bound_ms: int, max_bound_ms: int | None = None) -> None:
        self.views_topic = views_topic
        self.requests_topic = requests_topic
        self.bound_s = bound_ms / 1000
        self.max_bound_s = max(bound_ms, max_bound_ms or bound_ms) / 1000
        """How far the bound may follow the query's pace (`max_bound_ms`; None: it is fixed at `bound_ms`)."""
        self._config = {"bootstrap_servers": bootstrap_servers, **kafka_config}
        self._views: dict[str, PublishedView] = {}
        self._open_transactions: dict[bytes, tuple[OpenTransaction, ...]] = {}
        """Each state bucket's open transactions, by its key (`state.api.open_transactions`)."""
        self._marks: dict[int, tuple[int, dict[int, int]]] = {}
        """views partition -> (offset, requests-topic positions) of the latest mark read there."""
        self._samples: deque[tuple[float, dict[int, int], dict[int, int]]] = deque()
        """(t, E, V) of recent samples, oldest first."""
        self._busy_as_of = float("-inf")
        """When a round last saw the requests topic's ends move, or was asked for (`_interval`)."""
        self.complete_as_of = float("-inf")
        self.alive_as_of = float("-inf")
        self._moves: deque[float] = deque()
        """When (this gateway's clock, the round's start) the older of the two instants last moved, oldest first."""
        self._pace = 0.0
        """The longest time between two moves over the last `SAMPLES_KEPT_S` (0: fewer than two moves), made once a
        round (the moves change only there), not on every `fresh`. The interval still open is not one: a stopped
        query must not lengthen its own bound."""
        self.read_as_of = float("-inf")
        """When the last round began: every view written before then has been read."""
        self._clients: tuple[KafkaConsumer, KafkaConsumer] | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._refreshes: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._rounds: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        """Waiting for the end of the next round (`round_ended`)."""
        self._refreshes_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="view-follower", daemon=True)
        self.on_generation: Callable[[str], None] | None = None
        """Called from the thread after a round that changed the newest generation of the requests topic the marks
        name (generation 0 after the first round when none is named): the gateway's writes move there."""
        self._generation = -1
        self._streams: dict[TopicPartition, int] = {}
        """Each requests-topic partition followed (of every generation the marks named) -> its stream partition."""
        self._sampled_all = False
        """Whether the last round's ends covered every stream partition the marks name."""

    def start(self) -> "ViewFollower":
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        elif self._clients is not None:  # stepped by its owner, never started
            for consumer in self._clients:
                consumer.close()

    # -- what the gateway asks ---------------------------------------------------------------------------------

    def fresh(self, now: float | None = None) -> bool:
        """Whether the views are complete and the coordinator alive as of at most `bound()` ago."""
        now = time.monotonic() if now is None else now
        return now - min(self.complete_as_of, self.alive_as_of) <= self.bound()

    def bound(self) -> float:
        """How old the instants may be (s): `bound_ms`, or `PACE_FACTOR` paces up to `max_bound_ms`."""
        return max(self.bound_s, min(self.max_bound_s, PACE_FACTOR * self._pace))

    def view(self, group_id: str) -> PublishedView | None:
        """The group's view, if the views are fresh and it has one (None: ask the coordinator)."""
        return self._views.get(group_id) if self.fresh() else None

    def open_transactions(self) -> list[OpenTransaction]:
        """The transactions with TxnOffsetCommits waiting for their marker, as the buckets last published them
        (`gateway.upstream.transactions.TimedOut` aborts those past their timeout)."""
        return [t for held in list(self._open_transactions.values()) for t in held]

    def refresh(self) -> asyncio.Future:
        """A round of the thread's begun after this call (it is woken for it): the future's result is the requests
        topic's log ends it noted (partition -> end), the views read up to the views topic's ends noted with them;
        None when the round failed."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        with self._refreshes_lock:
            self._refreshes.append((loop, done))
        self._wake.set()
        return done

    def wake(self) -> None:
        """Begin the next round now (the fast path waits for a round begun after a forwarded request's answer)."""
        self._wake.set()

    def covered(self) -> dict[int, int] | None:
        """Requests-topic partition -> the offset below which every request has been applied and its views read
        (the lowest of the latest mark of each views partition); None before every views partition has a mark.
        Read before a view, it is as old as that view or older: a mark comes after the views it covers."""
        marks = list(self._marks.values())
        if len(marks) < len(getattr(self, "_views_parts", ())) or not marks:
            return None
        covered = dict(marks[0][1])
        for _, positions in marks[1:]:
            covered = {p: min(o, positions.get(p, 0)) for p, o in covered.items()}
        return covered

    def older_covered(self, stream: int, covered: dict[int, int]) -> bool:
        """Whether, in the ends the last round noted, `covered` reaches the end of every older generation's
        partition of `stream`'s number: no request waits there that a claim in `stream` would not read. A writer
        that had not moved to the newer generation may write there after the round (`common.generations`)."""
        generation, partition = split(stream)
        ends = self._samples[-1][1] if self._samples else {}
        return all(covered.get(s, 0) >= end for s, end in ends.items()
                   if split(s)[1] == partition and split(s)[0] < generation)

    def held_view(self, group_id: str) -> PublishedView | None:
        """The group's view as read, fresh or not (a share group's grants, `gateway.share.fetch`)."""
        return self._views.get(group_id)

    def round_ended(self) -> asyncio.Future:
        """A future done when the next round ends (`read_as_of` has moved), without waking the thread for it."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        with self._refreshes_lock:
            self._rounds = [(waiting, future) for waiting, future in self._rounds if not future.done()]
            self._rounds.append((loop, done))
        return done

    # -- the thread --------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            woken = self._wake.is_set()
            self._wake.clear()
            with self._refreshes_lock:
                waiting, self._refreshes = self._refreshes, []
            ends = None
            try:
                following = self.step()
                if following and self._sampled_all:
                    ends = self._samples[-1][1]
            except Exception as exc:  # noqa: BLE001 - the views go stale, the gateway asks the coordinator
                log.warning("following %s: %s", self.views_topic, exc)
                following = False
            for loop, done in waiting:
                loop.call_soon_threadsafe(_resolve, done, ends)
            pause = self._interval(started, asked=woken or bool(waiting)) - (time.monotonic() - started) if following else 1.0
            self._wake.wait(max(pause, 0.0))
        for consumer in self._clients or ():
            consumer.close()

    def _interval(self, now: float, asked: bool) -> float:
        """The pause between rounds: `SAMPLE_INTERVAL_S` while requests are written or rounds asked for,
        `IDLE_INTERVAL_S` after `IDLE_AFTER_S` without."""
        samples = self._samples
        if asked or (len(samples) >= 2 and samples[-1][1] != samples[-2][1]):
            self._busy_as_of = now
        return SAMPLE_INTERVAL_S if now - self._busy_as_of < IDLE_AFTER_S else IDLE_INTERVAL_S

    def step(self) -> bool:
        """One round of the thread's: note the log ends now, read the views up to them, move the two instants.
        False: the topics are not there yet."""
        if self._clients is None:
            self._clients = self._consumers()
            if self._clients is None:
                return False
        self.follow(*self._clients, time.monotonic())
        return True

    def _consumers(self) -> tuple[KafkaConsumer, KafkaConsumer] | None:
        settings = {"enable_auto_commit": False, "group_id": None, "auto_offset_reset": "earliest", **self._config}
        views = KafkaConsumer(client_id="groupcoord-gateway-views", fetch_max_wait_ms=10, **settings)
        partitions = views.partitions_for_topic(self.views_topic)
        requests = views.partitions_for_topic(self.requests_topic)
        if not partitions or not requests:
            log.info("waiting for topics %s and %s", self.views_topic, self.requests_topic)
            views.close()
            return None
        self._views_parts = [TopicPartition(self.views_topic, p) for p in sorted(partitions)]
        self._streams = {TopicPartition(self.requests_topic, p): p for p in sorted(requests)}
        views.assign(self._views_parts)
        views.seek_to_beginning(*self._views_parts)
        marks = KafkaConsumer(client_id="groupcoord-gateway-ends", fetch_max_wait_ms=1,
                              max_partition_fetch_bytes=1024, **settings)
        self._ends = {tp: 0 for tp in [*self._views_parts, *self._streams]}
        return views, marks

    def follow(self, views: KafkaConsumer, marks: KafkaConsumer, now: float) -> None:
        self._ends = high_watermarks(marks, self._ends)
        ends = {self._streams[tp]: end for tp, end in self._ends.items() if tp in self._streams}
        view_ends = {tp.partition: end for tp, end in self._ends.items() if tp.topic == self.views_topic}
        self._samples.append((now, ends, view_ends))
        while self._samples and self._samples[0][0] < now - SAMPLES_KEPT_S:
            self._samples.popleft()
        self._read(views, view_ends)
        self._follow_generations(ends)
        before = min(self.complete_as_of, self.alive_as_of)
        self._advance()
        if min(self.complete_as_of, self.alive_as_of) > before:
            self._moves.append(now)
        while self._moves and self._moves[0] < now - SAMPLES_KEPT_S:
            self._moves.popleft()
        moves = self._moves
        self._pace = max((b - a for a, b in zip(moves, itertools.islice(moves, 1, None))), default=0.0)
        self.end_round(now)

    def _follow_generations(self, ends: dict[int, int]) -> None:
        """Follow the partitions of every generation the marks name from the next round on, stop following those of
        a generation g > 0 they no longer name (the query retired it and deletes its topic: a log-end read there
        would wait for a topic that is gone), and tell the gateway of a newer generation (`on_generation`)."""
        named = {s for _, positions in self._marks.values() for s in positions}
        for tp, stream in list(self._streams.items()):
            if split(stream)[0] and stream not in named:
                del self._streams[tp]
                self._ends.pop(tp, None)
        for stream in named - set(ends):
            generation, partition = split(stream)
            tp = TopicPartition(topic_of(self.requests_topic, generation), partition)
            self._streams[tp] = stream
            self._ends.setdefault(tp, 0)
        self._sampled_all = named <= set(ends)
        newest = max((split(s)[0] for s in named), default=0)
        if newest != self._generation:
            self._generation = newest
            if self.on_generation is not None:
                self.on_generation(topic_of(self.requests_topic, newest))

    def end_round(self, began: float) -> None:
        """A round that began at `began` has read every view written before then: `read_as_of`, and the futures
        of `round_ended`."""
        self.read_as_of = began
        with self._refreshes_lock:
            ended, self._rounds = self._rounds, []
        for loop, done in ended:
            loop.call_soon_threadsafe(_resolve, done, None)

    def _read(self, views: KafkaConsumer, ends: dict[int, int]) -> None:
        while any(views.position(tp) < ends[tp.partition] for tp in self._views_parts):
            for tp, records in views.poll(timeout_ms=100, max_records=10_000).items():
                for record in records:
                    self._apply(tp.partition, record.offset, record.key, record.value)
            if self._stop.is_set():
                return

    def _apply(self, partition: int, offset: int, key: bytes | None, value: bytes | None) -> None:
        try:
            if key == MARK_KEY:
                mark = decode_mark(value or b"")
                if mark.requests_topic == self.requests_topic:  # another query's marks (a shared topic) do not count
                    self._marks[partition] = (offset, {int(p): o for p, o in mark.positions.items()})
            elif key is not None and key.startswith(OPEN_TRANSACTIONS_KEY):
                if value is None:
                    self._open_transactions.pop(key, None)
                else:
                    self._open_transactions[key] = decode_open_transactions(value)
            elif key is not None:
                group_id = key.decode("utf-8")
                if value is None:
                    self._views.pop(group_id, None)
                else:
                    self._views[group_id] = decode_view(value)
        except (msgspec.DecodeError, UnicodeDecodeError, ValueError):
            return  # not ours: the views topic holds views and marks only

    def _advance(self) -> None:
        if len(self._marks) < len(self._views_parts):
            return
        covered: dict[int, int] | None = None
        for _, positions in self._marks.values():
            covered = positions if covered is None else {p: min(o, positions.get(p, 0)) for p, o in covered.items()}
        for t, ends, view_ends in reversed(self._samples):
            if covered.keys() <= ends.keys() and all(covered.get(p, 0) >= end  # type: ignore[union-attr]
                                                     for p, end in ends.items()):
                self.complete_as_of = max(self.complete_as_of, t)
                break
        for t, ends, view_ends in reversed(self._samples):
            if any(offset >= view_ends.get(p, 0) for p, (offset, _) in self._marks.items()):
                self.alive_as_of = max(self.alive_as_of, t)
                break


def _resolve(done: asyncio.Future, ends: dict[int, int] | None) -> None:
    if not done.done():
        done.set_result(ends)
