"""Timer keys, deadlines and operations, as Kafka's CoordinatorTimer: one deadline per key, re-arming replaces it.

A handler asks for timers with `Schedule(key, deadline_ms)` and `Cancel(key)` in its result (`state.handling.step`);
keys come from the names and functions below. All timers of a group
live in `ClassicGroup.timers` (key -> deadline in ms); the shell is called back at the earliest one (`earliest`). A
timer fires when now >= deadline (`is_due`, Java's MockCoordinatorTimer boundary). These two rules are the core's; the
job asks them through `streaming.bucket_deadlines` only.
"""

from __future__ import annotations

from typing import Iterable

from msgspec import Struct

from state.config import CoordinatorConfig


class Schedule(Struct, frozen=True, gc=False):
    """Arm the timer `key` at `deadline_ms`, replacing its deadline if it is armed."""

    key: str
    deadline_ms: int


class Cancel(Struct, frozen=True, gc=False):
    key: str


TimerOperation = Schedule | Cancel

JOIN = "join"
"""The join phase: the initial-rebalance delay (KIP-134) or the rebalance timeout."""
SYNC = "sync"
"""The pending-sync timeout after a join phase completes."""
OFFSETS_EXPIRATION = "offsets-expiration"
"""The periodic offset retention check (KIP-211)."""
HEARTBEAT_PREFIX = "heartbeat:"
"""+ member id: the session timer of a member, or of a pending member (as Kafka, one key for both)."""


CONSUMER_SESSION_TIMEOUT_PREFIX = "consumer-session-timeout:"
"""+ member id: a consumer group member's session (Kafka's groupSessionTimeoutKey): it is fenced when it expires."""
CONSUMER_REBALANCE_TIMEOUT_PREFIX = "consumer-rebalance-timeout:"
"""+ epoch:member id: the deadline for a consumer group member to revoke partitions (Kafka's
groupRebalanceTimeoutKey)."""
CONSUMER_JOIN_TIMEOUT_PREFIX = "consumer-join-timeout:"
"""+ member id: a classic member of a consumer group told to rejoin must do so within its rebalance timeout
(Kafka's consumerGroupJoinKey), else it is fenced."""
CONSUMER_SYNC_TIMEOUT_PREFIX = "consumer-sync-timeout:"
"""+ member id: a classic member of a consumer group must send its SyncGroup within its rebalance timeout of its
JoinGroup (Kafka's consumerGroupSyncKey), else it is fenced."""
CONSUMER_REGEX_REFRESH = "consumer-regex-refresh"
"""A consumer group's regular expressions are resolved again (Kafka runs that on an executor under `<group>-regex`;
here it is a timer due at once)."""
# Kafka's keys carry the group id (its timers are per shard); ours live with their group, so they name the member.


def is_due(deadline_ms: int, now_ms: int) -> bool:
    """Whether a deadline has come at `now_ms`."""
    return deadline_ms <= now_ms


def earliest(deadlines: Iterable[int | None]) -> int | None:
    """The first of some deadlines, None among them meaning none (and None when there is none): when a group's
    timers, or a bucket's groups, next come due."""
    return min((d for d in deadlines if d is not None), default=None)


def heartbeat_key(member_id: str) -> str:
    return HEARTBEAT_PREFIX + member_id


def next_retention_check(now_ms: int, config: CoordinatorConfig) -> int:
    """Checks run at multiples of the interval (Kafka runs them every interval from coordinator start; aligning
    them to the epoch gives every group the same schedule without knowing when the job started)."""
    interval = max(config.offsets_retention_check_interval_ms, 1)
    return (now_ms // interval + 1) * interval


def consumer_session_timeout_key(member_id: str) -> str:
    return CONSUMER_SESSION_TIMEOUT_PREFIX + member_id


def consumer_join_timeout_key(member_id: str) -> str:
    return CONSUMER_JOIN_TIMEOUT_PREFIX + member_id


def consumer_sync_timeout_key(member_id: str) -> str:
    return CONSUMER_SYNC_TIMEOUT_PREFIX + member_id


def consumer_rebalance_timeout_key(member_id: str, member_epoch: int) -> str:
    """The epoch the member had when it was asked to revoke is part of the key, as Kafka's timer captures it: the
    member is fenced only if it is still at that epoch."""
    return f"{CONSUMER_REBALANCE_TIMEOUT_PREFIX}{member_epoch}:{member_id}"


def parse_consumer_rebalance_timeout_key(key: str) -> tuple[str, int]:
    """(member id, epoch) of a consumer rebalance-timeout key."""
    epoch, _, member_id = key[len(CONSUMER_REBALANCE_TIMEOUT_PREFIX):].partition(":")
    return member_id, int(epoch)
