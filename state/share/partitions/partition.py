"""A share-partition: Kafka's SharePartition as pure functions over an immutable value.

The gateway that holds a share-partition (docs/share-groups.md) keeps a `SharePartition` in memory and calls these
rules on every ShareFetch, acknowledgement, closed session and lock timer; each returns the new value and, where
records left ACQUIRED, the `StateBatch`es the holder must append to the control topic before it answers. The query
keeps the durable side, a `PersistedState` (what Kafka's share coordinator keeps in `__share_group_state`), and
applies those batches to it with `apply_update`, which checks them against what it knows.

The in-flight window is a tuple of `Run`s: maximal offset ranges whose offsets share a state, a delivery count and,
when ACQUIRED, a member and a lock deadline. Runs cover every offset from the share-partition start offset (SPSO)
to `end_offset` (the first offset never fetched: Kafka's SPEO + 1) without holes; offsets Kafka's cache has no
entry for (never persisted, a "gap window" after a load) are AVAILABLE runs with delivery count 0. Runs below the
start offset exist only while ACQUIRED (the log start moved past records a member holds); they leave at their
settlement. Nothing here reads a clock: the time is an argument.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from state.errors import Errors


class RecordState(enum.IntEnum):
    """Kafka's RecordState ids (ARCHIVING, 3, is 4.3's dead-letter queue and not used)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


TERMINAL = frozenset((RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))


class AcknowledgeType(enum.IntEnum):
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4
    """KIP-1222 (ShareFetch/ShareAcknowledge v2 with IsRenewAck): restarts the lock, writes nothing."""


