"""The share-partition rules (`state.share.partitions.partition`), as Kafka's SharePartitionTest specifies them, in our words:
acquisition, acknowledgement, release, lock expiry, the delivery-count limit and its throttling, the start offset's
movement, a new holder's start from the persisted state, and the query's replay of the holder's updates.

Every test runs the holder's rules and then checks that the durable side (`apply_update` over what the holder
appended) agrees with the holder: the persisted state a new holder would start from is the holder's state with
every ACQUIRED record as it was before it was acquired."""

from __future__ import annotations

import pytest

from state.errors import Errors
from state.share.partitions.partition import (
    UNRESOLVED,
    AcknowledgeType,
    AcknowledgementBatch,
    AcquiredRecords,
    Limits,
    PersistedState,
    RecordState,
    SharePartition,
    StateBatch,
    UpdateRefused,
    acknowledge,
    acquire,
    apply_update,
    expire_locks,
    move_log_start,
    next_fetch_offset,
    next_lock_deadline,
    release_member,
    resolve_start_offset,
    share_partition_from_snapshot,
    validate_acknowledgement_batches,
)

LIMITS = Limits(delivery_count_limit=5, record_lock_duration_ms=30000, max_record_locks=2000)
T = 1_000_000
ACCEPT, RELEASE, REJECT, GAP, RENEW = (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT,
                                      AcknowledgeType.GAP, AcknowledgeType.RENEW)


class Holder:
    """One share-partition held by a gateway, with the durable state the query keeps from its appends."""

    def __init__(self, start: int = 0, limits: Limits = LIMITS, persisted: PersistedState | None = None) -> None:
        self.limits = limits
        self.persisted = persisted if persisted is not None else PersistedState(UNRESOLVED)
        self.sp = share_partition_from_snapshot(self.persisted)
        if not self.sp.resolved:
            self.sp = resolve_start_offset(self.sp, start)
            self.append(())

    def append(self, transitions) -> None:
        self.persisted = apply_update(self.persisted, self.sp.start_offset, tuple(transitions))

    def fetch(self, member: str, batches, max_records: int = 500, batch_size: int = 500, now: int = T,
              record_limit: bool = False, fetch_offset: int | None = None) -> tuple[AcquiredRecords, ...]:
        offset = next_fetch_offset(self.sp) if fetch_offset is None else fetch_offset
        result = acquire(self.sp, member, offset, batches, max_records, batch_size, now, self.limits, record_limit)
        self.sp = result.partition
        if result.transitions:
            self.append(result.transitions)
        return result.records

    def ack(self, member: str, *batches: tuple, now: int = T) -> Errors | None:
        acks = [AcknowledgementBatch(f, l, tuple(t) if isinstance(t, (list, tuple)) else (t,)) for f, l, t in batches]
        assert validate_acknowledgement_batches(acks, renew=True) is None
        settled = acknowledge(self.sp, member, acks, now, self.limits)
        self.sp = settled.partition
        if settled.transitions:
            self.append(settled.transitions)
        return settled.error

    def release(self, member: str) -> None:
        settled = release_member(self.sp, member, self.limits)
        self.sp = settled.partition
        self.append(settled.transitions)

    def expire(self, now: int) -> None:
        settled = expire_locks(self.sp, now, self.limits)
        self.sp = settled.partition
        if settled.transitions:
            self.append(settled.transitions)

    def state_of(self, offset: int) -> tuple[RecordState, int, str | None]:
        for r in self.sp.runs:
            if r.first <= offset <= r.last:
                return r.state, r.delivery_count, r.member_id
        raise AssertionError(f"offset {offset} not in flight")

    def new_holder(self) -> Holder:
        """A gateway taking over from the durable state (the old one crashed or released it)."""
        return Holder(limits=self.limits, persisted=self.persisted)


def batches(*ranges: tuple[int, int]) -> list[tuple[int, int]]:
    return list(ranges)


