"""The `group.consumer.*` settings of Kafka's group coordinator (GroupCoordinatorConfig), with Kafka's names,
defaults and checks.

Kafka's per-group overrides (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`, set with
IncrementalAlterConfigs) are not served: every group uses these broker-wide values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True)
class ConsumerGroupConfig:
    group_coordinator_rebalance_protocols: tuple[str, ...] = ("classic", "consumer")
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = 2_147_483_647
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    """Server-side assignors by name; the first is the default one."""
    group_consumer_migration_policy: str = "bidirectional"
    group_consumer_regex_refresh_interval_ms: int = 600_000
    """Regular expressions are resolved again at least this often (Kafka 4.2+), besides when topics are created."""

    def __post_init__(self) -> None:
        """Kafka refuses the same inconsistent values at broker start (GroupCoordinatorConfig's `require`s)."""
        problems = []
        if not (self.group_consumer_min_session_timeout_ms <= self.group_consumer_session_timeout_ms
                <= self.group_consumer_max_session_timeout_ms):
            problems.append("group.consumer.session.timeout.ms must be between group.consumer.min.session.timeout.ms"
                            " and group.consumer.max.session.timeout.ms")
        if not (self.group_consumer_min_heartbeat_interval_ms <= self.group_consumer_heartbeat_interval_ms
                <= self.group_consumer_max_heartbeat_interval_ms):
            problems.append("group.consumer.heartbeat.interval.ms must be between"
                            " group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            problems.append("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
        if not self.group_consumer_assignors:
            problems.append("group.consumer.assignors must name at least one assignor")
        if self.group_consumer_max_size < 1:
            problems.append("group.consumer.max.size must be at least 1")
        if self.group_consumer_migration_policy.lower() not in MIGRATION_POLICIES:
            problems.append(f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def consumer_protocol_enabled(self) -> bool:
        return "consumer" in self.group_coordinator_rebalance_protocols

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ConsumerGroupConfig:
        """From Kafka's dotted keys; lists are comma-separated, as Kafka's LIST type; other keys are ignored."""
        values: dict[str, object] = {}
        for f in fields(cls):
            key = f.name.replace("_", ".")
            if key not in props:
                continue
            raw = props[key]
            if f.type == "tuple[str, ...]":
                values[f.name] = tuple(item.strip() for item in raw.split(",") if item.strip())
            elif f.type == "int":
                values[f.name] = int(raw)
            else:
                values[f.name] = raw.strip().lower()
        return cls(**values)  # type: ignore[arg-type]
