"""The retention check is armed at the first check instant at which it removes something, and the group is called
for it then only (issue 35, `state.offsets.retention`): what is removed, and at which instant of Kafka's
every-interval schedule, is what Kafka's check removes."""

from __future__ import annotations

from state.config import CoordinatorConfig
from state.classic.group import GroupState
from state.handling.timers import OFFSETS_EXPIRATION
from tests.state.context import GroupContext, subscription

INTERVAL = 600_000
WEEK = 7 * 24 * 3600 * 1000


def first_check_from(instant_ms: int, interval_ms: int = INTERVAL) -> int:
    """Kafka's check runs every interval: the first run at or after `instant_ms`."""
    return -(-instant_ms // interval_ms) * interval_ms


def called_until(ctx: GroupContext, end_ms: int) -> list[int]:
    """Step the group as the query calls it, at each of its deadlines that comes due up to `end_ms` (a session's,
    a join window's, the retention check's): the instants it was called."""
    called = []
    while ctx.state is not None and ctx.last.next_deadline_ms is not None and ctx.last.next_deadline_ms <= end_ms:
        ctx.now_ms = max(ctx.now_ms, ctx.last.next_deadline_ms)
        ctx.step()
        called.append(ctx.now_ms)
    return called


def test_an_empty_group_is_called_once_in_its_retention_when_its_offsets_expire():
    """Before, an Empty group was called at every check, 1,008 times in the week its offsets lived."""
    ctx = GroupContext(CoordinatorConfig(group_initial_rebalance_delay_ms=0), now_ms=1_000_000)
    (a,) = ctx.stable_group(1)
    ctx.commit({("t", 0): 5, ("t", 1): 6}, member_id=a, generation=1)
    ctx.sleep(1_234)
    ctx.leave(a)
    empty_since = ctx.group.state_timestamp
    assert ctx.group.state == GroupState.EMPTY and empty_since == ctx.now_ms
    expires = first_check_from(empty_since + WEEK)  # Kafka: the first check with now - emptied >= retention
    assert ctx.group.timers == {OFFSETS_EXPIRATION: expires}
    assert called_until(ctx, expires + 3 * INTERVAL) == [expires]
    assert ctx.state is None  # both offsets expired and the Empty group with them, at that check
    assert ctx.records[-3:] == [(b'{"version":1,"group":"g","topic":"t","partition":0}', None),
                                (b'{"version":1,"group":"g","topic":"t","partition":1}', None),
                                (b'{"version":2,"group":"g"}', None)]


def test_no_check_while_the_check_would_remove_nothing():
    """A Stable group whose offsets are all of subscribed topics, and a rebalancing group, have none armed: only
    their sessions call them. An offset of a topic no member subscribes to arms it at that offset's expiry."""
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0, offsets_retention_minutes=1,
                               offsets_retention_check_interval_ms=1_000)
    ctx = GroupContext(config, now_ms=500)
    (a,) = ctx.stable_group(1, protocols=[("range", subscription("t"))], session=600_000)
    ctx.commit({("t", 0): 1}, member_id=a, generation=1)
    assert OFFSETS_EXPIRATION not in ctx.group.timers
    ctx.sleep(250)
    committed_at = ctx.now_ms
    ctx.commit({("old", 0): 2}, member_id=a, generation=1)
    assert ctx.group.timers[OFFSETS_EXPIRATION] == first_check_from(committed_at + 60_000, 1_000)
    assert called_until(ctx, committed_at + 60_000 + 1_000) == [first_check_from(committed_at + 60_000, 1_000)]
    assert ctx.committed() == {("t", 0): 1} and OFFSETS_EXPIRATION not in ctx.group.timers
    ctx.join(a, protocols=[("range", subscription("t"))], session=600_000, rebalance=600_000)
    assert ctx.group.state == GroupState.COMPLETING_REBALANCE and OFFSETS_EXPIRATION not in ctx.group.timers


