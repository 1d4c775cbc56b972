"""The record bytes of share-partitions, read from the upstream brokers' logs.

A holder acquires offsets of the log batches it read (`state.api.acquire` takes each batch's base and last offset)
and answers with those batches' bytes as they are in the log: the client drops the records outside its acquired
ranges, as from Kafka's broker, which returns whole log batches too. The batches are walked, never decoded
(`gateway.protocol.batches`), and read by `gateway.upstream.log_reads`.

Each share-partition keeps the batches it read, from its start offset on, so that a release or an expiry redelivers
from memory and three members sharing a partition cost one read of the log between them. Reads go to the broker
the member's connection stands for (the partition's leader, as the client found it in Metadata), on the gateway's own
connection to it, one per broker, shared by every share-partition.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from typing import Callable

from gateway.upstream import log_reads
from gateway.upstream.broker import Upstream, UpstreamSecurity
from gateway.upstream.routes import NodeConnections
from gateway.upstream.log_reads import EARLIEST, LATEST, LogBatch, LogRead
from state.api import Errors

log = logging.getLogger(__name__)

READ_BYTES = 1 << 20
"""A read asks for at least this much, so that one read serves several ShareFetches."""
CACHE_BYTES = 16 << 20
"""Batches kept per share-partition beyond what is in flight; older ones are read again if needed."""


class UpstreamReads:
    """The gateway's own connections to the brokers for log reads, one per broker (`NodeConnections`)."""

    def __init__(self, addresses: Callable[[int | None], list[tuple[str, int]]], security: UpstreamSecurity,
                 connect_timeout_s: float) -> None:
        """`addresses`: where a node's connection goes (`Gateway.upstream_addresses`)."""
        self._connections = NodeConnections(addresses, security, connect_timeout_s)

    async def _connection(self, node_id: int | None) -> Upstream:
        return await self._connections.connection(node_id)

    async def fetch(self, node_id: int | None, topic: str, partition: int, offset: int, max_bytes: int,
                    isolation_level: int = 0) -> LogRead:
        return await log_reads.fetch(await self._connection(node_id), topic, partition, offset, max_bytes,
                                     isolation_level)

    async def list_offset(self, node_id: int | None, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
        """(error, offset) of ListOffsets: EARLIEST, LATEST, or the first offset at or after a timestamp (ms)."""
        return await log_reads.list_offset(await self._connection(node_id), topic, partition, timestamp)

    def close(self) -> None:
        self._connections.close()


class PartitionLog:
    """The batches of one topic-partition a holder has read: a contiguous stretch of the log, from `held_from` (the
    offset its first read began at) to `cached_end`. Offsets in it that no batch covers are not in the log (compacted
    or deleted): a read there begins at the next batch, as the broker's would."""

    def __init__(self, reads: UpstreamReads, node_id: int | None, topic: str, partition: int) -> None:
        self._reads = reads
        self.node_id = node_id
        self.topic = topic
        self.partition = partition
        self._batches: list[LogBatch] = []
        self._bases: list[int] = []
        self._bytes = 0
        self.held_from = -1
        self.high_watermark = -1
        self.log_start_offset = -1
        self.error = 0
        """The last read's error (0: none)."""
        self._reading: asyncio.Future | None = None

    @property
    def cached_end(self) -> int:
        """The offset after the last batch held (-1: none)."""
        return self._batches[-1].last + 1 if self._batches else -1

    def cached_from(self, offset: int, max_bytes: int) -> list[LogBatch]:
        """The batches held from the one containing `offset` (or the next, in a hole) on, within `max_bytes` (at
        least one); empty when `offset` is outside what is held."""
        if not self._batches or offset < self.held_from or offset >= self.cached_end:
            return []
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        if self._batches[i].last < offset:
            i += 1
        out, size = [], 0
        for batch in self._batches[i:]:
            if out and size + len(batch.data) > max_bytes:
                break
            out.append(batch)
            size += len(batch.data)
        return out

    async def read(self, offset: int, max_bytes: int, isolation_level: int = 0) -> list[LogBatch]:
        """The batches from `offset` on (at most `max_bytes`, at least one whole batch): from memory where held,
        reading on from the broker first when memory ends before `max_bytes` and the log has more (one read at a
        time per partition: concurrent callers share it)."""
        held = self.cached_from(offset, max_bytes)
        if not held:
            await self._read_upstream(offset, max(max_bytes, READ_BYTES), isolation_level)
        elif held[-1].last + 1 == self.cached_end and self.high_watermark > self.cached_end:
            await self._read_upstream(self.cached_end, max(max_bytes, READ_BYTES), isolation_level)
        return self.cached_from(offset, max_bytes)

    async def poll(self, offset: int, isolation_level: int = 0) -> bool:
        """Read what was appended after what is held, or from `offset` when nothing is held (the log had nothing
        from there yet): a long poll's wake-up; True when there was something."""
        end = self.cached_end if self._batches else offset
        if end < 0:
            return False
        await self._read_upstream(end, READ_BYTES, isolation_level)
        return self.cached_end > end

    async def _read_upstream(self, offset: int, max_bytes: int, isolation_level: int) -> None:
        if self._reading is not None:
            await asyncio.shield(self._reading)
            return
        self._reading = asyncio.get_running_loop().create_future()
        try:
            read = await self._reads.fetch(self.node_id, self.topic, self.partition, offset, max_bytes,
                                           isolation_level)
            self.error = read.error
            if read.error == 0:
                self.high_watermark = read.high_watermark
                self.log_start_offset = max(self.log_start_offset, read.log_start_offset)
                self._keep(offset, read.batches)
            elif read.error == Errors.OFFSET_OUT_OF_RANGE:
                error, start = await self._reads.list_offset(self.node_id, self.topic, self.partition, EARLIEST)
                if error == 0:
                    self.log_start_offset = max(self.log_start_offset, start)
        finally:
            self._reading.set_result(None)
            self._reading = None

    def _keep(self, offset: int, batches: list[LogBatch]) -> None:
        """Add a read from `offset`: it extends memory when it starts where memory ends, else replaces it."""
        if not batches:
            return
        if offset != self.cached_end:
            self._batches, self._bases, self._bytes, self.held_from = [], [], 0, offset
        for batch in batches:
            if self._batches and batch.base <= self._batches[-1].last:
                continue
            self._batches.append(batch)
            self._bases.append(batch.base)
            self._bytes += len(batch.data)

    def trim(self, below: int) -> None:
        """Forget the batches wholly below `below` (the share-partition's start offset), and the oldest ones
        beyond CACHE_BYTES (read again if a redelivery needs them)."""
        drop = 0
        while drop < len(self._batches) - 1 and (self._batches[drop].last < below or self._bytes > CACHE_BYTES):
            self._bytes -= len(self._batches[drop].data)
            drop += 1
        if drop:
            # what lies between the last batch forgotten and the next is not in the log: still known
            self.held_from = self._batches[drop - 1].last + 1
            del self._batches[:drop]
            del self._bases[:drop]
