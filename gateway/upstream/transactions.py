"""TxnOffsetCommit through the gateway: the group's control-topic partition joins the producer's transaction first.

Kafka's group coordinator writes a TxnOffsetCommit's offsets into `__consumer_offsets` inside the producer's
transaction, and the transaction coordinator's marker there decides them. Here the coordinator is the query, and
the control topic its log: before the gateway writes the TxnOffsetCommit to the group's control-topic partition, it
adds that partition to the client's transaction (AddPartitionsToTxn v3, with the client's transactional id,
producer id and epoch, as the client's own producer would), so the upstream's transaction coordinator writes its
COMMIT or ABORT marker into that partition after the request, in order with the group's other requests; the query
reads the marker (`common.markers`) and commits or drops the pending offsets (`state.offsets.transactions`).

A stale epoch (a zombie producer), a producer id the upstream never issued, or a transaction not begun is refused by
the upstream here, and the TxnOffsetCommit gets that error on every partition without reaching the control topic.

On a cluster of several brokers the AddPartitionsToTxn goes to the transactional id's transaction coordinator and the
write to the partition's leader, each looked up as Kafka's clients look them up (`gateway.upstream.routes`).
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from kafka.protocol.producer.transaction import (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
                                                 InitProducerIdRequest, InitProducerIdResponse)

from common.generations import generation_of, stream_partition
from gateway.upstream import log_reads
from gateway.protocol.produce import produce_answers, produce_request, record_batch
from gateway.upstream.appender import CLIENT_ID, INIT_PRODUCER_ID_VERSION, MAX_RECORD_BYTES, key_partition
from gateway.upstream.broker import Upstream
from gateway.upstream.routes import LEADER_RULE, NodeConnections, Routes, retried
from state.api import Errors, OpenTransaction, append_error

log = logging.getLogger(__name__)

SEQUENCE_WINDOW = 1_000
"""The first window of offsets read back from the log end for a producer's last sequence (then four times more)."""
_SEQUENCE_ERRORS = frozenset({45, 46})
"""OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER (tansu answers this for a sequence it has seen)."""
_BATCH_PRODUCER = struct.Struct(">qhi")
"""A v2 batch header's producer id, epoch and base sequence, at byte 43."""
ADD_PARTITIONS_VERSION = 3


class NotWritten(Exception):
    """The upstream refused the transactional write (`code`: its error, e.g. PRODUCER_FENCED)."""

    def __init__(self, code: int) -> None:
        super().__init__(f"the upstream answered error {code}")
        self.answer_code = code


@dataclass(frozen=True, slots=True)
class Written:
    """Where a transactional write landed: the control-topic partition, its offset, and the timestamp it carries
    (this gateway's clock, ms), which the query counts it at."""

    partition: int
    """The stream partition (`common.generations`): generation * STRIDE + the partition's number."""
    offset: int
    timestamp_ms: int