# -- acquisition ----------------------------------------------------------------------------------------------------


def test_acquire_single_and_multiple_records():
    """testAcquireSingleRecord, testAcquireMultipleRecords: one range with count 1; the next fetch reads on."""
    h = Holder()
    assert h.fetch("m1", batches((0, 0))) == (AcquiredRecords(0, 0, 1),)
    assert h.sp.end_offset == 1 and next_fetch_offset(h.sp) == 1
    assert h.fetch("m1", batches((1, 3), (4, 5))) == (AcquiredRecords(1, 5, 1),)
    assert next_fetch_offset(h.sp) == 6
    assert h.state_of(3) == (RecordState.ACQUIRED, 1, "m1")


def test_acquire_splits_at_log_batches_beyond_batch_size():
    """testAcquireWithBatchSizeAndMultipleBatches: new ranges longer than BatchSize cut at log-batch bases."""
    h = Holder()
    got = h.fetch("m1", batches((0, 4), (5, 9), (10, 14), (15, 19)), max_records=100, batch_size=10)
    assert got == (AcquiredRecords(0, 9, 1), AcquiredRecords(10, 19, 1))


def test_acquire_takes_whole_log_batches_beyond_max_records():
    """batch_optimized: MaxRecords is a soft limit, whole log batches; record_limit: at most MaxRecords (KIP-1206)."""
    h = Holder()
    assert h.fetch("m1", batches((0, 9), (10, 19)), max_records=5) == (AcquiredRecords(0, 9, 1),)
    h2 = Holder()
    assert h2.fetch("m1", batches((0, 9), (10, 19)), max_records=5, record_limit=True) == (AcquiredRecords(0, 4, 1),)
    assert next_fetch_offset(h2.sp) == 5


def test_acquired_records_are_not_acquired_again():
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    assert h.fetch("m2", batches((0, 9)), fetch_offset=0) == ()
    assert h.fetch("m2", batches((10, 12))) == (AcquiredRecords(10, 12, 1),)


def test_max_in_flight_only_acquires_released_records():
    """testAcquireWithMaxInFlightRecordsAndTryAcquireNewBatch: at the cap, only released offsets are acquired."""
    h = Holder(limits=Limits(max_record_locks=10))
    assert h.fetch("m1", batches((0, 9))) == (AcquiredRecords(0, 9, 1),)
    assert h.fetch("m2", batches((10, 19))) == ()
    assert h.ack("m1", (5, 5, RELEASE)) is None
    assert next_fetch_offset(h.sp) == 5
    assert h.fetch("m2", batches((0, 19)), fetch_offset=5) == (AcquiredRecords(5, 5, 2),)
    assert h.sp.end_offset == 10


def test_released_record_is_acquired_again_with_its_count_raised():
    """testAcquireReleasedRecord: a release rewinds the fetch offset; the next delivery counts 2."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    assert h.ack("m1", (3, 4, RELEASE)) is None
    assert next_fetch_offset(h.sp) == 3
    assert h.fetch("m2", batches((0, 9)), fetch_offset=3) == (AcquiredRecords(3, 4, 2),)
    assert h.state_of(3) == (RecordState.ACQUIRED, 2, "m2")


def test_compacted_offsets_before_the_first_log_batch_are_archived():
    """The read from a released offset begins at a later batch: what the log no longer has is archived, durably."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.ack("m1", (0, 9, RELEASE))
    assert h.fetch("m2", batches((5, 9)), fetch_offset=0) == (AcquiredRecords(5, 9, 2),)
    assert h.sp.start_offset == 5
    assert h.persisted.start_offset == 5


# -- acknowledgement ------------------------------------------------------------------------------------------------


