"""A group's dynamic configs (Kafka's GroupConfig: ConfigResource type GROUP, IncrementalAlterConfigs and
DescribeConfigs), and the share settings they make effective.

A group's configs are kept with the group id whatever its kind, and exist before the group does: an operator sets
`share.auto.offset.reset=earliest` before the first consumer starts. Names, types, ranges and messages are Kafka
4.3's (the share ones it defines, and the consumer ones, which are validated and kept but not served: every
consumer group uses the coordinator's `group.consumer.*`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from state.config import CoordinatorConfig
from state.errors import CoordinatorError, Errors

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
"""IncrementalAlterConfigs' operations."""
CONFIG_TYPE = {"int": 3, "string": 2, "boolean": 1}
"""DescribeConfigs' ConfigType ids."""
GROUP_CONFIG_SOURCE, DEFAULT_CONFIG_SOURCE = 8, 5
"""DescribeConfigs' ConfigSource: set on the group, or the coordinator's value."""

_DURATION = re.compile(r"^-?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def _auto_offset_reset(value: str) -> str | None:
    """Kafka's ShareGroupAutoOffsetResetStrategy: `earliest`, `latest` or `by_duration:<ISO-8601 duration>`."""
    lowered = value.lower()
    if lowered in ("earliest", "latest"):
        return None
    if lowered.startswith("by_duration:"):
        duration = value[len("by_duration:"):]
        match = _DURATION.match(duration)
        if match is None or duration in ("P", "PT") or duration.startswith("-") or duration.endswith("T"):
            return f"Invalid duration: {duration}"
        return None
    return f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either 'earliest', " \
           "'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    type: str
    default: Callable[[CoordinatorConfig], str]
    check: Callable[[str, CoordinatorConfig], str | None]
    doc: str


def _int_between(name: str, low: Callable[[CoordinatorConfig], int] | int,
                 high: Callable[[CoordinatorConfig], int] | None, low_key: str = "", high_key: str = ""):
    def check(raw: str, config: CoordinatorConfig) -> str | None:
        try:
            value = int(raw.strip())
        except ValueError:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        if not -(2 ** 31) <= value < 2 ** 31:
            return f"Invalid value {raw} for configuration {name}: Not a number of type INT"
        lo = low(config) if callable(low) else low
        if value < lo:
            return (f"{name} must be greater than or equal to {low_key}" if low_key
                    else f"Invalid value {value} for configuration {name}: Value must be at least {lo}")
        if high is not None and value > high(config):
            return f"{name} must be less than or equal to {high_key}"
        return None
    return check


def _one_of(name: str, values: Sequence[str]):
    def check(raw: str, config: CoordinatorConfig) -> str | None:
        if raw not in values:
            return f"Invalid value {raw} for configuration {name}: String must be one of: {', '.join(values)}"
        return None
    return check


def _boolean(name: str):
    def check(raw: str, config: CoordinatorConfig) -> str | None:
        if raw.strip().lower() not in ("true", "false"):
            return f"Invalid value {raw} for configuration {name}: Expected value to be either true or false"
        return None
    return check


def _defs() -> dict[str, GroupConfigDef]:
    c = CoordinatorConfig
    defs = [
        GroupConfigDef("consumer.session.timeout.ms", "int", lambda c: str(c.group_consumer_session_timeout_ms),
                       _int_between("consumer.session.timeout.ms", lambda c: c.group_consumer_min_session_timeout_ms,
                                    lambda c: c.group_consumer_max_session_timeout_ms,
                                    "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
                       "The timeout to detect client failures when using the consumer group protocol (kept, not "
                       "served here)."),
        GroupConfigDef("consumer.heartbeat.interval.ms", "int", lambda c: str(c.group_consumer_heartbeat_interval_ms),
                       _int_between("consumer.heartbeat.interval.ms",
                                    lambda c: c.group_consumer_min_heartbeat_interval_ms,
                                    lambda c: c.group_consumer_max_heartbeat_interval_ms,
                                    "group.consumer.min.heartbeat.interval.ms",
                                    "group.consumer.max.heartbeat.interval.ms"),
                       "The heartbeat interval given to the members of a consumer group (kept, not served here)."),
        GroupConfigDef("share.session.timeout.ms", "int", lambda c: str(c.group_share_session_timeout_ms),
                       _int_between("share.session.timeout.ms", lambda c: c.group_share_min_session_timeout_ms,
                                    lambda c: c.group_share_max_session_timeout_ms,
                                    "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
                       "The timeout to detect client failures when using the share group protocol."),
        GroupConfigDef("share.heartbeat.interval.ms", "int", lambda c: str(c.group_share_heartbeat_interval_ms),
                       _int_between("share.heartbeat.interval.ms", lambda c: c.group_share_min_heartbeat_interval_ms,
                                    lambda c: c.group_share_max_heartbeat_interval_ms,
                                    "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
                       "The heartbeat interval given to the members of a share group."),
        GroupConfigDef("share.record.lock.duration.ms", "int", lambda c: str(c.group_share_record_lock_duration_ms),
                       _int_between("share.record.lock.duration.ms",
                                    lambda c: c.group_share_min_record_lock_duration_ms,
                                    lambda c: c.group_share_max_record_lock_duration_ms,
                                    "group.share.min.record.lock.duration.ms",
                                    "group.share.max.record.lock.duration.ms"),
                       "The record acquisition lock duration in milliseconds for share groups."),
        GroupConfigDef("share.delivery.count.limit", "int", lambda c: str(c.group_share_delivery_count_limit),
                       _int_between("share.delivery.count.limit", lambda c: c.group_share_min_delivery_count_limit,
                                    lambda c: c.group_share_max_delivery_count_limit,
                                    "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
                       "The maximum number of delivery attempts for a record delivered to a share group."),
        GroupConfigDef("share.partition.max.record.locks", "int",
                       lambda c: str(c.group_share_partition_max_record_locks),
                       _int_between("share.partition.max.record.locks",
                                    lambda c: c.group_share_min_partition_max_record_locks,
                                    lambda c: c.group_share_max_partition_max_record_locks,
                                    "group.share.min.partition.max.record.locks",
                                    "group.share.max.partition.max.record.locks"),
                       "Share-group record lock limit per share-partition."),
        GroupConfigDef("share.auto.offset.reset", "string", lambda c: "latest",
                       lambda raw, c: _auto_offset_reset(raw),
                       "The strategy to initialize the share-partition start offset: earliest, latest, or "
                       "by_duration:<ISO-8601 duration>."),
        GroupConfigDef("share.isolation.level", "string", lambda c: "read_uncommitted",
                       _one_of("share.isolation.level", ("read_committed", "read_uncommitted")),
                       "Controls how to read records written transactionally."),
        GroupConfigDef("share.renew.acknowledge.enable", "boolean", lambda c: "true",
                       _boolean("share.renew.acknowledge.enable"),
                       "Whether the renew acknowledge type (KIP-1222) is accepted."),
        GroupConfigDef("share.assignment.interval.ms", "int", lambda c: str(c.group_share_assignment_interval_ms),
                       _int_between("share.assignment.interval.ms", 0, None),
                       "The minimum time between two target assignment computations of a share group."),
    ]
    del c
    return {d.name: d for d in defs}


GROUP_CONFIGS = _defs()
"""By name, in Kafka's order."""


def alter(current: Mapping[str, str], operations: Sequence[tuple[str, int, str | None]],
          config: CoordinatorConfig) -> dict[str, str]:
    """The group's configs after IncrementalAlterConfigs' `operations` (name, operation, value): SET and DELETE
    (APPEND and SUBTRACT apply to list configs only, and a group has none); everything validated as Kafka's
    GroupConfig.validate, the set values together with the coordinator's for the rest. INVALID_CONFIG (40), or
    INVALID_REQUEST for an unknown operation or a name given twice, as Kafka answers."""
    names = [name for name, _, _ in operations]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"Error due to duplicate config keys : {duplicates}")
    after = dict(current)
    for name, operation, value in operations:
        if name not in GROUP_CONFIGS:
            raise CoordinatorError(Errors.INVALID_CONFIG, f"Unknown group config name: {name}")
        if operation == SET:
            if value is None:
                raise CoordinatorError(Errors.INVALID_REQUEST, f"Null value not supported for : {name}")
            after[name] = value
        elif operation == DELETE:
            after.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            raise CoordinatorError(Errors.INVALID_CONFIG, f"Config value append is not allowed for config key: "
                                                          f"{name}" if operation == APPEND else
                                   f"Config value subtract is not allowed for config key: {name}")
        else:
            raise CoordinatorError(Errors.INVALID_REQUEST, f"Unknown alter config operation type {operation}")
    validate(after, config)
    return after


def validate(values: Mapping[str, str], config: CoordinatorConfig) -> None:
    for name, raw in values.items():
        problem = GROUP_CONFIGS[name].check(raw, config)
        if problem is not None:
            raise CoordinatorError(Errors.INVALID_CONFIG, problem)
    settings = ShareSettings.of(values, config)
    if settings.heartbeat_interval_ms >= settings.session_timeout_ms:
        raise CoordinatorError(Errors.INVALID_CONFIG,
                               "share.session.timeout.ms must be greater than share.heartbeat.interval.ms")


@dataclass(frozen=True)
class ShareSettings:
    """A share group's effective settings: its configs over the coordinator's."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str
    isolation_level: str
    assignment_interval_ms: int

    @classmethod
    def of(cls, values: Mapping[str, str], config: CoordinatorConfig) -> ShareSettings:
        def get(name: str) -> str:
            raw = values.get(name)
            return GROUP_CONFIGS[name].default(config) if raw is None else raw
        return cls(int(get("share.session.timeout.ms")), int(get("share.heartbeat.interval.ms")),
                   int(get("share.record.lock.duration.ms")), int(get("share.delivery.count.limit")),
                   int(get("share.partition.max.record.locks")), get("share.auto.offset.reset").lower(),
                   get("share.isolation.level"), int(get("share.assignment.interval.ms")))


def describe(values: Mapping[str, str], keys: Sequence[str] | None,
             config: CoordinatorConfig) -> list[tuple[GroupConfigDef, str, bool]]:
    """DescribeConfigs of a GROUP resource: every group config (or those named that exist), its value, and whether
    it is set on the group."""
    names = list(GROUP_CONFIGS) if keys is None else [k for k in keys if k in GROUP_CONFIGS]
    out = []
    for name in names:
        d = GROUP_CONFIGS[name]
        out.append((d, values[name] if name in values else d.default(config), name in values))
    return out
