"""The grant of a share-partition to one gateway (docs/share-groups.md, "The grant"): a compare-and-set on an
epoch that every change of holding bumps, under a lease."""

from __future__ import annotations

from state.share.partitions.grant import (
    Grant,
    accepts_update,
    expire,
    lease_deadline,
    new_grant,
    release,
    renew,
    restart_lease,
    take,
)

L = 30_000
T = 5_000_000


def test_a_free_share_partition_is_taken_at_the_epoch_seen_free():
    free = new_grant(T)
    assert free == Grant(epoch=T)
    held, ok = take(free, "gw1", T, T + 10, L)
    assert ok and held == Grant(T + 1, "gw1", T + 10 + L)


def test_a_take_naming_another_epoch_or_a_held_partition_is_refused():
    held, _ = take(new_grant(T), "gw1", T, T, L)
    stale, ok = take(held, "gw2", T + 1, T, L)  # gw2 read it HELD at T + 1: it cannot name a FREE epoch
    assert not ok and stale.holder == "gw1" and stale.wanted_by == "gw2"
    assert take(new_grant(T), "gw2", T - 1, T, L) == (new_grant(T), False)


def test_renewal_extends_only_the_holders_lease_at_its_epoch():
    held, _ = take(new_grant(T), "gw1", T, T, L)
    renewed, ok = renew(held, "gw1", T + 1, T + 10_000, L)
    assert ok and renewed.lease_until_ms == T + 10_000 + L
    assert renew(held, "gw2", T + 1, T + 10_000, L) == (held, False)
    assert renew(held, "gw1", T, T + 10_000, L) == (held, False)


def test_expiry_and_release_free_at_the_next_epoch():
    held, _ = take(new_grant(T), "gw1", T, T, L)
    assert expire(held, T + L - 1) == (held, False)
    freed, ok = expire(held, T + L)
    assert ok and freed == Grant(T + 2, None, 0, "gw1")
    assert release(held, "gw1", T + 1) == (freed, True)
    assert release(held, "gw2", T + 1) == (held, False)
    # the holder's renewal after the query freed it is refused: it takes it again, from the durable state
    assert renew(freed, "gw1", T + 1, T + L, L) == (freed, False)
    assert take(freed, "gw1", T + 2, T + L, L)[0] == Grant(T + 3, "gw1", T + 2 * L)


def test_updates_of_the_holder_until_another_takes_it():
    """A freed holder's late updates (appended before its deadline, read after the expiry) still apply; after a
    take, only the new holder's do."""
    held, _ = take(new_grant(T), "gw1", T, T, L)
    assert accepts_update(held, "gw1", T + 1)
    assert not accepts_update(held, "gw2", T + 1) and not accepts_update(held, "gw1", T)
    freed, _ = expire(held, T + L)
    assert accepts_update(freed, "gw1", T + 1)
    retaken, _ = take(freed, "gw2", T + 2, T + L, L)
    assert not accepts_update(retaken, "gw1", T + 1)
    assert accepts_update(retaken, "gw2", T + 3)


def test_a_new_driver_restarts_every_lease():
    held, _ = take(new_grant(T), "gw1", T, T, L)
    assert restart_lease(held, T + 100_000, L).lease_until_ms == T + 100_000 + L
    assert restart_lease(new_grant(T), T + 100_000, L) == new_grant(T)


def test_the_holder_stops_before_the_query_can_free_it():
    """The holder counts from when it sent the request; the query from its batch, which is later."""
    sent, processed = 1_000, 1_250  # the holder's and the query's clocks: only intervals are compared
    assert lease_deadline(sent, L, 3_000) - sent < (processed + L) - processed
