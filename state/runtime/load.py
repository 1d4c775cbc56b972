"""Rebuild a group from its records, as Kafka loads `__consumer_offsets` when it becomes coordinator.

One rebuild path: the written records are replayed with the same `state.runtime.replay.replay` a live call uses,
then `on_loaded` does what Kafka's `GroupMetadataManager.onLoaded` does, through the same records and timers as any
handler: the membership comes back from the last persisted group value (`GroupLoaded`: Stable with its members and
assignments, or Empty, whatever state the `directory` part names; the transition table sees the path there), every
member gets a fresh session timer, and a group above `group.max.size` rebalances. Offsets are the latest record
per partition.

A record that cannot be decoded is not skipped in silence: it is logged with where it was read (its records-topic
partition and offset, when the caller says; otherwise its position in the records given) and returned in `Loaded.unreadable`, which the caller counts (a LoadGroup request turns each into a dead letter).
The group still loads from the other records, as a consumer of a compacted topic would; what the bad record held
is reported, not guessed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import msgspec

from state.config import CoordinatorConfig
from state.consumer import handlers as consumer
from state.consumer.group import ConsumerGroup
from state.classic.group import ClassicGroup
from state.classic.handlers import create_group, prepare_rebalance, session
from state.classic.records import CLASSIC_KEYS
from state.handling.step import NOTHING, CoordinatorResult, Env
from state.runtime.replay import applied, replay, then
from schemas.share_group import GroupConfigKey
from state.share import handlers as share
from state.share.group import ShareGroup
from state.records import GroupLoaded, decode_record
from state.handling.timers import OFFSETS_EXPIRATION, Schedule, next_retention_check

log = logging.getLogger(__name__)



@dataclass
class Loaded:
    group: ClassicGroup | ConsumerGroup | ShareGroup | None
    """The group as the records leave it; None: they leave none."""
    unreadable: list[tuple[int, str]] = field(default_factory=list)
    """(position in the records given, why) of every record that could not be decoded."""
    configs: dict[str, str] = field(default_factory=dict)
    """The group id's dynamic configs (record version 101), whatever its kind."""


def load(group_id: str, records: Iterable[tuple[bytes, bytes | None]], now_ms: int,
         config: CoordinatorConfig, read_at: Sequence[tuple[int, int]] = ()) -> Loaded:
    """Replay this group's records (other groups' are passed over), then `on_loaded`. `read_at`, when given, holds
    each record's (partition, offset) in the records topic, which names a record that cannot be decoded."""
    env = Env(now_ms, config)
    group: ClassicGroup | ConsumerGroup | ShareGroup | None = None
    configs: dict[str, str] = {}
    unreadable = []
    for position, (raw_key, raw_value) in enumerate(records):
        try:
            record = decode_record(raw_key, raw_value)
        except msgspec.DecodeError as exc:
            where = _where(position, read_at)
            log.error("group %s: %s of its load cannot be decoded, not loaded: %s", group_id, where, exc)
            unreadable.append((position, f"{where} cannot be decoded: {exc}"))
            continue
        if record.key.group_id != group_id:
            continue
        if group is None:
            if record.value is None:
                continue  # a tombstone of what is not there
            if isinstance(record.key, CLASSIC_KEYS):
                group = applied(None, create_group(group_id, env))  # a consumer group's record creates its own
        if type(record.key) is GroupConfigKey:
            configs = {} if record.value is None else dict(record.value.configs)  # type: ignore[union-attr]
        group = replay(group, record)
    if group is not None:
        group = applied(group, on_loaded(group, env.replace(timers=group.timers, group_configs=configs)))
    return Loaded(group, unreadable, configs)


def _where(position: int, read_at: Sequence[tuple[int, int]]) -> str:
    if position < len(read_at) and read_at[position][1] >= 0:
        partition, offset = read_at[position]
        return f"records-topic partition {partition} offset {offset}"
    return f"record {position}"


def on_loaded(group: ClassicGroup | ConsumerGroup | ShareGroup, env: Env) -> CoordinatorResult:
    """Kafka's onLoaded, in the one handler shape (`state.handling.step`)."""
    if isinstance(group, ConsumerGroup):
        return consumer.loaded(group, env)
    if isinstance(group, ShareGroup):
        return share.restarted(group, env)
    done = NOTHING
    if group.directory is not None:  # a group metadata record was loaded: its members come back
        group, done = then(group, done, CoordinatorResult([GroupLoaded(group.persisted)]))  # type: ignore[arg-type]
        group, done = then(group, done, CoordinatorResult([], [], [session(member, env)
                                                                   for member in group.members.values()]))
    retention = Schedule(OFFSETS_EXPIRATION, next_retention_check(env.now_ms, env.config))
    group, done = then(group, done, CoordinatorResult([], [], [retention]))
    if len(group.members) > env.config.group_max_size:
        return done + prepare_rebalance(group, env)
    return done
