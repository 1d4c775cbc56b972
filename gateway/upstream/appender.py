"""The gateway's writes to the requests topic: Produce requests it writes itself, on its event loop.

One appender for every control request of this gateway (the ones it waits for the coordinator to answer, the
commits it answers itself, the Liveness requests), so a group's requests reach the topic in the order the gateway
wrote them: they share a partition (the key is the group id, `key_partition`: murmur2 as Kafka's Java partitioner
and librdkafka's `murmur2_random`) and the appender is an idempotent producer, as librdkafka's and Kafka's are with
`enable.idempotence` (a producer id from InitProducerId, a sequence number per partition), so a batch sent again
after a connection broke under it is not written twice. A commit answered here waits for its append (acks=all).

Why not a client library's producer: librdkafka (the gateway's producer until issue 36's design 2) needs a thread of
its own per broker and a thread that polls its delivery reports, and each report reached the event loop through its
wake-up socket: about ten thread wake-ups a commit, and under load each one waited for a core (on the 2-core machine,
0.7-0.8 s of waiting a second for the gateway's threads against 0.37 core of running; docs/operations-streaming.md).
kafka-python's producer, a thread of its own too, took 1.1 ms a lone append against librdkafka's 0.17. Here a
record is written by the event loop that read the client's request, and its acknowledgement read by it.

One Produce request in flight to each broker: a record is written at once when none is in flight to its
partition's leader, with every record of each of that broker's partitions waiting (a batch each, up to
`BATCH_BYTES`); records appended meanwhile go in the next request, written as soon as the answer is read (librdkafka
with one request in flight did the same: several in flight made its broker thread spin, docs/gateway.md, "Many
committers"). Writing and reading are callbacks on the event loop, not tasks: a lone append costs one write and one
read of the loop. A batch not answered is sent again as it was (the same sequence numbers) after the Java client's
backoff, until its records' deadline (`timeout_ms`, librdkafka's `message.timeout.ms`); one whose fate is unknown
at its deadline fails, and the producer starts again with a new producer id so that no later batch is taken for its
duplicate. Lookups (the producer id, the topic's partitions and leaders) and connecting are the one task
(`_prepare`).

Where the query rotates the requests topic (`common.generations`), the gateway's view follower tells the appender of
each new generation (`move_to`): it holds new records until every record in flight to the older one is
acknowledged, then writes them and all later ones to the new one, so a group's requests keep the order the gateway
wrote them in (the query reads a newer generation's ends before an older one's). Until the follower has read the
views once (`follow_generations`), records wait for it: a restarted gateway must not write to generation 0 while
the query's marks name a newer one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from functools import partial

from kafka.partitioner.default import murmur2
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from gateway.protocol.produce import produce_answers, produce_request, record_batch
from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.upstream.routes import (RETRY_BACKOFF_MAX_S, RETRY_BACKOFF_S, LookupFailed, NodeConnections, Routes,
                                     bootstrap_addresses, node_addresses)
from state.api import Errors

log = logging.getLogger(__name__)

FIRST_GENERATION_WAIT_S = 10.0
"""How long records wait for the view follower's first generation (`follow_generations`) before they are written
to the topic the appender was made with: a query that writes no views names none."""
BATCH_BYTES = 1_000_000
"""The most record bytes one partition's batch in a request carries (librdkafka's `batch.size` default, which its
producer, the appender until issue 36's design 2, used)."""
MAX_RECORD_BYTES = BATCH_BYTES - 1_024
"""The largest record (key and value) the appender writes, as librdkafka's `message.max.bytes` (1,000,000) less a
batch's overhead; a larger one fails at once with MESSAGE_TOO_LARGE (`state.api.append_error` answers it with a
non-retriable error; tansu takes a larger record, and the query failed on the answer it could not write)."""
INIT_PRODUCER_ID_VERSION = 4
"""InitProducerId v4 (KIP-360's producer id and epoch fields): what tansu and every Kafka since 2.5 take."""
EXPIRY_CHECK_S = 0.1
"""How often records are looked at for their deadline as requests are written (each look walks every partition)."""
CLIENT_ID = "groupcoord-gateway"
"""The client id of the gateway's own requests, in the brokers' logs and quotas."""

