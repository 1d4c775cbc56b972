"""When a group's retention check runs: at the first check instant at which it would remove something (issue 35).

Kafka's coordinator runs the retention check (KIP-211, `cleanupGroupMetadata`) over every group every
`offsets.retention.check.interval.ms`. Here the check is a timer of the group (`OFFSETS_EXPIRATION`, at multiples of
the interval: `state.handling.timers.next_retention_check`), and a due timer is a call of the group through the query.
Armed at every instant for every group, it called every group at each of them, whether or not it had anything to
remove: about 60 s of state calls per 50,000 groups every ten minutes. It is armed instead at the first instant of
that schedule at which the check would remove something of the group as it is (`next_check`): an offset past its
retention (`state.offsets.handlers.on_expiration_timer`'s rule, which this one mirrors), or the group itself, Empty
and left without offsets. While the check would remove nothing however long the group stays as it is (a
rebalancing group, a Stable one whose offsets are all of subscribed topics), it is not armed at all.

What is removed, and at which check, is what Kafka's check removes: a group changes only by replaying records, and
after each record the step loop re-arms the timer no later than the first check that could then remove something
(`after`), and exactly at the step's end (`settled`):

- an offset committed: no later than that offset's own removal (the others' are unchanged);
- a pending transactional offset (it holds its partition until its marker) and a heartbeat owed change nothing;
- any other record (a rebalance, a member leaving, the group emptied, loaded or converted, offsets tombstoned, a
  transaction's end): the next check instant (none while the group's state expires nothing), and at the step's end
  the exact one. That reads the group's offsets, as a commit does; a step of heartbeats and commits only (a big
  group's common one) does not pay it.

A later timer is a call saved; an earlier one is a call that removes nothing and re-arms. Kafka applies its
configuration at every check, and a group's timer keeps the instant computed with the `offsets.retention.minutes` it
was armed under: so a query started with a shorter retention calls every group once (`state.batch.step_group`'s
`recheck_retention`, from the source's first new batch: `streaming.kafka_io.source`), which arms each check again
under the new retention (docs/wire-format.md).
"""

from __future__ import annotations

from typing import Callable, Collection, Iterable, Sequence

from schemas.messages import OffsetCommitKey, TxnOffsetCommitKey
from state.classic.group import ClassicGroup, GroupState
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.offset_values import OffsetValue
from state.records import HeartbeatOwed, Record
from state.handling.timers import OFFSETS_EXPIRATION, Cancel, Schedule, TimerOperation, next_retention_check


def retention_base(group: ClassicGroup | ConsumerGroup) -> Callable[[str, OffsetValue], int | None] | None:
    """Kafka's offsetExpirationCondition: for each offset, the time its retention counts from, or None when
    that offset must be kept (its topic is still subscribed). None overall: nothing of this group expires
    (a rebalancing group, or a live one whose subscriptions are unknown). A consumer group's offsets of topics
    no member subscribes to expire from their commit, whatever the group's state (Kafka 3.7+)."""
    if isinstance(group, ConsumerGroup):
        return lambda topic, offset: None if group.is_subscribed_to(topic) else offset.commit_timestamp
    if not group.protocol_type:  # a simple group: from each commit
        return lambda topic, offset: offset.commit_timestamp
    if group.state == GroupState.EMPTY:  # from when the group became Empty
        return lambda topic, offset: group.state_timestamp if group.state_timestamp >= 0 else offset.commit_timestamp
    if group.protocol_type == "consumer" and group.state == GroupState.STABLE and group.subscribed_topics is not None:
        subscribed = set(group.subscribed_topics)
        return lambda topic, offset: None if topic in subscribed else offset.commit_timestamp
    return None