def test_accept_moves_the_start_offset_over_the_settled_prefix_only():
    """testMaybeUpdateCachedStateWhenAcknowledgeTypeAccept: SPSO moves only over a terminal prefix."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    assert h.ack("m1", (5, 9, ACCEPT)) is None
    assert h.sp.start_offset == 0
    assert h.ack("m1", (0, 4, ACCEPT)) is None
    assert h.sp.start_offset == 10 and h.sp.runs == ()
    assert h.persisted == PersistedState(10)


def test_reject_archives_and_release_makes_available():
    """...WhenAcknowledgeTypeReject, ...Release."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    assert h.ack("m1", (0, 1, REJECT), (2, 3, RELEASE)) is None
    assert h.sp.start_offset == 2
    assert h.state_of(2) == (RecordState.AVAILABLE, 1, None)
    assert h.persisted.batches == (StateBatch(2, 3, RecordState.AVAILABLE, 1),)


def test_acknowledge_with_another_member_is_invalid_record_state():
    """testAcknowledgeWithAnotherMember, testAcknowledgeSubsetWithAnotherMember: 121, nothing changes."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    before = h.sp
    assert h.ack("m2", (0, 9, ACCEPT)) is Errors.INVALID_RECORD_STATE
    assert h.ack("m2", (3, 4, ACCEPT)) is Errors.INVALID_RECORD_STATE
    assert h.sp == before


def test_acknowledge_not_acquired_or_after_lock_timeout_is_invalid_record_state():
    """testAcknowledgeWhenOffsetNotAcquired, testAcknowledgeAfterAcquisitionLockTimeout."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.ack("m1", (0, 4, RELEASE))
    assert h.ack("m1", (0, 4, ACCEPT)) is Errors.INVALID_RECORD_STATE
    assert h.ack("m1", (20, 21, ACCEPT)) is Errors.INVALID_RECORD_STATE  # never fetched
    h.expire(T + 30000)
    assert h.ack("m1", (5, 9, ACCEPT)) is Errors.INVALID_RECORD_STATE
    assert h.state_of(5) == (RecordState.AVAILABLE, 1, None)


def test_per_offset_types_with_gaps():
    """testAcknowledgeMultipleSubsetRecordBatchWithGapOffsets: one type per offset, Gap included."""
    h = Holder()
    h.fetch("m1", batches((0, 5)))
    assert h.ack("m1", (0, 5, [ACCEPT, GAP, RELEASE, REJECT, ACCEPT, RELEASE])) is None
    assert [h.state_of(o)[0] for o in (2, 3, 4, 5)] == [RecordState.AVAILABLE, RecordState.ARCHIVED,
                                                      RecordState.ACKNOWLEDGED, RecordState.AVAILABLE]
    assert h.sp.start_offset == 2


def test_a_failing_batch_rolls_back_the_whole_call():
    """testAcknowledgeRollbackWithFullBatchError, ...SubsetError: one bad range undoes the good ones before it."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.fetch("m2", batches((10, 19)))
    before = h.sp
    assert h.ack("m1", (0, 4, ACCEPT), (10, 12, ACCEPT)) is Errors.INVALID_RECORD_STATE
    assert h.sp == before


def test_acknowledgement_below_the_start_offset_is_ignored():
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.ack("m1", (0, 4, ACCEPT))
    assert h.ack("m1", (0, 6, ACCEPT)) is None  # 0-4 already below the start: only 5-6 settle
    assert h.sp.start_offset == 7


def test_renew_restarts_the_lock_and_writes_nothing():
    """testRenewAcknowledgeWithCompleteBatchAck; a renew of an expired batch is 121 (...OnExpiredBatch)."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    persisted = h.persisted
    assert h.ack("m1", (0, 9, RENEW), now=T + 20000) is None
    assert next_lock_deadline(h.sp) == T + 50000 and h.persisted == persisted
    h.expire(T + 50000)
    assert h.ack("m1", (0, 9, RENEW)) is Errors.INVALID_RECORD_STATE