class ControlPartitions:
    """Adds a group's control-topic partition to a producer's transaction and writes the TxnOffsetCommit there, on
    connections of the caller's own (a client's forwarded connection carries the client's correlation ids): the
    AddPartitionsToTxn to the transactional id's transaction coordinator, the write to the partition's leader
    (`gateway.upstream.routes`)."""

    def __init__(self, requests_topic: str, routes: Routes, topic_now: Callable[[], str] | None = None) -> None:
        """`topic_now`: the generation of the requests topic the gateway writes to now (`common.generations`;
        None: `requests_topic` always)."""
        self.requests_topic = requests_topic
        self.routes = routes
        self._topic_now = topic_now or (lambda: requests_topic)
        self._sequences: dict[tuple[int, int, int], int] = {}
        """(producer id, epoch, stream partition) -> the next sequence number of the gateway's writes for it."""
        self._added: dict[tuple[int, int, int], str] = {}
        """(producer id, epoch, partition) -> the generation its last AddPartitionsToTxn added the partition of, which
        the write after it goes to."""

    async def write(self, connections: NodeConnections, doc: dict[str, Any], key: bytes, value: bytes,
                    budget_s: float) -> Written:
        """Write the control request `value` to the group's partition inside the producer's transaction: a
        transactional batch with its producer id and epoch (tansu, as Kafka, writes a transaction's markers to the
        partitions the producer wrote to), to the partition's leader. NotWritten when the upstream refuses it."""
        if len(key) + len(value) > MAX_RECORD_BYTES:
            raise NotWritten(append_error("TxnOffsetCommit", Errors.MESSAGE_TOO_LARGE))
        partition = await self.partition_of(doc["group_id"])
        topic = self._added.get((doc["producer_id"], doc["producer_epoch"], partition)) or self._topic_now()
        stream = stream_partition(generation_of(self.requests_topic, topic) or 0, partition)
        producer = (doc["producer_id"], doc["producer_epoch"], stream)
        stamp = int(time.time() * 1000)
        sequence = self._sequences.get(producer, 0)
        node: int | None = None
        offset = -1

        async def attempt() -> int:
            nonlocal node, sequence, offset
            node = await self.routes.leader(topic, partition)
            upstream = await connections.connection(node)
            code, offset = await self._produce(upstream, doc, topic, partition, sequence, stamp, key, value)
            if code in _SEQUENCE_ERRORS and producer not in self._sequences:
                # This gateway has not written for this producer and epoch, but the log has (a gateway killed and
                # started again): its writes go on from the last sequence the log holds.
                last = await self.last_sequence(upstream, topic, partition, doc["producer_id"], doc["producer_epoch"])
                if last is not None:
                    sequence = last + 1
                    code, offset = await self._produce(upstream, doc, topic, partition, sequence, stamp, key, value)
            return code

        def look_up_again() -> None:
            self.routes.forget_leaders(topic)
            if node is not None:
                connections.drop(node)

        code = await retried(LEADER_RULE, attempt, look_up_again, budget_s)
        if code:
            raise NotWritten(code)
        self._sequences[producer] = sequence + 1
        return Written(stream, offset, stamp)

    async def _produce(self, upstream: Upstream, doc: dict[str, Any], topic: str, partition: int, sequence: int,
                       stamp: int, key: bytes, value: bytes) -> tuple[int, int]:
        batch = record_batch([(key, value)], doc["producer_id"], doc["producer_epoch"], sequence, stamp,
                             transactional=True)
        payload = await upstream.request_frame(lambda correlation: produce_request(
            correlation, CLIENT_ID, doc["transactional_id"], -1, 30_000, topic, [(partition, batch)]))
        try:
            ((code, offset),) = [(a.error_code, a.base_offset) for a in produce_answers(payload)]
        except ValueError as exc:  # a malformed answer, or not one partition's: the write's fate is unknown
            raise ConnectionError(f"upstream {upstream.address}: {exc}") from None
        return code, offset

    async def last_sequence(self, upstream: Upstream, topic: str, partition: int, producer_id: int,
                            epoch: int) -> int | None:
        """The last sequence number the partition's log holds of the producer at `epoch` (None: none found), read
        backwards from the log end in growing windows: the batches' headers name their producer, epoch, first
        sequence and last offset delta (Kafka's log format v2)."""
        start, end = await self._log_range(upstream, topic, partition)
        window = SEQUENCE_WINDOW
        high = end
        while high > start:
            low = max(start, high - window)
            last = None
            position = low
            while position < high:
                batches = await self._fetch(upstream, topic, partition, position)
                if not batches:
                    break
                for batch in batches:
                    if batch.base >= high:
                        break
                    header = _BATCH_PRODUCER.unpack_from(batch.data, 43) if len(batch.data) >= 61 else None
                    if header is not None and header[0] == producer_id and header[1] == epoch and header[2] >= 0:
                        last = header[2] + (batch.last - batch.base)
                position = batches[-1].last + 1
            if last is not None:
                return last
            high = low
            window *= 4
        return None

    async def _log_range(self, upstream: Upstream, topic: str, partition: int) -> tuple[int, int]:
        found = []
        for timestamp in (log_reads.EARLIEST, log_reads.LATEST):
            error, offset = await log_reads.list_offset(upstream, topic, partition, timestamp)
            if error:
                raise ConnectionError(f"ListOffsets of {topic}-{partition}: error {error}")
            found.append(offset)
        return found[0], found[1]

    async def _fetch(self, upstream: Upstream, topic: str, partition: int, offset: int) -> list[log_reads.LogBatch]:
        read = await log_reads.fetch(upstream, topic, partition, offset, 1 << 20)
        if read.error:
            raise ConnectionError(f"Fetch of {topic}-{partition}: error {read.error}")
        return read.batches

    async def add(self, connections: NodeConnections, doc: dict[str, Any], budget_s: float) -> int:
        """The upstream's error for adding the group's partition to the transaction the TxnOffsetCommit `doc`
        names (0: added), from the transactional id's transaction coordinator (`Routes.to_coordinator`: looked up
        again and sent again where Kafka's Java client would, within `budget_s`)."""
        partition = await self.partition_of(doc["group_id"])
        topic = self._added[(doc["producer_id"], doc["producer_epoch"], partition)] = self._topic_now()
        request = AddPartitionsToTxnRequest[ADD_PARTITIONS_VERSION](
            v3_and_below_transactional_id=doc["transactional_id"], v3_and_below_producer_id=doc["producer_id"],
            v3_and_below_producer_epoch=doc["producer_epoch"],
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(
                name=topic, partitions=[partition])])

        async def send(upstream: Upstream) -> int:
            answer = await upstream.request(request, ADD_PARTITIONS_VERSION, AddPartitionsToTxnResponse)
            codes = [p.partition_error_code for t in answer.results_by_topic_v3_and_below
                     for p in t.results_by_partition]
            return next((code for code in codes if code), 0)

        return await self.routes.to_coordinator(connections, doc["transactional_id"], send, budget_s)

    async def partition_of(self, group_id: str) -> int:
        """The control-topic partition of the group's requests, where the appender puts them (`key_partition`)."""
        return key_partition(group_id.encode("utf-8"), len(await self.routes.partitions(self.requests_topic)))


