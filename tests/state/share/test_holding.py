"""The query's side of the share-partitions (docs/share-groups.md): grants to gateways under a lease, the holders'
updates replayed into the durable state and checked, the snapshot a new holder starts from. Driven as the runtime
drives it, with the holder's own rules (`state.share.partitions.partition`) producing the updates."""

from __future__ import annotations

from schemas.share_group import ShareGrantPartition, ShareGrantRequest, ShareUpdatePartition, ShareUpdateRequest
from state.errors import Errors
from state.share.partitions import holding
from state.share.partitions.partition import (
    AcknowledgementBatch,
    Limits,
    PersistedState,
    RecordState,
    StateBatch,
    acknowledge,
    acquire,
    resolve_start_offset,
    share_partition_from_snapshot,
)
from state.share.records import batch_value
from tests.state.share.support import FOO, T, Share

L = 30_000


def grant(s: Share, holder: str, operation: str, epoch: int, partition: int = 0):
    request = ShareGrantRequest(request_id="r", group_id="g", holder=holder, partitions=(
        ShareGrantPartition(FOO, partition, operation, epoch),))
    return s.apply(holding.share_grant(s.group, request, s.env(), s.now)).response.partitions[0]


def update(s: Share, holder: str, epoch: int, start: int, batches, state_epoch: int | None = None):
    snapshot = s.group.partitions[(FOO, 0)]
    request = ShareUpdateRequest(request_id="u", group_id="g", holder=holder, partitions=(ShareUpdatePartition(
        FOO, 0, epoch, snapshot.persisted.state_epoch if state_epoch is None else state_epoch, start,
        tuple(batch_value(b) for b in batches)),))
    updated = holding.share_update(s.group, request, s.now)
    s.apply(updated.result)
    return updated.refused


def joined() -> Share:
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    return s


def fire_lease(s: Share, now: int) -> None:
    s.now = now
    key = holding.share_lease_key(FOO, 0)
    if s.timers.get(key, now + 1) <= now:
        del s.timers[key]
        s.apply(holding.on_lease_expired(s.group, (FOO, 0), now))


def test_first_take_creates_the_share_partition_with_an_unresolved_start():
    s = joined()
    answer = grant(s, "gw1", "take", holding.NEVER_HELD)
    assert (answer.error_code, answer.holder, answer.epoch, answer.lease_ms) == (0, "gw1", T + 1, L)
    assert answer.start_offset == -1 and answer.state_epoch == 1
    assert s.timers[holding.share_lease_key(FOO, 0)] == T + L
    assert s.group.partitions[(FOO, 0)].grant.holder == "gw1"


def test_a_partition_nobody_initialised_is_refused():
    s = joined()
    assert grant(s, "gw1", "take", holding.NEVER_HELD, partition=7).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_a_held_partition_is_refused_to_another_gateway_which_is_noted_as_wanting_it():
    s = joined()
    grant(s, "gw1", "take", holding.NEVER_HELD)
    answer = grant(s, "gw2", "take", T + 1)
    assert (answer.error_code, answer.holder, answer.epoch) == (Errors.FENCED_STATE_EPOCH, "gw1", T + 1)
    assert s.group.wanted[(FOO, 0)] == "gw2"


def test_renewal_moves_the_lease_and_release_frees_at_the_next_epoch():
    s = joined()
    grant(s, "gw1", "take", holding.NEVER_HELD)
    s.now = T + 10_000
    assert grant(s, "gw1", "renew", T + 1).error_code == 0
    assert s.timers[holding.share_lease_key(FOO, 0)] == T + 10_000 + L
    freed = grant(s, "gw1", "release", T + 1)
    assert (freed.error_code, freed.holder, freed.epoch) == (0, None, T + 2)
    assert holding.share_lease_key(FOO, 0) not in s.timers


def test_holder_updates_make_the_durable_state_a_new_holder_starts_from():
    s = joined()
    answer = grant(s, "gw1", "take", holding.NEVER_HELD)
    sp = resolve_start_offset(share_partition_from_snapshot(PersistedState(answer.start_offset)), 0)
    assert update(s, "gw1", answer.epoch, 0, ()) == ()
    sp = acquire(sp, "m1", 0, [(0, 9)], 500, 500, T, Limits()).partition
    settled = acknowledge(sp, "m1", [AcknowledgementBatch(0, 3, (1,)), AcknowledgementBatch(4, 5, (2,))], T, Limits())
    assert update(s, "gw1", answer.epoch, settled.partition.start_offset, settled.transitions) == ()
    persisted = s.group.partitions[(FOO, 0)].persisted
    assert persisted == PersistedState(4, 1, (StateBatch(4, 5, RecordState.AVAILABLE, 1),))
    # the holder dies; its lease ends; another gateway takes it and starts from what was durable
    fire_lease(s, T + L)
    taken = grant(s, "gw2", "take", answer.epoch + 1)
    assert (taken.error_code, taken.epoch, taken.start_offset) == (0, answer.epoch + 2, 4)
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in taken.state_batches] == [
        (4, 5, 0, 1)]


def test_a_freed_holders_late_updates_apply_until_another_takes_it():
    """What the old holder answered before its deadline is before any take in the log (docs/share-groups.md)."""
    s = joined()
    answer = grant(s, "gw1", "take", holding.NEVER_HELD)
    update(s, "gw1", answer.epoch, 0, ())
    fire_lease(s, T + L)
    late = (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1),)
    assert update(s, "gw1", answer.epoch, 0, late) == ()
    assert s.group.partitions[(FOO, 0)].persisted.start_offset == 5
    grant(s, "gw2", "take", answer.epoch + 1)
    refused = update(s, "gw1", answer.epoch, 5, (StateBatch(5, 6, RecordState.ACKNOWLEDGED, 1),))
    assert len(refused) == 1 and "fenced" in refused[0]
    assert s.group.partitions[(FOO, 0)].persisted.start_offset == 5


def test_an_update_at_a_stale_state_epoch_or_impossible_is_refused():
    s = joined()
    answer = grant(s, "gw1", "take", holding.NEVER_HELD)
    update(s, "gw1", answer.epoch, 0, ())
    assert "state epoch" in update(s, "gw1", answer.epoch, 0, (), state_epoch=0)[0]
    assert "count 3 after 0" in update(s, "gw1", answer.epoch, 0, (StateBatch(0, 0, RecordState.ACKNOWLEDGED, 3),))[0]


def test_a_new_driver_restarts_every_lease():
    s = joined()
    grant(s, "gw1", "take", holding.NEVER_HELD)
    ops = holding.restart_leases(s.group, T + 100_000, L)
    assert [(op.key, op.deadline_ms) for op in ops] == [(holding.share_lease_key(FOO, 0), T + 100_000 + L)]


def test_a_granted_take_or_renewal_carries_the_groups_settings_and_a_refusal_none():
    # the holder applies them from its first fetch on, before any view of the group has reached its gateway
    s = joined()
    taken = grant(s, "gw1", "take", holding.NEVER_HELD)
    assert (taken.config.auto_offset_reset, taken.config.record_lock_duration_ms,
            taken.config.delivery_count_limit) == ("latest", 30_000, 5)
    assert grant(s, "gw1", "renew", taken.epoch).config == taken.config
    assert grant(s, "gw2", "take", taken.epoch).config is None