def first_check_from(instant_ms: int, config: CoordinatorConfig) -> int:
    """The first retention-check instant at or after `instant_ms` (a check at `c` removes what is due by `c`)."""
    interval = max(config.offsets_retention_check_interval_ms, 1)
    return -(-instant_ms // interval) * interval


def next_check(group: ClassicGroup | ConsumerGroup, now_ms: int, config: CoordinatorConfig) -> int | None:
    """The first check instant after `now_ms` at which the retention check would remove something of `group` as it
    is (None: none would). Reads the group's offsets."""
    offsets = group.offsets
    if deletable(group):
        return next_retention_check(now_ms, config)  # the Empty group without offsets is deleted
    base = retention_base(group)
    if base is None:
        return None
    held = {(topic, partition) for _, topic, partition in offsets.pending}
    due = _first_removal(offsets.items(), base, config, held)
    if due is None:
        return None
    return max(next_retention_check(now_ms, config), first_check_from(due, config))


def after(group: ClassicGroup | ConsumerGroup, records: Sequence, at_ms: int,
          config: CoordinatorConfig) -> tuple[TimerOperation | None, bool]:
    """After `records` were replayed onto `group` at `at_ms`: the timer operation that keeps its check no later
    than the first that could remove something (None: the timer stands), and whether the step's end should arm the
    exact instant (`settled`)."""
    committed = []
    for record in records:
        kind = type(record)
        if kind is HeartbeatOwed:
            continue
        if kind is Record:
            key = type(record.key)
            if key is TxnOffsetCommitKey:
                continue
            if key is OffsetCommitKey and record.value is not None:
                committed.append((record.key.topic, record.key.partition))
                continue
        base = retention_base(group)
        if base is None:
            return (Cancel(OFFSETS_EXPIRATION) if OFFSETS_EXPIRATION in group.timers else None), True
        return _no_later(group, next_retention_check(at_ms, config)), True
    if not committed:
        return None, False
    base = retention_base(group)
    if base is None:
        return None, False
    values = group.offsets
    due = _first_removal(((tp, values.get(tp)) for tp in committed), base, config)
    if due is None:
        return None, False
    return _no_later(group, max(next_retention_check(at_ms, config), first_check_from(due, config))), False


def settled(group: ClassicGroup | ConsumerGroup, changed_ms: int, config: CoordinatorConfig) -> TimerOperation | None:
    """At the end of a step that changed the group by more than commits: the check at its exact instant. The group
    is as the step leaves it since `changed_ms`, its last record's instant (a request counts at its arrival, before
    the step's time), so every check after that instant sees it so: one already due fires at the next call, and a
    check between the arrival and the step that would remove nothing is not armed (before this, a batch of commits
    that straddled a check instant left every one of its groups due, and the next batch called them all again)."""
    armed = group.timers.get(OFFSETS_EXPIRATION)
    exact = next_check(group, changed_ms, config)
    if exact == armed:
        return None
    return Cancel(OFFSETS_EXPIRATION) if exact is None else Schedule(OFFSETS_EXPIRATION, exact)


def deletable(group: ClassicGroup | ConsumerGroup) -> bool:
    """Whether the retention check deletes the group itself: Empty (a consumer group: no members) and left without
    offsets, committed or pending."""
    empty = not group.members if isinstance(group, ConsumerGroup) else group.state == GroupState.EMPTY
    return empty and not group.offsets and not group.offsets.pending


def removable_from(value: OffsetValue, since_ms: int, config: CoordinatorConfig) -> int:
    """When the check may remove an offset whose retention counts from `since_ms` (its own expiry time wins)."""
    return value.expire_timestamp if value.expire_timestamp is not None else since_ms + config.offsets_retention_ms


def _first_removal(offsets: Iterable[tuple[tuple[str, int], OffsetValue | None]],
                   base: Callable[[str, OffsetValue], int | None], config: CoordinatorConfig,
                   held: Collection[tuple[str, int]] = ()) -> int | None:
    """The earliest instant at which the check may remove one of `offsets` (None: none of them expires); an offset
    whose partition a transaction holds (`held`) is kept."""
    due = None
    for tp, value in offsets:
        since = None if value is None or tp in held else base(tp[0], value)
        if since is None:
            continue
        at = removable_from(value, since, config)
        if due is None or at < due:
            due = at
    return due


def _no_later(group: ClassicGroup | ConsumerGroup, deadline_ms: int) -> TimerOperation | None:
    armed = group.timers.get(OFFSETS_EXPIRATION)
    return None if armed is not None and armed <= deadline_ms else Schedule(OFFSETS_EXPIRATION, deadline_ms)
