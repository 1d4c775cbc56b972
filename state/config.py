"""Coordinator configuration: Kafka's broker keys and defaults (GroupCoordinatorConfig)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
"""Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: not configurable there, not here."""


@dataclass(frozen=True)
class CoordinatorConfig:
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2_147_483_647
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    coordinator_session_reset_lateness_ms: int = 0
    """Our extension (Kafka has no such key): when a call comes more than this late (after a timer's deadline or a
    queued request's arrival), the coordinator was not running (a driver outage, a stalled query): every member's
    session restarts from now and the queued requests count from now, as when Kafka loads a group on failover. <= 0 (the core's
    default: a late call then gives exactly what timely calls would have) disables; the job's
    conf/coordinator.properties enables it."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "CoordinatorConfig":
        """Build from Kafka-style dotted keys (`group.max.size`); keys this class does not know are ignored,
        so one properties file can also carry the job's topic and Spark keys."""
        known = {f.name.replace("_", "."): f.name for f in fields(cls)}
        values = {known[k]: int(v) for k, v in props.items() if k in known}
        return cls(**values)

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