@pytest.mark.parametrize("acks, why", [
    ([AcknowledgementBatch(5, 4, (1,))], "after last"),
    ([AcknowledgementBatch(0, 4, (1,)), AcknowledgementBatch(3, 6, (1,))], "overlap"),
    ([AcknowledgementBatch(5, 6, (1,)), AcknowledgementBatch(0, 1, (1,))], "ascending"),
    ([AcknowledgementBatch(0, 4, ())], "no acknowledge type"),
    ([AcknowledgementBatch(0, 4, (1, 1))], "2 acknowledge types for 5"),
    ([AcknowledgementBatch(0, 0, (5,))], "not valid"),
    ([AcknowledgementBatch(0, 0, (4,))], "renew"),
])
def test_invalid_acknowledgement_batches(acks, why):
    """KafkaApis' validateAcknowledgementBatches: the partition's acknowledgements are INVALID_REQUEST."""
    assert why in validate_acknowledgement_batches(acks)


# -- locks, limits, sessions ----------------------------------------------------------------------------------------


def test_lock_expiry_makes_available_or_archives_at_the_limit():
    """testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed: expiry keeps the count; at the limit it archives."""
    h = Holder(limits=Limits(delivery_count_limit=2))
    h.fetch("m1", batches((0, 1)))
    assert next_lock_deadline(h.sp) == T + 30000
    h.expire(T + 29999)
    assert h.state_of(0)[0] is RecordState.ACQUIRED
    h.expire(T + 30000)
    assert h.state_of(0) == (RecordState.AVAILABLE, 1, None)
    assert h.fetch("m2", batches((0, 1)), fetch_offset=0, now=T + 40000) == (AcquiredRecords(0, 1, 2),)
    h.expire(T + 70000)
    assert h.sp.start_offset == 2 and h.sp.runs == ()
    assert h.persisted == PersistedState(2)


def test_release_at_the_limit_archives():
    """testMaxDeliveryCountLimitExceededForRecordBatch: a record is delivered at most `limit` times."""
    h = Holder(limits=Limits(delivery_count_limit=2))
    h.fetch("m1", batches((0, 0)))
    h.ack("m1", (0, 0, RELEASE))
    h.fetch("m1", batches((0, 0)), fetch_offset=0)
    h.ack("m1", (0, 0, RELEASE))
    assert h.sp.start_offset == 1
    assert h.fetch("m1", batches((0, 0)), fetch_offset=0) == ()


def test_session_release_frees_only_that_members_records_and_keeps_counts():
    """testReleaseAcquiredRecords*; KAFKA-19972 (the count is never decremented), KAFKA-19953 (others' records
    stay)."""
    h = Holder()
    h.fetch("m1", batches((0, 4)))
    h.fetch("m2", batches((5, 9)))
    h.release("m1")
    assert h.state_of(0) == (RecordState.AVAILABLE, 1, None)
    assert h.state_of(5) == (RecordState.ACQUIRED, 1, "m2")
    assert h.fetch("m3", batches((0, 9)), fetch_offset=0) == (AcquiredRecords(0, 4, 2),)


def test_throttled_redelivery_halves_until_a_record_goes_alone():
    """testAcquireRecordsHalvesBatchSizeOnEachFailureUntilSingleRecordOnLastAttempt (KAFKA-17541): from
    ceil(limit/2) deliveries a batch comes back in halving pieces; the last attempt delivers one record."""
    h = Holder(limits=Limits(delivery_count_limit=6))
    h.fetch("m1", batches((0, 15)))
    sizes = []
    for _ in range(6):
        h.release("m1")
        got = h.fetch("m1", batches((0, 15)), fetch_offset=next_fetch_offset(h.sp))
        sizes.append([(r.last - r.first + 1, r.delivery_count) for r in got])
    # below the throttle count (3) the batch of 16 comes whole; a batch delivered 3 times comes back as 16 >> 1,
    # then 16 >> 2; the sixth and last delivery goes alone
    assert sizes[:4] == [[(16, 2)], [(16, 3)], [(8, 4)], [(4, 5)]]
    assert sizes[4:] == [[(1, 6)], [(1, 6)]]
    assert h.sp.start_offset == 1  # offset 0, released at the limit, is archived; offset 1 goes alone too
    assert h.state_of(1) == (RecordState.ACQUIRED, 6, "m1")