_WRITTEN = frozenset({Errors.NONE, Errors.DUPLICATE_SEQUENCE_NUMBER})
"""A batch the partition has (DUPLICATE_SEQUENCE_NUMBER: sent again after its answer was lost, tansu's answer for a
sequence it has)."""
_LEADER = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION})
"""Look the leaders up again, then send the batch again (the Java producer's retriable errors of a partition)."""
_AGAIN = _LEADER | {Errors.REQUEST_TIMED_OUT, Errors.NOT_ENOUGH_REPLICAS, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                    Errors.NETWORK_EXCEPTION, Errors.KAFKA_STORAGE_ERROR}
"""Send the batch again as it was (the Java producer's other retriable errors of a partition)."""
_NEW_PRODUCER = frozenset({Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.UNKNOWN_PRODUCER_ID,
                           Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED})
"""The broker does not know the producer's sequence (its state expired, or it lost it): start again with a new
producer id, the batches rebuilt (librdkafka's idempotent producer does the same, bumping its epoch)."""


def key_partition(key: bytes, partitions: int) -> int:
    """The partition of a record keyed `key` among `partitions`: murmur2, as Kafka's Java partitioner,
    librdkafka's `murmur2_random` and kafka-python's place it (the query and the gateway's transactional writes find
    a group's partition this way)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class AppendFailed(Exception):
    """The requests topic did not take a record (the broker refused it, or it could not be sent in time).
    `code`: Kafka's error code for why, or None (not known: a timeout, no broker)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class _Record:
    __slots__ = ("key", "value", "done", "deadline")

    def __init__(self, key: bytes, value: bytes, done: asyncio.Future, deadline: float) -> None:
        self.key, self.value, self.done, self.deadline = key, value, done, deadline


class _Partition:
    """A partition's records: those waiting for a round, and the batch sent and not yet answered."""

    __slots__ = ("waiting", "sent", "batch", "sequence", "producer", "flying")

    def __init__(self) -> None:
        self.waiting: deque[_Record] = deque()
        self.sent: list[_Record] = []
        """The records of the batch in flight (or to be sent again), in order."""
        self.batch: bytes | None = None
        """`sent` encoded with the producer id and sequence it was sent with: sent again as it is (None: to build)."""
        self.sequence = 0
        """The base sequence of the next batch (`producer`'s records this partition has)."""
        self.producer: tuple[int, int] | None = None
        """The producer `sequence` and `batch` are of: a batch built for a new one starts again at 0."""
        self.flying = False
        """`batch` is in a request not answered yet."""


