"""Which gateway holds a share-partition: a compare-and-set on the grant epoch, under a lease (docs/share-groups.md,
"The grant").

The query keeps a `Grant` per share-partition and changes it only through these rules; the holder keeps its own
deadline with `lease_deadline`. Every change of holding bumps the epoch, so a take can only name an epoch that a
FREE decision made, which a gateway can only have read after the batch that made it; that, the holder stopping at
its own deadline, and a group's requests sharing one control-topic partition are why no two holders ever serve at
once (the argument is in the docs). `now_ms` is always the query's batch time, never a request's timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Grant:
    epoch: int
    holder: str | None = None
    """The holding gateway process (None: FREE)."""
    lease_until_ms: int = 0
    """While HELD: when the query frees it unless renewed (the query's clock)."""
    last_holder: str | None = None
    """While FREE: who held it at `epoch - 1`, whose late updates at that epoch are still applied."""
    wanted_by: str | None = None
    """While HELD: the last other gateway refused a take, so the holder may hand it over."""

    @property
    def held(self) -> bool:
        return self.holder is not None


def new_grant(now_ms: int) -> Grant:
    """A share-partition's first grant: FREE at the batch time, so a group deleted and created again never repeats
    an epoch a stale view could name."""
    return Grant(epoch=now_ms)


def take(grant: Grant, holder: str, epoch: int, now_ms: int, lease_ms: int) -> tuple[Grant, bool]:
    """`holder` takes a share-partition it saw FREE at `epoch`; refused (and noted as wanting it, when another
    holds it) otherwise."""
    if grant.held or grant.epoch != epoch:
        if grant.held and grant.holder != holder and grant.wanted_by != holder:
            return replace(grant, wanted_by=holder), False
        return grant, False
    return Grant(epoch + 1, holder, now_ms + lease_ms), True


def renew(grant: Grant, holder: str, epoch: int, now_ms: int, lease_ms: int) -> tuple[Grant, bool]:
    """The holder's renewal; refused unless it still holds the share-partition at that epoch (then it drops its
    memory and takes it again)."""
    if grant.holder != holder or grant.epoch != epoch:
        return grant, False
    return replace(grant, lease_until_ms=max(grant.lease_until_ms, now_ms + lease_ms)), True


def release(grant: Grant, holder: str, epoch: int) -> tuple[Grant, bool]:
    """The holder gives it up, after everything it appended (its appends are in order)."""
    if grant.holder != holder or grant.epoch != epoch:
        return grant, False
    return _freed(grant), True


def expire(grant: Grant, now_ms: int) -> tuple[Grant, bool]:
    """The lease ran out on the query's clock: FREE at the next epoch."""
    if not grant.held or now_ms < grant.lease_until_ms:
        return grant, False
    return _freed(grant), True


def restart_lease(grant: Grant, now_ms: int, lease_ms: int) -> Grant:
    """A new driver's first batch (a failover, a restart, a rebuild): every lease counts again from now, so one
    machine's clock is never compared with another's."""
    if not grant.held:
        return grant
    return replace(grant, lease_until_ms=now_ms + lease_ms)


def accepts_update(grant: Grant, holder: str, epoch: int) -> bool:
    """Whether a holder's update made at `epoch` is applied: while it holds the share-partition at that epoch, or
    once freed from it if nobody took it since (what it answered before its deadline is all before any take)."""
    if grant.held:
        return grant.holder == holder and grant.epoch == epoch
    return grant.last_holder == holder and grant.epoch == epoch + 1


def lease_deadline(sent_ms: int, lease_ms: int, margin_ms: int) -> int:
    """The holder's own deadline, on its own monotonic clock: from when it sent the take or renewal the query
    answered, the lease less the margin. It acquires and answers acknowledgements only before it."""
    return sent_ms + lease_ms - margin_ms


def _freed(grant: Grant) -> Grant:
    return Grant(grant.epoch + 1, None, 0, grant.holder, None)
