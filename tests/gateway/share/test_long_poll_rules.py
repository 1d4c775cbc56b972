"""The holder's side of a ShareFetch long poll (docs/share-groups.md, "Long polls"), without a broker or a query:
which share-partitions a fetch could acquire from (Kafka's `canAcquireRecords`), the bytes counted against MinBytes
(`isMinBytesSatisfied`: from the next fetch offset on, at most the partition's share of MaxBytes), and a wait that
sees a change made while the fetch was still looking. tests/gateway/share/test_long_poll.py runs the same through a
gateway, end to end."""

from __future__ import annotations

import asyncio

from gateway.share.holder import Held, Holder
from gateway.share.log import LogBatch, PartitionLog
from state.api import Limits, PersistedState, acquire, release_member, resolve_start_offset, \
    share_partition_from_snapshot

KEY = ("g", "AAAAAAAAAAAAAAAAAAAAAQ", 0)
FAR = 2**62
"""A lease deadline (monotonic ms) no test reaches."""


def held_with(partition, limits: Limits = Limits(), batches: list[LogBatch] = ()) -> Held:
    log = PartitionLog(None, None, "t", 0)
    log._keep(0, list(batches))
    log.high_watermark = log.cached_end
    return Held(KEY, log, 1, 0, FAR, partition, limits, None, 0)


def fresh(start: int = 0):
    return resolve_start_offset(share_partition_from_snapshot(PersistedState(-1)), start)


def batch(base: int, size: int) -> LogBatch:
    return LogBatch(base, base, b"x" * size)


def test_what_a_fetch_can_acquire_from():
    limits = Limits(max_record_locks=2)
    assert not Holder.acquirable(held_with(share_partition_from_snapshot(PersistedState(-1))))  # not resolved
    assert Holder.acquirable(held_with(fresh(), limits))
    full = acquire(fresh(), "m1", 0, [(0, 0), (1, 1)], 10, 10, 0, limits).partition
    assert full.in_flight() == 2
    # at the cap, nothing released: nothing to acquire, however much the log holds
    assert not Holder.acquirable(held_with(full, limits))
    # at the cap with records released: those can be acquired again
    assert Holder.acquirable(held_with(release_member(full, "m1", limits).partition, limits))
    stopped = held_with(fresh(), limits)
    stopped.dropped = True
    assert not Holder.acquirable(stopped)


def test_the_bytes_counted_for_min_bytes_begin_at_the_next_fetch_offset_and_stop_at_the_partitions_share():
    batches = [batch(0, 100), batch(1, 200), batch(2, 300)]
    holder = Holder(None, None, lambda group_id: None, lambda topic_id: None)

    def counted(partition, max_bytes: int) -> int | None:
        return asyncio.run(holder.fetchable_bytes(held_with(partition, batches=batches), max_bytes, 0))

    assert counted(fresh(), 1 << 20) == 600
    one_acquired = acquire(fresh(), "m1", 0, [(0, 0)], 10, 10, 0, Limits()).partition
    assert counted(one_acquired, 1 << 20) == 500
    assert counted(one_acquired, 250) == 200  # whole batches within the share: the first alone is 200


def test_a_wait_registered_before_a_change_is_completed_by_it_and_forgotten_when_done():
    """The fetch registers its wait before it looks (an awaited log read), so an acknowledgement, a release or an
    expiry while it looks completes the wait that follows instead of being missed (the wait would run to
    MaxWaitMs)."""
    holder = Holder(None, None, lambda group_id: None, lambda topic_id: None)

    async def scenario() -> bool:
        waiter = holder.waiter([KEY])
        holder._wake(KEY)  # a release while the fetch was still counting bytes
        try:
            await asyncio.wait_for(asyncio.shield(waiter), 5)
            return True
        finally:
            waiter.cancel()

    assert asyncio.run(scenario())
    assert not holder.waiting
