"""Coordinator configuration: Kafka's broker keys and defaults (GroupCoordinatorConfig, ShareGroupConfig), for the
three kinds of group.

The classic group's settings (`group.*`, `offsets.*`) and the consumer group's (`group.consumer.*`, KIP-848) have
Kafka's names, defaults and start-up checks. Kafka's per-group overrides of the consumer group's session timeout
and heartbeat interval (`consumer.session.timeout.ms`, `consumer.heartbeat.interval.ms`, set with
IncrementalAlterConfigs) are not served: every group uses these values.

`read_properties` and `kafka_python_settings` read Kafka's properties files and client settings, for the job and the
admin tool alike (`conf/coordinator.properties`, the admin tool's `--command-config`). They live in the core's
package because both the job (its executors too, which get `state/` but not `client/` or `admin/`) and the admin
tool need them, and neither should import the other; they touch no Kafka client and no group state.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Mapping

NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
"""Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: not configurable there, not here."""

MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
"""`group.consumer.migration.policy`: which online conversions between the protocols are allowed."""


@dataclass(frozen=True)
class CoordinatorConfig:
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2_147_483_647
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    coordinator_session_reset_lateness_ms: int = 5000
    """Our extension (Kafka has no such key): when a call comes more than this late (after a timer's deadline or a
    queued request's arrival), the coordinator was not running (a driver outage, a stalled query): every member's
    session restarts from now and the queued requests count from now, as when Kafka loads a group on failover.
    <= 0 disables it: a late call then gives exactly what timely calls would have (Kafka's timers), which the
    tests that pin those semantics set. One default, the job's and the core's alike."""
    # -- KIP-848's consumer groups ------------------------------------------------------------------------------
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

    # -- KIP-932's share groups ----------------------------------------------------------------------------------
    share_version: int = 1
    """Kafka's feature `share.version`: 1 serves share groups, 0 refuses their APIs (UNSUPPORTED_VERSION)."""
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_partition_max_record_locks: int = 2000
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4000
    group_share_assignment_interval_ms: int = 1000
    """Kafka 4.3 (KIP-1263): a share group's target assignment is computed at most this often."""
    share_partition_lease_ms: int = 30_000
    """Ours: how long a gateway holds a share-partition the coordinator granted it without renewing
    (docs/share-groups.md)."""
    share_partition_lease_margin_ms: int = 3_000
    """Ours: a holder stops serving this long before its lease ends on its own clock."""

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
        if self.group_consumer_migration_policy not in MIGRATION_POLICIES:
            problems.append(f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}")
        for name, low, value, high in (
                ("session.timeout.ms", self.group_share_min_session_timeout_ms, self.group_share_session_timeout_ms,
                 self.group_share_max_session_timeout_ms),
                ("heartbeat.interval.ms", self.group_share_min_heartbeat_interval_ms,
                 self.group_share_heartbeat_interval_ms, self.group_share_max_heartbeat_interval_ms),
                ("record.lock.duration.ms", self.group_share_min_record_lock_duration_ms,
                 self.group_share_record_lock_duration_ms, self.group_share_max_record_lock_duration_ms),
                ("delivery.count.limit", self.group_share_min_delivery_count_limit,
                 self.group_share_delivery_count_limit, self.group_share_max_delivery_count_limit),
                ("partition.max.record.locks", self.group_share_min_partition_max_record_locks,
                 self.group_share_partition_max_record_locks, self.group_share_max_partition_max_record_locks)):
            if not low <= value <= high:
                problems.append(f"group.share.{name} must be between group.share.min.{name} and "
                                f"group.share.max.{name}")
        if self.group_share_heartbeat_interval_ms >= self.group_share_session_timeout_ms:
            problems.append("group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms")
        if not 0 < self.share_partition_lease_margin_ms < self.share_partition_lease_ms:
            problems.append("share.partition.lease.margin.ms must be above 0 and below share.partition.lease.ms")
        if problems:
            raise ValueError("; ".join(problems))

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> "CoordinatorConfig":
        """Build from Kafka-style dotted keys (`group.max.size`); keys this class does not know are ignored,
        so one properties file can also carry the job's topic and Spark keys. Lists are comma-separated (Kafka's
        LIST type); the migration policy is case-insensitive, as Kafka's."""
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

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @property
    def consumer_protocol_enabled(self) -> bool:
        return "consumer" in self.group_coordinator_rebalance_protocols

    def migration_allows(self, direction: str) -> bool:
        """Whether `group.consumer.migration.policy` allows an online `upgrade` (classic -> consumer) or
        `downgrade` (consumer -> classic)."""
        policy = self.group_consumer_migration_policy
        return policy == "bidirectional" or policy == direction


# -- properties files ----------------------------------------------------------------------------------------

def read_properties(path: Path) -> dict[str, str]:
    """Java-properties subset: `key=value` or `key: value` lines, `#`/`!` comments, surrounding blanks ignored."""
    props: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            props[line] = ""
        else:
            props[line[:sep].strip()] = line[sep + 1:].strip()
    return props


def kafka_python_settings(props: Mapping[str, str]) -> dict[str, object]:
    """kafka-python keyword arguments from Kafka client property names (dots become underscores, case is folded);
    numeric strings become ints because kafka-python's settings are typed and properties are strings."""
    return {key.lower().replace(".", "_"): int(value) if isinstance(value, str) and value.lstrip("-").isdigit()
            else value for key, value in props.items()}
