"""When a TxnOffsetCommit answered from a view needs no wait for the coordinator's decision (docs/gateway.md,
"Transactions": "When the EndTxn is not held").

A TxnOffsetCommit answered from a view is written inside the client's transaction at offset `c` of the group's
requests-topic partition; the coordinator decides it on the group as it is when it applies `c`. The gateway holds
the transaction's EndTxn(COMMIT) until that decision comes, unless it can show that the decision is the one it
gave: that the group the coordinator will apply `c` to accepts the member exactly as the view did. This module
reads the partition itself (read_uncommitted, `c` included) and says so (`settles`) when:

1. the view is a classic group's, Stable, at the request's generation, with the committing member in it; where it
   has other members, their expiry can only start a join phase (PreparingRebalance, which does not refuse a
   transactional commit) that ends, without the committing member's JoinGroup, at the rebalance timeout of the
   members left, at least the committing member's (`rebalance_timeout_ms` in the view), counted from an expiry
   after the member's heartbeat of rule 4 was applied: that must come `MARGIN_MS` after the latest instant of
   rule 4 too;
2. the view is as of mark `M` or later: every request of the partition below `M` was applied and its views read
   before the view was taken (`ViewFollower.covered`, read before the view), and `c - M` is below MAX_BEHIND, so
   the batch that first reads `c` cannot be cut before it by `max.requests.per.trigger`;
3. every request of the group in `[M, c)` changes nothing a TxnOffsetCommit is checked against (`NEUTRAL`: commits,
   heartbeats, Liveness, fetches): no JoinGroup, SyncGroup, LeaveGroup, DeleteGroups, PendingMember, LoadGroup, ...;
4. no timer can remove the member before `c`: the member's session, restarted by a heartbeat this module saw
   accepted before `M` (a Liveness entry or a forwarded Heartbeat of the member at the view's generation; the
   group was Stable at that generation from the heartbeat's answer to `M`, so the coordinator restarted it), and by
   every later one it saw (the coordinator takes each as it comes, an older one included), ends at the earliest
   `MARGIN_MS` after the latest of: `c`'s timestamp, the instant its write was acknowledged, and the timestamps of
   the group's requests in `[M, c)`. The coordinator counts `c` at its timestamp, raised to the group's clock,
   which only a batch time or an earlier request of the group raised; a batch that did not read `c` was planned
   before `c` could be read, so its time is at most the acknowledgement plus the time the query takes from
   reading its sources' ends to taking its batch time, plus the clocks' skew (MARGIN_MS covers both).

Anything else (no mark, a gap in the log, a read that fails, a record it cannot read) says no, and the EndTxn
waits for the decision as before. The coordinator's decision still comes for every commit answered from a view;
one that differs from a commit shown settled is logged as an error (`FastPath`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import msgspec
from kafka.record import MemoryRecords

log = logging.getLogger(__name__)

MARGIN_MS = 10_000
"""How much later than the commit's timestamp, its acknowledgement and the group's requests before it the member's
session must end (the query's planning time, from reading its sources' ends to taking its batch time, and the
clocks' skew between the gateways and the driver, are assumed below it)."""
MAX_BEHIND = 1_000
"""At most this many offsets between the mark and the commit: the source gives every partition an even share of
`max.requests.per.trigger` (50,000 by default, over 16 partitions by default) before the rest."""
MAX_ENTRIES = 200_000
"""Requests kept per partition; past it the older half is dropped (and with it what can be shown)."""
READ_BYTES = 1 << 20
READ_ATTEMPTS = 20
"""Reads of an empty answer (the broker not serving `c` yet) before giving up."""
NEUTRAL = frozenset({"OffsetCommit", "TxnOffsetCommit", "Heartbeat", "Liveness", "OffsetFetch", "DescribeGroups"})
"""Requests that change neither a classic group's generation, state nor members."""


class _Heard(msgspec.Struct):
    member_id: str
    generation_id: int
    heard_ms: int
    answered: int
    group_instance_id: str | None = None
    principal: str | None = None


class _Request(msgspec.Struct):
    """What a request of the log says that matters here (msgspec ignores the rest)."""

    api: str = ""
    request_id: str = ""
    member_id: str | None = None
    generation_id: int | None = None
    group_instance_id: str | None = None
    principal: str | None = None
    members: list[_Heard] | None = None


_DECODE = msgspec.json.Decoder(_Request)


@dataclass(frozen=True, slots=True)
class Entry:
    """A request of the partition: its offset, its record's timestamp, and what it says (None: unreadable)."""

    offset: int
    timestamp_ms: int
    request: _Request | None


@dataclass(frozen=True, slots=True)
class Claim:
    """A TxnOffsetCommit answered from `view` (see the module) and written at `offset`."""

    group_id: str
    partition: int
    mark: int
    offset: int
    member_id: str
    generation: int
    instance_id: str | None
    principal: str | None
    session_timeout_ms: int
    timestamp_ms: int
    acknowledged_ms: int
    others: bool = False
    """Whether the view has members besides the committing one."""
    rebalance_timeout_ms: int | None = None
    """The committing member's rebalance timeout (None: the view does not say)."""
    request_id: str = ""
    """The request's id, which the record at `offset` must carry (an upstream that took the write for a duplicate
    of an older one answers that one's offset)."""


def settles(entries: list[Entry], start: int, claim: Claim) -> bool:
    """Whether the coordinator will accept `claim` as the view did, from the group's requests `entries` (every one
    of the partition's from offset `start` on, in order; later ones than `claim.offset` are ignored)."""
    mark, offset = claim.mark, claim.offset
    if not start <= mark <= offset or offset - mark > MAX_BEHIND:
        return False
    if claim.others and claim.rebalance_timeout_ms is None:
        return False
    deadlines: list[int] = []
    latest = max(claim.timestamp_ms, claim.acknowledged_ms)
    if not any(e.offset == offset and e.request is not None and e.request.request_id == claim.request_id
               for e in reversed(entries)):
        return False  # the record at `offset` is not this request
    for entry in reversed(entries):
        if entry.offset >= offset:
            continue
        if entry.offset < start:
            break  # not read from here: what came before is not known
        req = entry.request
        if req is None:
            return False
        restart = _restart(req, entry.timestamp_ms, claim)
        if entry.offset < mark:
            if restart is not None:
                deadlines.append(restart)
                if claim.others:  # another member's expiry, after this heartbeat, and the join phase it starts
                    deadlines.append(entry.timestamp_ms + claim.rebalance_timeout_ms)  # type: ignore[operator]
                return min(deadlines) - latest > MARGIN_MS
            if _names(req, claim.member_id) and req.api not in ("OffsetCommit", "TxnOffsetCommit"):
                return False  # the member's session may have restarted otherwise (a rejoin)
            continue
        if req.api not in NEUTRAL:
            return False
        latest = max(latest, entry.timestamp_ms)
        if restart is not None:
            deadlines.append(restart)
        elif _names(req, claim.member_id) and req.api not in ("OffsetCommit", "TxnOffsetCommit"):
            return False
    return False  # no heartbeat of the member seen before the mark


def _restart(req: _Request, timestamp_ms: int, claim: Claim) -> int | None:
    """The session deadline at the earliest that this request sets for the claim's member, where it is a heartbeat
    of the member the coordinator accepts at the claim's generation (None: it is not one)."""
    if req.api == "Heartbeat":
        if (req.member_id == claim.member_id and req.generation_id == claim.generation
                and req.group_instance_id in (None, claim.instance_id) and req.principal == claim.principal):
            return timestamp_ms + claim.session_timeout_ms
        return None
    if req.api != "Liveness" or not req.members:
        return None
    heard = [m for m in req.members if m.member_id == claim.member_id]
    if not heard or not all(m.generation_id == claim.generation and m.answered == 0
                            and m.group_instance_id in (None, claim.instance_id) and m.principal == claim.principal
                            for m in heard):
        return None
    # the coordinator restarts the session from min(heard, its time), its time never before the record's
    return min(min(m.heard_ms for m in heard), timestamp_ms) + claim.session_timeout_ms


def _names(req: _Request, member_id: str) -> bool:
    if req.member_id == member_id:
        return True
    return req.api == "Liveness" and any(m.member_id == member_id for m in req.members or ())


class _Partition:
    def __init__(self, start: int) -> None:
        self.start = start
        """Every request of the partition from here on up to `next` is in `groups`."""
        self.next = start
        self.groups: dict[bytes, list[Entry]] = {}
        self.count = 0
        self.lock = asyncio.Lock()

    def add(self, key: bytes, entry: Entry) -> None:
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
    """The requests-topic partitions with transactional commits answered from views, read as far as needed."""

    def __init__(self, reads, topic: str) -> None:
        """`reads`: `gateway.share.log.UpstreamReads` (its bootstrap broker's connection, as the transactional
        writes use)."""
        self._reads = reads
        self.topic = topic
        self._partitions: dict[int, _Partition] = {}

    async def settles(self, claim: Claim) -> bool:
        """Whether the coordinator will accept the claim as answered (`settles`); False where it cannot tell."""
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
                log.info("reading %s-%d: %s", self.topic, claim.partition, exc)
                return False
            return settles(part.groups.get(claim.group_id.encode("utf-8"), []), part.start, claim)

    async def _read_to(self, partition: int, part: _Partition, end: int) -> bool:
        attempts = 0
        while part.next < end:
            read = await self._reads.fetch(None, self.topic, partition, part.next, READ_BYTES)
            if read.error:
                log.info("reading %s-%d: error %d", self.topic, partition, read.error)
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
                try:
                    request = _DECODE.decode(record.value or b"")
                except msgspec.DecodeError:
                    request = None
                part.add(bytes(record.key), Entry(record.offset, record.timestamp, request))
