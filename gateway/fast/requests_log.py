"""The requests topic as the gateway reads it to show a TxnOffsetCommit answered from a view settled, so that its
transaction's EndTxn is not held (docs/gateway.md, "When the EndTxn is not held"): the rule is the core's
(`state.api.txn_settles`); this module only reads the partitions (read_uncommitted, as far as a claim needs) and
keeps the requests of each, per group, for it.
"""

from __future__ import annotations

import asyncio
import logging

from kafka.record import MemoryRecords

from common.generations import split, topic_of
from gateway.upstream.routes import LEADER_RULE
from state.api import TxnClaim, TxnEntry, request_entry, txn_settles

log = logging.getLogger(__name__)

MAX_ENTRIES = 200_000
"""Requests kept per partition; past it the older half is dropped (and with it what can be shown)."""
READ_BYTES = 1 << 20
READ_ATTEMPTS = 20
"""Reads of an empty answer (the broker not serving `c` yet) before giving up."""
class _Partition:
    def __init__(self, start: int) -> None:
        self.start = start
        """Every request of the partition from here on up to `next` is in `groups`."""
        self.next = start
        self.groups: dict[bytes, list[TxnEntry]] = {}
        self.count = 0
        self.lock = asyncio.Lock()

    def add(self, key: bytes, entry: TxnEntry) -> None:
        self.groups.setdefault(key, []).append(entry)
        self.count += 1
        if self.count > MAX_ENTRIES:
            cut = self.start + (self.next - self.start) // 2
            for group, entries in list(self.groups.items()):
                kept = [e for e in entries if e.offset >= cut]
                if kept:
                    self.groups[group] = kept
                else:
                    del self.groups[group]
            self.count = sum(len(e) for e in self.groups.values())
            self.start = cut


class RequestsLog:
    """The requests-topic partitions with transactional commits answered from views, read as far as needed; by
    stream partition (`common.generations`)."""

    def __init__(self, reads, topic: str, routes) -> None:
        """`reads`: `gateway.share.log.UpstreamReads` (a connection per broker); `routes`:
        `gateway.upstream.routes.Routes`, which names each partition's leader, read as the transactional writes
        write it."""
        self._reads = reads
        self.topic = topic
        self._routes = routes
        self._partitions: dict[int, _Partition] = {}

    async def settles(self, claim: TxnClaim) -> bool:
        """Whether the coordinator will accept the claim as answered (`txn_settles`); False where it cannot tell."""
        if claim.mark < 0:
            return False
        part = self._partitions.get(claim.partition)
        if part is None:
            part = self._partitions[claim.partition] = _Partition(claim.mark)
        async with part.lock:
            try:
                if not await self._read_to(claim.partition, part, claim.offset + 1):
                    return False
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                log.info("reading stream partition %d of %s: %s", claim.partition, self.topic, exc)
                return False
            return txn_settles(part.groups.get(claim.group_id.encode("utf-8"), []), part.start, claim)

    async def _read_to(self, stream: int, part: _Partition, end: int) -> bool:
        generation, partition = split(stream)
        topic = topic_of(self.topic, generation)
        attempts = 0
        while part.next < end:
            read = await self._reads.fetch(await self._routes.leader(topic, partition), topic, partition,
                                           part.next, READ_BYTES)
            if read.error:
                log.info("reading %s-%d: error %d", topic, partition, read.error)
                if read.error in LEADER_RULE:
                    self._routes.forget_leaders(topic)
                return False
            if not read.batches:
                attempts += 1
                if attempts >= READ_ATTEMPTS:
                    return False
                await asyncio.sleep(0.005)
                continue
            if read.batches[0].base > part.next:  # a gap: what was there is gone (retention)
                part.groups.clear()
                part.count = 0
                part.start = part.next = read.batches[0].base
            for batch in read.batches:
                self._add(part, batch.data)
                part.next = max(part.next, batch.last + 1)
        return True

    @staticmethod
    def _add(part: _Partition, data: bytes) -> None:
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            if batch is None or getattr(batch, "is_control_batch", False):
                continue  # a transaction's marker: it changes pending offsets only
            for record in batch:
                if record.offset < part.next or record.key is None:
                    continue
                part.add(bytes(record.key), request_entry(record.offset, record.timestamp, record.value))