UNRESOLVED = -1
"""The start offset of a share-partition nobody has loaded yet: the first holder resolves it with
`share.auto.offset.reset` (`resolve_start_offset`)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The group's share settings these rules read (group config over the coordinator's `group.share.*`)."""

    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30000
    max_record_locks: int = 2000

    @property
    def throttle_from(self) -> int:
        """From this delivery count a batch is delivered in halving pieces (KAFKA-17541)."""
        return max(2, -(-self.delivery_count_limit // 2))


@dataclass(frozen=True, slots=True)
class Run:
    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str | None = None
    """The member holding it, while ACQUIRED."""
    lock_deadline_ms: int = 0
    """When its acquisition lock expires, while ACQUIRED."""
    batch_size: int = 0
    """The size of the range it was acquired in: throttled redeliveries halve from it, as Kafka halves from the
    size of its in-flight batch."""

    @property
    def size(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range: Kafka's PersisterStateBatch (first offset, last offset, state, delivery count)."""

    first: int
    last: int
    state: RecordState
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """ShareFetch's AcquiredRecords: a range given to one member, and how often it has been delivered."""

    first: int
    last: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """ShareFetch's and ShareAcknowledge's AcknowledgementBatches: one type for the whole range, or one per
    offset."""

    first: int
    last: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SharePartition:
    start_offset: int
    end_offset: int
    runs: tuple[Run, ...] = ()

    @property
    def resolved(self) -> bool:
        return self.start_offset != UNRESOLVED

    def in_flight(self) -> int:
        """Kafka's numInFlightRecords: the window from the start offset to the last offset fetched."""
        return max(self.end_offset - self.start_offset, 0)


@dataclass(frozen=True, slots=True)
class Settled:
    """What a rule returns: the new state, Kafka's error for the call (None: it succeeded), and what left ACQUIRED
    (or was archived unacquired), to be appended before the call is answered."""

    partition: SharePartition
    error: Errors | None = None
    transitions: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class Acquired:
    partition: SharePartition
    records: tuple[AcquiredRecords, ...] = ()
    transitions: tuple[StateBatch, ...] = ()
    """Offsets archived without being acquired (removed from the log by compaction or retention): appended with
    the holder's next update, answered by nobody."""

    @property
    def count(self) -> int:
        return sum(r.last - r.first + 1 for r in self.records)


@dataclass(frozen=True, slots=True)
class PersistedState:
    """The durable side (Kafka's ShareSnapshot): the start offset, the state epoch (bumped when an admin resets
    it) and every persisted range at or above the start offset, sorted, none ACQUIRED, neighbours with equal
    state and count merged."""

    start_offset: int
    state_epoch: int = 0
    batches: tuple[StateBatch, ...] = ()

    def delivery_complete_count(self) -> int:
        """Terminal offsets at or above the start offset (Kafka's DeliveryCompleteCount)."""
        return sum(b.last - b.first + 1 for b in self.batches if b.state in TERMINAL)


class UpdateRefused(ValueError):
    """A holder's update the durable state cannot have come from."""


# -- the holder's start ----------------------------------------------------------------------------------------------


def share_partition_from_snapshot(persisted: PersistedState) -> SharePartition:
    """Where a new holder starts (Kafka's maybeInitialize): the persisted ranges as they were, nothing ACQUIRED,
    offsets with no persisted state AVAILABLE with count 0 (fetched as new), the end after the last persisted
    range. Records the previous holder acquired and did not settle are AVAILABLE again with their persisted
    counts, as on a Kafka leader change."""
    start = persisted.start_offset
    if start == UNRESOLVED:
        return SharePartition(UNRESOLVED, UNRESOLVED)
    runs: list[Run] = []
    at = start
    for b in persisted.batches:
        if b.last < at:
            continue
        first = max(b.first, at)
        if first > at:
            runs.append(Run(at, first - 1, RecordState.AVAILABLE, 0))
        runs.append(Run(first, b.last, b.state, b.delivery_count, batch_size=b.last - first + 1))
        at = b.last + 1
    return _advance(SharePartition(start, at, _merged(runs)))


def resolve_start_offset(partition: SharePartition, offset: int) -> SharePartition:
    """The first holder's resolution of an UNRESOLVED start offset (`share.auto.offset.reset` against the log),
    which it appends (an update with this start offset and no ranges) before it acquires anything, so a second
    holder cannot resolve "latest" elsewhere."""
    if partition.resolved:
        return partition
    return SharePartition(offset, offset)


# -- acquisition ----------------------------------------------------------------------------------------------------


def next_fetch_offset(partition: SharePartition) -> int:
    """Where to read the log next: the first AVAILABLE offset in flight (released, expired, or never persisted),
    else the end of the window."""
    for run in partition.runs:
        if run.state is RecordState.AVAILABLE and run.first >= partition.start_offset:
            return run.first
    return partition.end_offset


def acquire(partition: SharePartition, member_id: str, fetch_offset: int, log_batches: Sequence[tuple[int, int]],
            max_records: int, batch_size: int, now_ms: int, limits: Limits,
            record_limit: bool = False) -> Acquired:
    """Acquire for `member_id` what the log read from `fetch_offset` returned (`log_batches`: each log batch's
    (base offset, last offset), in order): cached AVAILABLE offsets again (delivery count + 1) and new offsets
    (count 1), each locked until `now_ms` + the lock duration.

    As Kafka's `SharePartition.acquire`: whole log batches (batch_optimized: may exceed `max_records`;
    `record_limit`: at most `max_records`, KIP-1206); at most `limits.max_record_locks` offsets in flight, so at the
    cap only released or expired offsets are acquired; offsets between log batches (compacted away) are acquired
    with their batch and gapped by the client; a redelivery from the throttle count on is cut to half its batch
    per attempt and the last attempt is delivered alone (KAFKA-17541); new ranges longer than `batch_size` are cut
    at log-batch bases. Offsets from `fetch_offset` to the first batch's base are no longer in the log: archived."""
    if not partition.resolved or max_records <= 0 or not log_batches:
        return Acquired(partition)
    last_fetched = log_batches[-1][1]
    start, end = partition.start_offset, partition.end_offset
    if last_fetched < start:
        return Acquired(partition)
    budget = min(max_records, limits.max_record_locks - partition.in_flight())
    upto = last_fetched
    if budget <= 0:
        if fetch_offset >= end:
            return Acquired(partition)
        budget = min(max_records, end - fetch_offset)
        upto = min(last_fetched, end - 1)
    runs = list(partition.runs)
    transitions: list[StateBatch] = []
    base = log_batches[0][0]
    if base > fetch_offset:
        runs, end, transitions = _archive_missing(runs, end, max(fetch_offset, start), base)
    lo = max(start, base)
    segments = _segments(log_batches, lo, upto)
    deadline = now_ms + limits.record_lock_duration_ms
    taken: list[tuple[int, int, int, bool]] = []  # (first, last, delivery count, new), in offset order
    new_ranges: list[tuple[int, int]] = []
    count = 0
    stop = False
    for seg_first, seg_last in segments:
        if stop or count >= budget:
            break
        # cached offsets of the segment
        if seg_first < end:
            cached_last = min(seg_last, end - 1)
            for run in runs:
                if run.first > cached_last:
                    break
                if run.last < seg_first or run.state is not RecordState.AVAILABLE or run.first < start:
                    continue
                first, last = max(run.first, seg_first), min(run.last, cached_last)
                take = last - first + 1
                if run.delivery_count >= limits.throttle_from or _last_attempt(run, limits):
                    if count > 0:
                        stop = True
                        break
                    if _last_attempt(run, limits):
                        take = 1
                    else:
                        shift = run.delivery_count - limits.throttle_from + 1
                        take = min(take, max(1, run.batch_size >> shift))
                    stop = True
                if record_limit:
                    take = min(take, budget - count)
                if take <= 0:
                    stop = True
                    break
                taken.append((first, first + take - 1, run.delivery_count + 1, False))
                count += take
                if stop or (record_limit and count >= budget):
                    stop = True
                    break
        if stop or seg_last < end:
            continue
        # new offsets of the segment
        first = max(seg_first, end)
        last = seg_last
        if record_limit:
            last = min(last, first + budget - count - 1)
        if last < first:
            continue
        if taken and taken[-1][3] and taken[-1][1] + 1 == first:
            first = taken.pop()[0]
            new_ranges.pop()
        new_ranges.append((first, last))
        taken.append((first, last, 1, True))
        count += last - first + 1
        end = last + 1
        if record_limit and count >= budget:
            break
    if not taken:
        return Acquired(replace(partition, runs=_merged(runs), end_offset=end) if transitions else partition,
                        transitions=tuple(transitions))
    new_cut = _cut_new(new_ranges, log_batches, batch_size)
    acquired: list[AcquiredRecords] = []
    for first, last, delivery_count, new in taken:
        if new:
            for f, l in new_cut[(first, last)]:
                runs = _paint(runs, f, l, lambda r, f=f, l=l: Run(
                    f, l, RecordState.ACQUIRED, 1, member_id, deadline, l - f + 1), end)
                acquired.append(AcquiredRecords(f, l, 1))
        else:
            runs = _paint(runs, first, last, lambda r: replace(
                r, state=RecordState.ACQUIRED, delivery_count=r.delivery_count + 1, member_id=member_id,
                lock_deadline_ms=deadline), end)
            acquired.append(AcquiredRecords(first, last, delivery_count))
    result = SharePartition(partition.start_offset, end, _merged(runs))
    return Acquired(_advance(result), tuple(acquired), tuple(transitions))


def _last_attempt(run: Run, limits: Limits) -> bool:
    """The next delivery is the last one: delivered alone, so one poison record archives only itself."""
    return limits.delivery_count_limit > 2 and run.delivery_count == limits.delivery_count_limit - 1


def _segments(log_batches: Sequence[tuple[int, int]], lo: int, upto: int) -> list[tuple[int, int]]:
    """The fetched span [lo, upto] cut at log-batch bases; the offsets between two batches belong to the first."""
    out = []
    for i, (base, last) in enumerate(log_batches):
        nxt = log_batches[i + 1][0] - 1 if i + 1 < len(log_batches) else last
        first, seg_last = max(base, lo), min(max(last, nxt), upto)
        if seg_last >= first:
            out.append((first, seg_last))
    return out


def _cut_new(new_ranges: list[tuple[int, int]], log_batches: Sequence[tuple[int, int]],
             batch_size: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """New ranges cut into acquired batches of at most `batch_size` offsets, at log-batch bases (a single log batch
    larger than that stays whole), as Kafka's createBatches."""
    bases = sorted(b for b, _ in log_batches)
    out = {}
    for first, last in new_ranges:
        pieces = []
        at = first
        cut_points = [b for b in bases if first < b <= last] if last - first + 1 > batch_size > 0 else []
        piece_first = at
        for b in cut_points:
            if b - piece_first >= batch_size:
                pieces.append((piece_first, b - 1))
                piece_first = b
        pieces.append((piece_first, last))
        out[(first, last)] = pieces
    return out


def _archive_missing(runs: list[Run], end: int, first: int, base: int) -> tuple[list[Run], int, list[StateBatch]]:
    """Offsets [first, base) the log no longer has (the read began at `base`): cached AVAILABLE ones and new ones
    are archived, their counts kept (new ones count 0)."""
    transitions = []
    cached_last = min(base, end) - 1
    if first <= cached_last:
        def archive(run: Run) -> Run:
            if run.state is not RecordState.AVAILABLE:
                return run
            transitions.append(StateBatch(run.first, run.last, RecordState.ARCHIVED, run.delivery_count))
            return replace(run, state=RecordState.ARCHIVED)
        runs = _paint(runs, first, cached_last, archive, end)
    if base > end:
        runs = runs + [Run(end, base - 1, RecordState.ARCHIVED, 0)]
        transitions.append(StateBatch(end, base - 1, RecordState.ARCHIVED, 0))
        end = base
    return runs, end, transitions


# -- settlement -----------------------------------------------------------------------------------------------------


def validate_acknowledgement_batches(batches: Sequence[AcknowledgementBatch], renew: bool = False) -> str | None:
    """Kafka's `validateAcknowledgementBatches` for one partition: what makes the partition's acknowledgements
    INVALID_REQUEST (None: valid): a range backwards, ranges not ascending or overlapping, no type, a type list
    of the wrong length, a type out of range, Renew without IsRenewAck."""
    highest = UNRESOLVED - 1
    top = AcknowledgeType.RENEW if renew else AcknowledgeType.REJECT
    for b in batches:
        if b.first > b.last:
            return f"first offset {b.first} after last offset {b.last}"
        if b.first <= highest:
            return "acknowledgement batches overlap or are not in ascending order"
        highest = b.last
        if not b.types:
            return "no acknowledge type"
        if len(b.types) > 1 and len(b.types) != b.last - b.first + 1:
            return f"{len(b.types)} acknowledge types for {b.last - b.first + 1} offsets"
        for t in b.types:
            if t == AcknowledgeType.RENEW and not renew:
                return "acknowledge type 4 (renew) without IsRenewAck"
            if not 0 <= t <= top:
                return f"acknowledge type {t} is not valid"
    return None


def acknowledge(partition: SharePartition, member_id: str, batches: Sequence[AcknowledgementBatch], now_ms: int,
                limits: Limits) -> Settled:
    """A member's acknowledgements (valid per `validate_acknowledgement_batches`): Gap and Reject archive, Accept
    acknowledges, Release makes AVAILABLE again (ARCHIVED at the delivery limit), Renew restarts the lock. Every
    offset must be ACQUIRED by this member, or the whole call changes nothing and is INVALID_RECORD_STATE, as
    Kafka's rollback; ranges below the start offset are ignored."""
    runs = list(partition.runs)
    end = partition.end_offset
    start = partition.start_offset
    transitions: list[StateBatch] = []
    for batch in batches:
        first = max(batch.first, start)
        if batch.last < first:
            continue
        if batch.last >= end or not _all_held(runs, member_id, first, batch.last):
            return Settled(partition, Errors.INVALID_RECORD_STATE)
        if len(batch.types) == 1:
            pieces = [(first, batch.last, batch.types[0])]
        else:
            pieces = _type_runs(batch, first)
        for f, l, ack_type in pieces:
            runs = _paint(runs, f, l, lambda r, t=ack_type: _settle(r, t, now_ms, limits, start, transitions), end)
    return Settled(_advance(SharePartition(start, end, _merged(runs))), None, tuple(_coalesced_batches(transitions)))


def _type_runs(batch: AcknowledgementBatch, first: int) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for i, t in enumerate(batch.types):
        offset = batch.first + i
        if offset < first:
            continue
        if out and out[-1][2] == t and out[-1][1] == offset - 1:
            out[-1] = (out[-1][0], offset, t)
        else:
            out.append((offset, offset, t))
    return out


def _all_held(runs: list[Run], member_id: str, first: int, last: int) -> bool:
    covered = first
    for run in runs:
        if run.last < first:
            continue
        if run.first > last:
            break
        if run.state is not RecordState.ACQUIRED or run.member_id != member_id or run.first > covered:
            return False
        covered = run.last + 1
    return covered > last


def _settle(run: Run, ack_type: int, now_ms: int, limits: Limits, start: int,
            transitions: list[StateBatch]) -> Run:
    if ack_type == AcknowledgeType.RENEW:
        return replace(run, lock_deadline_ms=now_ms + limits.record_lock_duration_ms)
    if ack_type == AcknowledgeType.ACCEPT:
        state = RecordState.ACKNOWLEDGED
    elif ack_type == AcknowledgeType.RELEASE:
        return _released(run, limits, start, transitions)
    else:
        state = RecordState.ARCHIVED
    transitions.append(StateBatch(run.first, run.last, state, run.delivery_count))
    return Run(run.first, run.last, state, run.delivery_count, batch_size=run.batch_size)


def _released(run: Run, limits: Limits, start: int, transitions: list[StateBatch]) -> Run:
    """ACQUIRED back to AVAILABLE, or ARCHIVED at the delivery limit or below the start offset; the count is kept
    (KAFKA-19972)."""
    state = (RecordState.ARCHIVED if run.delivery_count >= limits.delivery_count_limit or run.last < start
             else RecordState.AVAILABLE)
    transitions.append(StateBatch(run.first, run.last, state, run.delivery_count))
    return Run(run.first, run.last, state, run.delivery_count, batch_size=run.batch_size)


def release_member(partition: SharePartition, member_id: str, limits: Limits) -> Settled:
    """A member's share session closed (epoch -1, or its connection): its records go back at once, counts kept."""
    return _release_where(partition, limits, lambda r: r.member_id == member_id)


def expire_locks(partition: SharePartition, now_ms: int, limits: Limits) -> Settled:
    """Locks that expired by `now_ms`: AVAILABLE again, or ARCHIVED at the delivery limit; the count unchanged."""
    return _release_where(partition, limits, lambda r: r.lock_deadline_ms <= now_ms)


def next_lock_deadline(partition: SharePartition) -> int | None:
    return min((r.lock_deadline_ms for r in partition.runs if r.state is RecordState.ACQUIRED), default=None)


def _release_where(partition: SharePartition, limits: Limits, which) -> Settled:
    transitions: list[StateBatch] = []
    runs = [_released(r, limits, partition.start_offset, transitions)
            if r.state is RecordState.ACQUIRED and which(r) else r for r in partition.runs]
    if not transitions:
        return Settled(partition)
    return Settled(_advance(SharePartition(partition.start_offset, partition.end_offset, _merged(runs))), None,
                   tuple(_coalesced_batches(transitions)))


def move_log_start(partition: SharePartition, log_start_offset: int) -> SharePartition:
    """The log's start moved past the start offset (retention, DeleteRecords): the start offset follows it, what
    was not acquired below it is gone, and acquired records there wait for their settlement, which archives them.
    Nothing is appended for this (as Kafka); the next update carries the new start offset."""
    if not partition.resolved or log_start_offset <= partition.start_offset:
        return partition
    runs = [r for r in partition.runs if r.last >= log_start_offset or r.state is RecordState.ACQUIRED]
    runs = [replace(r, first=log_start_offset) if r.first < log_start_offset <= r.last and
            r.state is not RecordState.ACQUIRED else r for r in runs]
    end = max(partition.end_offset, log_start_offset)
    return _advance(SharePartition(log_start_offset, end, tuple(runs)))


# -- the durable side -----------------------------------------------------------------------------------------------


def apply_update(persisted: PersistedState, start_offset: int, batches: Sequence[StateBatch]) -> PersistedState:
    """The query's replay of a holder's update (its grant already checked): each range must be one the durable
    state can have come to, i.e. a non-terminal offset of count d becomes any state with count d + 1 (it was
    ACQUIRED once more) or is archived with count d (removed from the log unacquired), and a terminal offset
    never changes; an update the state already shows changes nothing, so a replayed request is harmless. The
    start offset is the larger of both, then moves over the terminal ranges that begin the window.
    UpdateRefused when a range is impossible (the whole update is refused)."""
    start = persisted.start_offset
    if start == UNRESOLVED:
        if start_offset == UNRESOLVED:
            raise UpdateRefused("the start offset is not resolved")
        start = start_offset
    else:
        start = max(start, start_offset)
    current = list(_trim(persisted.batches, start))
    for b in batches:
        if b.state is RecordState.ACQUIRED or b.first > b.last or b.delivery_count < 0:
            raise UpdateRefused(f"range {b.first}-{b.last}: state {b.state!r}, count {b.delivery_count}")
        if b.last < start:
            continue
        first = max(b.first, start)
        for seg_first, seg_last, state, count in _durable_segments(current, first, b.last):
            if state in TERMINAL:
                if (state, count) != (b.state, b.delivery_count):
                    raise UpdateRefused(f"offsets {seg_first}-{seg_last} are {state.name}, not {b.state.name}")
            elif b.delivery_count == count + 1 or (b.delivery_count == count and
                                                   b.state in (state, RecordState.ARCHIVED)):
                pass
            else:
                raise UpdateRefused(f"offsets {seg_first}-{seg_last}: count {b.delivery_count} after {count}")
        current = _put(current, StateBatch(first, b.last, b.state, b.delivery_count))
    return _persisted_advance(PersistedState(start, persisted.state_epoch, tuple(current)))


def _durable_segments(batches: list[StateBatch], first: int, last: int) -> Iterable[tuple[int, int, RecordState, int]]:
    """[first, last] as (first, last, state, count) pieces of the durable state; holes are AVAILABLE, count 0."""
    at = first
    for b in batches:
        if b.last < at:
            continue
        if b.first > last:
            break
        if b.first > at:
            yield at, b.first - 1, RecordState.AVAILABLE, 0
        yield max(b.first, at), min(b.last, last), b.state, b.delivery_count
        at = b.last + 1
        if at > last:
            return
    if at <= last:
        yield at, last, RecordState.AVAILABLE, 0


def _put(batches: list[StateBatch], new: StateBatch) -> list[StateBatch]:
    out = []
    for b in batches:
        if b.last < new.first or b.first > new.last:
            out.append(b)
            continue
        if b.first < new.first:
            out.append(replace(b, last=new.first - 1))
        if b.last > new.last:
            out.append(replace(b, first=new.last + 1))
    out.append(new)
    out.sort(key=lambda b: b.first)
    return _merged_batches(out)


def _trim(batches: Iterable[StateBatch], start: int) -> Iterable[StateBatch]:
    for b in batches:
        if b.last < start:
            continue
        yield replace(b, first=start) if b.first < start else b


def _persisted_advance(p: PersistedState) -> PersistedState:
    start = p.start_offset
    for b in p.batches:
        if b.first != start or b.state not in TERMINAL:
            break
        start = b.last + 1
    if start == p.start_offset:
        return p
    return PersistedState(start, p.state_epoch, tuple(_trim(p.batches, start)))


def _merged_batches(batches: list[StateBatch]) -> list[StateBatch]:
    out: list[StateBatch] = []
    for b in batches:
        if b.state is RecordState.AVAILABLE and b.delivery_count == 0:
            continue  # the same as no state at all
        if out and out[-1].last + 1 == b.first and (out[-1].state, out[-1].delivery_count) == (b.state, b.delivery_count):
            out[-1] = replace(out[-1], last=b.last)
        else:
            out.append(b)
    return out


def _coalesced_batches(batches: list[StateBatch]) -> list[StateBatch]:
    return _merged_batches(sorted(batches, key=lambda b: b.first)) if len(batches) > 1 else [
        b for b in batches]


# -- runs -----------------------------------------------------------------------------------------------------------


def _paint(runs: Sequence[Run], first: int, last: int, change, end: int) -> list[Run]:
    """`change` applied to the pieces of the runs inside [first, last] (runs split at its edges); offsets of
    [first, last] at or beyond the runs' end are new: `change` gets an AVAILABLE count-0 run for them."""
    out: list[Run] = []
    covered_to = first - 1
    for run in runs:
        if run.last < first or run.first > last:
            out.append(run)
            continue
        if run.first < first:
            out.append(replace(run, last=first - 1))
        f, l = max(run.first, first), min(run.last, last)
        out.append(change(replace(run, first=f, last=l)))
        covered_to = max(covered_to, l)
        if run.last > last:
            out.append(replace(run, first=last + 1))
    if covered_to < last:
        out.append(change(Run(covered_to + 1, last, RecordState.AVAILABLE, 0)))
        out.sort(key=lambda r: r.first)
    return out


def _merged(runs: Iterable[Run]) -> tuple[Run, ...]:
    out: list[Run] = []
    for r in runs:
        if out and out[-1].last + 1 == r.first and _same(out[-1], r):
            out[-1] = replace(out[-1], last=r.last)
        else:
            out.append(r)
    return tuple(out)


def _same(a: Run, b: Run) -> bool:
    return (a.state, a.delivery_count, a.member_id, a.lock_deadline_ms, a.batch_size) == (
        b.state, b.delivery_count, b.member_id, b.lock_deadline_ms, b.batch_size)


def _advance(p: SharePartition) -> SharePartition:
    """The start offset moves over the terminal runs that begin the window (Kafka's maybeUpdateCachedStateAndOffsets);
    what is left below it goes, except ACQUIRED runs, which wait for their settlement."""
    start = p.start_offset
    for run in p.runs:
        if run.last < start:
            continue
        if run.first > start or run.state not in TERMINAL:
            break
        start = run.last + 1
    runs = []
    for r in p.runs:
        if r.first >= start or r.state is RecordState.ACQUIRED:
            runs.append(r)
        elif r.last >= start:
            runs.append(replace(r, first=start))
    return SharePartition(start, max(p.end_offset, start), tuple(runs))