def refused(doc: dict[str, Any], code: int) -> dict[str, Any]:
    """The TxnOffsetCommit answer of a request whose partition could not join the transaction: the error on every
    partition, as Kafka's coordinator answers a failed write."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [{"partition_index": p["partition_index"], "error_code": code}
                                           for p in t["partitions"]]} for t in doc.get("topics") or []]}


TIMEOUT_MARGIN_MS = 5_000
"""How long past its deadline (its first TxnOffsetCommit's timestamp plus its timeout) a transaction may stay open
before a gateway has the upstream abort it: Kafka's transaction coordinator aborts it at the timeout itself (counted
from the transaction's start, before that TxnOffsetCommit), and its ABORT marker then comes first."""
FENCE_AGAIN_S = 30.0
"""How long a gateway waits before it fences a transaction it fenced already again (the marker not yet applied)."""
FENCE_BUDGET_S = 30.0
"""How long one abort at the timeout may take, lookups and retries included."""


class TimedOut:
    """Transactions open past their timeout, aborted at the upstream as Kafka's transaction coordinator aborts them.

    tansu never times a transaction out (docs/gateway.md, "Transactions"): the offsets of one that nobody ends (its
    application gone, or a gateway killed between its TxnOffsetCommit and its EndTxn) would stay pending for ever,
    and a require_stable OffsetFetch would answer UNSTABLE_OFFSET_COMMIT for ever. The query publishes every state
    bucket's open transactions with their deadlines on the views topic (`state.api.open_transactions`); a gateway
    that finds one still open `TIMEOUT_MARGIN_MS` past its deadline sends the upstream an InitProducerId for its
    transactional id, as a new producer of that id would: the upstream aborts the open transaction (its ABORT
    marker drops the pending offsets, and the output with them) and bumps the producer's epoch, so the old
    producer, if it is still there, is fenced (PRODUCER_FENCED) instead of going on with a transaction that is no
    longer open, as after Kafka's own timeout. The offsets are never committed: the upstream's marker decides, as
    for every transaction."""

    def __init__(self, open_transactions: Callable[[], Iterable[OpenTransaction]], routes: Routes,
                 connections: NodeConnections) -> None:
        """`connections`: this process's own, to the transaction coordinators (`gateway.upstream.routes`)."""
        self._open = open_transactions
        self._routes = routes
        self._connections = connections
        self._fenced: dict[tuple[str, int, int], float] = {}
        """(transactional id, producer id, epoch) -> when this gateway last fenced it (monotonic)."""
        self.aborted = 0
        """Transactions this gateway had the upstream abort at their timeout."""

    def overdue(self, now_ms: int, now: float) -> list[OpenTransaction]:
        """The open transactions past their deadline by `TIMEOUT_MARGIN_MS` at `now_ms` (wall clock) that this gateway
        did not fence in the last `FENCE_AGAIN_S` (`now`: monotonic)."""
        found = []
        for txn in self._open():
            key = (txn.transactional_id, txn.producer_id, txn.producer_epoch)
            if now_ms >= txn.deadline_ms + TIMEOUT_MARGIN_MS and now - self._fenced.get(key, -FENCE_AGAIN_S) >= FENCE_AGAIN_S:
                found.append(txn)
        return found

    async def check(self) -> int:
        """Fence every overdue transaction; how many were."""
        now = time.monotonic()
        fenced = 0
        for txn in self.overdue(int(time.time() * 1000), now):
            self._fenced[(txn.transactional_id, txn.producer_id, txn.producer_epoch)] = now
            try:
                code = await self.fence(txn)
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                log.info("aborting transaction %r past its timeout: %s", txn.transactional_id,
                         exc or type(exc).__name__)
                continue
            if code:
                log.warning("transaction %r (producer %d, epoch %d) open past its timeout: the upstream answered "
                            "error %d to its InitProducerId", txn.transactional_id, txn.producer_id,
                            txn.producer_epoch, code)
                continue
            fenced += 1
            self.aborted += 1
            log.warning("transaction %r (producer %d, epoch %d) was open %d ms past its timeout: aborted at the upstream "
                        "(InitProducerId: its producer fenced), its pending offsets dropped by the ABORT marker",
                        txn.transactional_id, txn.producer_id, txn.producer_epoch,
                        int(time.time() * 1000) - txn.deadline_ms)
        if len(self._fenced) > 10_000:
            self._fenced = {k: t for k, t in self._fenced.items() if now - t < FENCE_AGAIN_S}
        return fenced

    async def fence(self, txn: OpenTransaction) -> int:
        """InitProducerId for the transaction's id (the upstream aborts its open transaction and bumps the epoch),
        sent to its transaction coordinator: the upstream's error (0: done)."""
        request = InitProducerIdRequest[INIT_PRODUCER_ID_VERSION](
            transactional_id=txn.transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1)

        async def send(upstream: Upstream) -> int:
            answer = await upstream.request(request, INIT_PRODUCER_ID_VERSION, InitProducerIdResponse)
            return answer.error_code

        return await self._routes.to_coordinator(self._connections, txn.transactional_id, send, FENCE_BUDGET_S)

    async def run(self, interval_s: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.check()
            except Exception:  # noqa: BLE001 - never stops the gateway; tried again next round
                log.exception("aborting transactions past their timeout")

    def close(self) -> None:
        self._connections.close()
