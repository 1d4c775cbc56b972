"""What a consumer-group handler returns (Kafka's CoordinatorResult) and the timers it asks for.

`Result(records, response, timers)`: the records to replay (the only way the group changes), the response (or
None), and timer operations in order: `Schedule(key, deadline_ms)` arms a timer, replacing one under the same key;
`Cancel(key)` drops it. Keys come from the functions below, one per kind of timer; a timer that fires is handed
back (`state.consumer.heartbeat.on_timer`) and re-checks what it was armed for, as Kafka's do.

Kafka's keys carry the group id (its timers are per shard); ours live with their group, so they name the member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from state.consumer.records import Record


@dataclass(frozen=True, slots=True)
class Schedule:
    key: str
    deadline_ms: int


@dataclass(frozen=True, slots=True)
class Cancel:
    key: str


TimerOp = Schedule | Cancel


@dataclass(frozen=True)
class Result:
    records: tuple[Record, ...] = ()
    response: Any = None
    timers: tuple[TimerOp, ...] = ()


SESSION_TIMEOUT_PREFIX = "consumer-session-timeout:"
REBALANCE_TIMEOUT_PREFIX = "consumer-rebalance-timeout:"
REGEX_REFRESH_KEY = "consumer-regex-refresh"
"""Kafka runs the resolution on an executor under `<group>-regex`; here it is a timer due at once."""


def session_timeout_key(member_id: str) -> str:
    """Kafka's groupSessionTimeoutKey: the member is fenced when it expires."""
    return SESSION_TIMEOUT_PREFIX + member_id


def rebalance_timeout_key(member_id: str, member_epoch: int) -> str:
    """Kafka's groupRebalanceTimeoutKey; the epoch the member had when it was asked to revoke is part of the key,
    as Kafka's timer captures it: the member is fenced only if it is still at that epoch."""
    return f"{REBALANCE_TIMEOUT_PREFIX}{member_epoch}:{member_id}"


def parse_rebalance_timeout_key(key: str) -> tuple[str, int]:
    """(member id, epoch) of a rebalance-timeout key."""
    epoch, _, member_id = key[len(REBALANCE_TIMEOUT_PREFIX):].partition(":")
    return member_id, int(epoch)