def test_new_holder_starts_from_the_durable_state():
    """testMaybeInitialize*: a leader change. Settled records stay settled; acquired and unsettled ones come back
    AVAILABLE with their persisted counts (never persisted: fetched as new, count 1)."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.ack("m1", (0, 2, ACCEPT), (3, 3, RELEASE), (6, 6, REJECT))
    h.fetch("m2", batches((3, 3)), fetch_offset=3)  # acquired again, count 2, never settled
    h2 = h.new_holder()
    assert h2.sp.start_offset == 3
    assert h2.state_of(3) == (RecordState.AVAILABLE, 1, None)
    assert h2.state_of(4) == (RecordState.AVAILABLE, 0, None)
    assert h2.state_of(6) == (RecordState.ARCHIVED, 1, None)
    assert next_fetch_offset(h2.sp) == 3
    got = h2.fetch("m3", batches((0, 9), (10, 11)), fetch_offset=3)
    # 4-5 were never persisted (fetched as new); the window ended at 6, the last persisted offset
    assert got == (AcquiredRecords(3, 3, 2), AcquiredRecords(4, 5, 1), AcquiredRecords(7, 11, 1))


def test_unresolved_start_offset_acquires_nothing_until_resolved():
    sp = share_partition_from_snapshot(PersistedState(UNRESOLVED))
    assert acquire(sp, "m", 0, [(0, 9)], 10, 10, T, LIMITS).records == ()
    assert resolve_start_offset(sp, 42) == SharePartition(42, 42)
    with pytest.raises(UpdateRefused):
        apply_update(PersistedState(UNRESOLVED), UNRESOLVED, ())


def test_log_start_movement_archives_available_and_waits_for_acquired():
    """testLsoMovement*: AVAILABLE records below the new log start go; ACQUIRED ones wait for their locks."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    h.ack("m1", (0, 4, RELEASE))
    h.sp = move_log_start(h.sp, 7)
    assert h.sp.start_offset == 7 and next_fetch_offset(h.sp) == 10
    assert h.ack("m1", (5, 6, ACCEPT)) is None  # below the start: ignored
    assert h.ack("m1", (7, 9, ACCEPT)) is None
    assert h.sp.start_offset == 10
    h.expire(T + 30000)  # 5-6 settle below the start: gone
    assert h.sp.runs == ()
    h.append(())
    assert h.persisted.start_offset == 10


# -- the durable side -----------------------------------------------------------------------------------------------


def test_replayed_update_changes_nothing():
    """A request applied twice (a replayed batch, a rebuild) leaves the same durable state."""
    h = Holder()
    h.fetch("m1", batches((0, 9)))
    settled = acknowledge(h.sp, "m1", [AcknowledgementBatch(3, 5, (RELEASE,))], T, LIMITS)
    once = apply_update(h.persisted, 0, settled.transitions)
    assert apply_update(once, 0, settled.transitions) == once


@pytest.mark.parametrize("update, why", [
    ((StateBatch(0, 4, RecordState.ACKNOWLEDGED, 3),), "count 3 after 0"),
    ((StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1), StateBatch(0, 4, RecordState.ARCHIVED, 1)), "ACKNOWLEDGED"),
    ((StateBatch(0, 4, RecordState.ACQUIRED, 1),), "state"),
])
def test_impossible_update_is_refused(update, why):
    """An update no holder could have made from the durable state (a count that skipped, a terminal record
    changed, an acquisition persisted) is refused whole."""
    with pytest.raises(UpdateRefused, match=why):
        apply_update(PersistedState(0), 0, update)