class Appender:
    def __init__(self, bootstrap_servers: str, topic: str, security: UpstreamSecurity,
                 loop: asyncio.AbstractEventLoop, timeout_ms: int = 10_000, connect_timeout_s: float = 10.0) -> None:
        """`security`: how the gateway reaches the brokers (`gateway.front.cli.upstream_security`). Nothing connects
        before the first append."""
        self.topic = topic
        """Where records are written now."""
        self._loop = loop
        self._timeout_s = timeout_ms / 1000
        self._bootstrap = bootstrap_addresses(bootstrap_servers)
        self._brokers: dict[int, tuple[str, int]] = {}
        self._connections = NodeConnections(self._addresses, security, connect_timeout_s)
        self._routes = Routes(self._connections, self._learn)
        self._moving_to: str | None = None
        """A generation to write to once the records in flight are acknowledged (`move_to`)."""
        self._first: asyncio.TimerHandle | None = None
        """While records wait for the follower's first generation (`follow_generations`)."""
        self._held: list[tuple[bytes, bytes, asyncio.Future]] = []
        """Records waiting for the move, in the order they were appended."""
        self._in_flight = 0
        """Records appended to `topic` and not settled."""
        self._unrouted: deque[_Record] = deque()
        """Records appended before `topic`'s partition count was known, in order."""
        self._count = 0
        """`topic`'s partition count (0: not known yet)."""
        self._partitions: dict[int, _Partition] = {}
        self._producer: tuple[int, int] | None = None
        """(producer id, epoch) from InitProducerId (None: to ask for)."""
        self._leaders: dict[int, int] = {}
        """`topic`'s partition -> the node of its leader, as last looked up ({}: to look up)."""
        self._upstreams: dict[int, Upstream] = {}
        """Node -> the connection the appender writes to it on."""
        self._requests: dict[int, asyncio.Future] = {}
        """Node -> the answer of the Produce request in flight to it."""
        self._preparing: asyncio.Task | None = None
        """`_prepare` while it runs."""
        self._retry: asyncio.TimerHandle | None = None
        """The next write after a failed one, while its backoff runs."""
        self._backoff = RETRY_BACKOFF_S
        self._expire_at = 0.0
        """When records are next looked at for their deadline (`_expire`)."""
        self._closed = False

    # -- what the gateway calls, on the event loop's thread ------------------------------------------------------

    def append(self, key: str, value: bytes) -> asyncio.Future:
        """Send one record keyed by `key` (a group id); the future completes when the topic has it (acks=all),
        or fails with AppendFailed."""
        done = self._loop.create_future()
        done.add_done_callback(_retrieved)
        encoded = key.encode("utf-8")
        if len(encoded) + len(value) > MAX_RECORD_BYTES:
            done.set_exception(AppendFailed(f"a record of {len(encoded) + len(value)} bytes is over the "
                                            f"{MAX_RECORD_BYTES} the appender writes", Errors.MESSAGE_TOO_LARGE))
        elif self._closed:
            done.set_exception(AppendFailed("the appender is closed"))
        elif self._moving_to is not None:
            self._held.append((encoded, value, done))
        else:
            self._add(encoded, value, done)
        return done

    def follow_generations(self) -> None:
        """Hold records until the first `move_to` (the view follower's first round), or `FIRST_GENERATION_WAIT_S`."""
        self._moving_to = self.topic
        self._first = self._loop.call_later(FIRST_GENERATION_WAIT_S, self._first_wait_over)

    def move_to(self, topic: str) -> None:
        """Write to `topic` from now on, once the records in flight are acknowledged (see the module's docstring)."""
        if self._first is not None:
            self._first.cancel()
            self._first = None
        if topic == self.topic and self._moving_to is None:
            return
        self._moving_to = topic
        self._move_when_settled()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop. From another thread than the event loop's (the gateway's shutdown), records in flight get up to
        `timeout_s` to be acknowledged first; what is not fails with AppendFailed."""
        if self._in_loop_thread() or not self._loop.is_running():
            self._stop()
            return
        try:
            asyncio.run_coroutine_threadsafe(self._drain_and_stop(timeout_s), self._loop).result(timeout_s + 1.0)
        except Exception as exc:  # noqa: BLE001 - the loop went away meanwhile: nothing waits for the records
            log.info("closing the appender: %s", exc or type(exc).__name__)

    # -- records ------------------------------------------------------------------------------------------------

    def _add(self, key: bytes, value: bytes, done: asyncio.Future) -> None:
        record = _Record(key, value, done, time.monotonic() + self._timeout_s)
        self._in_flight += 1
        if self._count:
            self._partition(key_partition(key, self._count)).waiting.append(record)
        else:
            self._unrouted.append(record)
        self._kick()

    def _partition(self, number: int) -> _Partition:
        part = self._partitions.get(number)
        if part is None:
            part = self._partitions[number] = _Partition()
        return part

    def _settle(self, records: list[_Record], failure: AppendFailed | None) -> None:
        self._in_flight -= len(records)
        for record in records:
            if not record.done.done():
                if failure is None:
                    record.done.set_result(None)
                else:
                    record.done.set_exception(failure)
        self._move_when_settled()

    def _first_wait_over(self) -> None:
        log.warning("no generation of the requests topic read from the views within %.0f s: writing to %s",
                    FIRST_GENERATION_WAIT_S, self.topic)
        self.move_to(self.topic)

    def _move_when_settled(self) -> None:
        if self._moving_to is None or self._in_flight:
            return
        if self._moving_to != self.topic:
            log.info("writing requests to %s (was %s)", self._moving_to, self.topic)
            self._partitions = {}
            self._count = 0
        self.topic, self._moving_to = self._moving_to, None
        held, self._held = self._held, []
        for key, value, done in held:
            self._add(key, value, done)

    # -- writing ------------------------------------------------------------------------------------------------

    def _kick(self) -> None:
        """Write what waits, now (`_flush`), unless a retry's backoff runs or `_prepare` has work to do first."""
        if self._preparing is None and self._retry is None and not self._closed:
            self._flush()

    def _flush(self) -> None:
        """A Produce request to each leader of partitions with records, where none is in flight to it; what needs
        a producer id, a lookup or a connection first goes to `_prepare`, which calls this again."""
        now = time.monotonic()
        if now >= self._expire_at:
            self._expire_at = now + EXPIRY_CHECK_S
            self._expire(now)
        if self._producer is None or not self._count:
            return self._start_prepare()
        by_node: dict[int, list[int]] = {}
        for number, part in self._partitions.items():
            if part.flying or not (part.waiting or part.sent):
                continue
            node = self._leaders.get(number, -1)
            if node < 0:
                return self._start_prepare()
            by_node.setdefault(node, []).append(number)
        for node, numbers in by_node.items():
            if node in self._requests:
                continue  # one request in flight per broker: these go in the next
            upstream = self._upstreams.get(node)
            if upstream is None or upstream.closed:
                return self._start_prepare()
            self._write(node, upstream, numbers)

    def _write(self, node: int, upstream: Upstream, numbers: list[int]) -> None:
        producer_id, epoch = self._producer
        batches = []
        for number in numbers:
            part = self._partitions[number]
            if part.producer != self._producer:
                part.producer, part.sequence, part.batch = self._producer, 0, None
            if part.batch is None:
                part.sent.extend(_take(part.waiting))
                part.batch = record_batch([(r.key, r.value) for r in part.sent], producer_id, epoch, part.sequence,
                                          int(time.time() * 1000))
            part.flying = True
            batches.append((number, part.batch))
        topic = self.topic
        try:
            answered = upstream.request_frame(lambda correlation: produce_request(
                correlation, CLIENT_ID, None, -1, int(self._timeout_s * 1000), topic, batches))
        except ConnectionError:  # closed since `_flush` looked: connected again first
            for number in numbers:
                self._partitions[number].flying = False
            self._upstreams.pop(node, None)
            return self._start_prepare()
        # past its first record's deadline the request's connection is given up (the request then fails as broken)
        wait_s = max(min(self._partitions[n].sent[0].deadline for n in numbers) - time.monotonic(), 0.05)
        give_up = self._loop.call_later(wait_s, upstream.close)
        self._requests[node] = answered
        answered.add_done_callback(partial(self._on_answer, node, topic, numbers, give_up))

    def _on_answer(self, node: int, topic: str, numbers: list[int], give_up: asyncio.TimerHandle,
                   answered: asyncio.Future) -> None:
        give_up.cancel()
        self._requests.pop(node, None)
        if self._closed or topic != self.topic:
            return
        for number in numbers:
            self._partitions[number].flying = False
        try:
            if answered.cancelled():
                raise ConnectionError("the request was cancelled")
            answers = produce_answers(answered.result())
        except (ConnectionError, OSError, ValueError) as exc:  # its batches' fate is unknown: sent again as they are
            log.info("writing to %s through node %d: %s", topic, node, exc or type(exc).__name__)
            self._connections.drop(node)
            self._upstreams.pop(node, None)
            return self._again()
        settled = again = False
        for answer in answers:
            part = self._partitions.get(answer.partition)
            if answer.topic == topic and part is not None and part.sent:
                if self._answered(part, answer.error_code):
                    settled = True
                else:
                    again = True
        if settled:
            self._backoff = RETRY_BACKOFF_S
        if again:
            return self._again()
        self._kick()

    def _answered(self, part: _Partition, code: int) -> bool:
        """Settle the partition's batch by its answer's `code`; False where it is to be sent again."""
        if code in _WRITTEN:
            part.sequence += len(part.sent)
        elif code in _AGAIN:
            if code in _LEADER:
                self._routes.forget_leaders(self.topic)
                self._leaders = {}
            return False
        elif code in _NEW_PRODUCER:
            log.info("the broker answered error %d to the appender's producer %s: starting again with a new one",
                     code, self._producer)
            self._producer = None  # each partition's batch is built again for the next one (`_write`)
            return False
        records, part.sent, part.batch = part.sent, [], None
        self._settle(records, None if code in _WRITTEN else AppendFailed(f"the broker answered error {code}", code))
        return True

    def _again(self) -> None:
        """Write again after the Java client's backoff, doubled each time until a batch is settled."""
        if self._retry is None and not self._closed:
            self._retry = self._loop.call_later(self._backoff, self._retried)
            self._backoff = min(self._backoff * 2, RETRY_BACKOFF_MAX_S)

    def _retried(self) -> None:
        self._retry = None
        self._kick()

    def _start_prepare(self) -> None:
        if self._preparing is None and self._in_flight:
            self._preparing = self._loop.create_task(self._prepare())

    async def _prepare(self) -> None:
        """What writing needs first: a producer id, `topic`'s partitions and their leaders, a connection to each
        leader with records; looked up again after the Java client's backoff until it is all there or no record
        waits any more (`_expire`)."""
        backoff = RETRY_BACKOFF_S
        try:
            while self._in_flight and not self._closed:
                try:
                    if self._producer is None:
                        self._producer = await self._init_producer()
                    topic = self.topic
                    leaders = await self._routes.partitions(topic)
                    if topic != self.topic:
                        continue
                    self._leaders = dict(leaders)
                    if not self._count:
                        self._count = len(leaders)
                        while self._unrouted:
                            record = self._unrouted.popleft()
                            self._partition(key_partition(record.key, self._count)).waiting.append(record)
                    for number, part in list(self._partitions.items()):
                        if part.waiting or part.sent:
                            node = self._leaders.get(number, -1)
                            if node < 0:
                                raise LookupFailed(f"leader of {topic}-{number}", Errors.LEADER_NOT_AVAILABLE)
                            upstream = self._upstreams.get(node)
                            if upstream is None or upstream.closed:
                                self._upstreams[node] = await self._connections.connection(node)
                    return
                except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                    log.info("writing to %s: %s", self.topic, exc or type(exc).__name__)
                    self._routes.forget_leaders(self.topic)
                    self._leaders = {}
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_BACKOFF_MAX_S)
                self._expire(time.monotonic())
        finally:
            self._preparing = None
            self._kick()

    def _expire(self, now: float) -> None:
        """Fail the records past their deadline: waiting ones, and batches sent whose fate is unknown (then the
        producer starts again, so that none of its later batches can be taken for their duplicate)."""
        failure = AppendFailed(f"not acknowledged within {self._timeout_s:.1f} s")
        late = [r for r in self._unrouted if r.deadline <= now]
        if late:
            self._unrouted = deque(r for r in self._unrouted if r.deadline > now)
            self._settle(late, failure)
        for part in self._partitions.values():
            if part.sent and part.sent[0].deadline <= now:
                records, part.sent, part.batch = part.sent, [], None
                self._producer = None
                self._settle(records, failure)
            late = [r for r in part.waiting if r.deadline <= now]
            if late:
                part.waiting = deque(r for r in part.waiting if r.deadline > now)
                self._settle(late, failure)

    async def _init_producer(self) -> tuple[int, int]:
        upstream = await self._connections.connection(None)
        answer = await asyncio.wait_for(upstream.request(
            InitProducerIdRequest[INIT_PRODUCER_ID_VERSION](transactional_id=None, transaction_timeout_ms=60_000,
                                                            producer_id=-1, producer_epoch=-1),
            INIT_PRODUCER_ID_VERSION, InitProducerIdResponse), self._timeout_s)
        if answer.error_code:
            raise LookupFailed("the appender's producer id", answer.error_code)
        return answer.producer_id, answer.producer_epoch

    # -- brokers ------------------------------------------------------------------------------------------------

    def _addresses(self, node_id: int | None) -> list[tuple[str, int]]:
        return node_addresses(node_id, self._brokers, self._bootstrap)

    def _learn(self, brokers) -> None:
        for node_id, host, port in brokers:
            self._brokers[node_id] = (host, port)

    # -- stopping -----------------------------------------------------------------------------------------------

    def _in_loop_thread(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    async def _drain_and_stop(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self._in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self._stop()

    def _stop(self) -> None:
        self._closed = True
        if self._preparing is not None:
            self._preparing.cancel()
        if self._retry is not None:
            self._retry.cancel()
        if self._first is not None:
            self._first.cancel()
        failure = AppendFailed("the appender is closed")
        records = list(self._unrouted) + [r for p in self._partitions.values() for r in (*p.sent, *p.waiting)]
        self._unrouted.clear()
        self._partitions = {}
        held, self._held = self._held, []
        self._settle(records, failure)
        for _, _, done in held:
            if not done.done():
                done.set_exception(failure)
        self._routes.close()


def _take(waiting: deque[_Record]) -> list[_Record]:
    """The waiting records one batch carries, in order: all of them up to `BATCH_BYTES` (at least one)."""
    taken, size = [], 0
    while waiting and (not taken or size + len(waiting[0].key) + len(waiting[0].value) <= BATCH_BYTES):
        record = waiting.popleft()
        size += len(record.key) + len(record.value)
        taken.append(record)
    return taken


def _retrieved(done: asyncio.Future) -> None:
    """A write nobody waits for (a request whose answer came first) fails quietly; callers that wait see it."""
    if not done.cancelled():
        done.exception()