def test_a_commit_expiring_sooner_brings_the_check_forward():
    """A v2 commit's own retention time (KIP-211 keeps it for old clients) expires before the group's week."""
    ctx = GroupContext(now_ms=42)
    ctx.commit({("t", 0): 1})  # a simple group: each offset from its commit
    assert ctx.group.timers[OFFSETS_EXPIRATION] == first_check_from(42 + WEEK)
    ctx.sleep(100)
    ctx.commit({("t", 1): 1}, version=2, retention_time_ms=1_000)
    assert ctx.group.timers[OFFSETS_EXPIRATION] == INTERVAL
    assert called_until(ctx, INTERVAL) == [INTERVAL]
    assert ctx.committed() == {("t", 0): 1}
    assert ctx.group.timers[OFFSETS_EXPIRATION] == first_check_from(42 + WEEK)


def test_an_empty_group_without_offsets_is_deleted_at_the_next_check_as_before():
    ctx = GroupContext(CoordinatorConfig(group_initial_rebalance_delay_ms=0), now_ms=7)
    (a,) = ctx.stable_group(1)
    ctx.leave(a)
    assert ctx.group.timers == {OFFSETS_EXPIRATION: INTERVAL}
    assert called_until(ctx, 2 * INTERVAL) == [INTERVAL] and ctx.state is None


def test_a_commit_that_arrived_before_a_check_and_was_stepped_after_it_leaves_nothing_due():
    """A batch runs after its requests arrived, seconds later under load: a check instant in between saw the group
    as its commit left it (nothing to remove for a week), so it is not due when stored. Through the real query,
    5,000 commits that straddled a 2 s check were all called again in the next batch before this."""
    ctx = GroupContext(now_ms=INTERVAL + 5_000)
    arrived = 2 * INTERVAL - 1_000
    ctx.now_ms = 2 * INTERVAL + 2_000
    ctx.step({"api": "OffsetCommit", "request_id": "c", "group_id": "g", "generation_id_or_member_epoch": -1,
              "member_id": "", "topics": [{"name": "t", "partitions": [{"partition_index": 0,
                                                                          "committed_offset": 1}]}]},
             times=[arrived])
    assert ctx.last.next_deadline_ms == first_check_from(arrived + WEEK) > ctx.now_ms


def test_a_recheck_arms_the_check_again_under_a_shorter_retention():
    """Kafka applies `offsets.retention.minutes` at every check; a group's check is armed under the retention of the
    call that armed it. A query started with a shorter one calls every group once with `recheck_retention` (its
    first new batch, `streaming.kafka_io.source`): the check is armed again at the next check instant, when the
    offset, committed two hours before under a week's retention, is past the new hour's; then it goes, and the
    simple group left without offsets with it. Without the recheck the week's instant stood."""
    from state.batch import decode_state, step_group

    ctx = GroupContext(now_ms=42)
    ctx.commit({("t", 0): 1})  # a simple group: its offset expires a week after its commit
    assert ctx.group.timers[OFFSETS_EXPIRATION] == first_check_from(42 + WEEK)
    now = 42 + 2 * 3600 * 1000 + 5
    hour = CoordinatorConfig(offsets_retention_minutes=60)

    plain = step_group("g", ctx.state, [], now, hour)
    assert decode_state(plain.stored(ctx.state)).timers[OFFSETS_EXPIRATION] == first_check_from(42 + WEEK)

    rechecked = step_group("g", ctx.state, [], now, hour, recheck_retention=True)
    check = first_check_from(now + 1)
    assert rechecked.next_deadline_ms == check
    assert decode_state(rechecked.stored(ctx.state)).timers[OFFSETS_EXPIRATION] == check
    assert rechecked.records == [] and rechecked.responses == []  # the recheck itself changes nothing else

    gone = step_group("g", rechecked.stored(ctx.state), [], check, hour)
    assert gone.metadata is None
    assert gone.records == [(b'{"version":1,"group":"g","topic":"t","partition":0}', None),
                            (b'{"version":2,"group":"g"}', None)]

    # an offset not yet past the shorter retention: armed at its own expiry under it
    fresh = step_group("g", ctx.state, [], 42 + 10 * 60 * 1000, hour, recheck_retention=True)
    assert fresh.next_deadline_ms == first_check_from(42 + 3600 * 1000)