def test_two_holders_in_turn_leave_the_durable_state_a_third_starts_from():
    """A sequence across holders: every settled transition survives each change of holder."""
    h = Holder()
    h.fetch("a", batches((0, 99)))
    h.ack("a", (0, 49, ACCEPT), (50, 59, RELEASE), (60, 69, REJECT))
    h2 = h.new_holder()
    got = h2.fetch("b", batches((0, 99)), fetch_offset=next_fetch_offset(h2.sp))
    assert got[0] == AcquiredRecords(50, 59, 2)
    h2.ack("b", (50, 59, ACCEPT), (70, 99, ACCEPT))
    h3 = h2.new_holder()
    assert h3.sp == SharePartition(100, 100)
    assert h3.persisted == PersistedState(100)


# -- any sequence ---------------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MEMBERS = ("a", "b", "c")
_op = st.one_of(
    st.tuples(st.just("fetch"), st.sampled_from(MEMBERS), st.integers(1, 12), st.booleans()),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, 40), st.integers(0, 6),
              st.sampled_from((GAP, ACCEPT, RELEASE, REJECT))),
    st.tuples(st.just("release"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("expire"), st.integers(0, 40_000)),
    st.tuples(st.just("log_start"), st.integers(0, 40)),
    st.tuples(st.just("new_holder")),
)


def _check(h: Holder) -> None:
    """The holder's window is well formed, and the durable state is the holder's with every ACQUIRED record as it
    was before it was acquired."""
    sp = h.sp
    at = sp.start_offset
    for r in sp.runs:
        assert r.first <= r.last
        if r.last < sp.start_offset:
            assert r.state is RecordState.ACQUIRED
            continue
        assert r.first <= at and r.last >= at, f"hole at {at}: {sp.runs}"
        at = r.last + 1
    assert at == max(sp.end_offset, sp.start_offset) or not sp.runs
    h.append(())  # the start offset the holder's next update carries
    durable = {}
    for b in h.persisted.batches:
        for o in range(b.first, b.last + 1):
            durable[o] = (b.state, b.delivery_count)
    assert h.persisted.start_offset == sp.start_offset
    for r in sp.runs:
        for o in range(max(r.first, sp.start_offset), r.last + 1):
            d = durable.get(o, (RecordState.AVAILABLE, 0))
            if r.state is RecordState.ACQUIRED:
                assert d[0] is RecordState.AVAILABLE and d[1] == r.delivery_count - 1, (o, r, d)
            else:
                assert d == (r.state, r.delivery_count), (o, r, d)
    assert all(o < sp.end_offset for o in durable)


@settings(max_examples=300, deadline=None)
@given(st.lists(_op, max_size=40))
def test_any_sequence_keeps_holder_and_durable_state_in_step(ops):
    """Whatever members do, across holders: the durable state always says what a new holder must know."""
    h = Holder(limits=Limits(delivery_count_limit=3, max_record_locks=25))
    log_start = 0
    now = T
    for op in ops:
        kind = op[0]
        if kind == "fetch":
            _, member, size, record_limit = op
            offset = max(next_fetch_offset(h.sp), log_start)
            top = offset + size
            h.fetch(member, [(b, min(b + 2, top)) for b in range(offset, top + 1, 3)], max_records=size,
                    batch_size=4, now=now, record_limit=record_limit, fetch_offset=offset)
        elif kind == "ack":
            _, member, first, length, ack_type = op
            before = h.sp
            error = h.ack(member, (first, first + length, ack_type), now=now)
            assert error in (None, Errors.INVALID_RECORD_STATE)
            if error is not None:
                assert h.sp == before
        elif kind == "release":
            h.release(op[1])
        elif kind == "expire":
            now += op[1]
            h.expire(now)
        elif kind == "log_start":
            log_start = max(log_start, min(op[1], h.sp.end_offset + 5))
            h.sp = move_log_start(h.sp, log_start)
        else:
            h = h.new_holder()
        _check(h)
