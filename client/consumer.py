"""A KafkaConsumer look-alike whose group membership goes through this project's coordinator.

kafka-python's `KafkaConsumer` does the fetching, driven by `assign()`; a `GroupMember` does the group protocol
over the control topic. The rebalance callbacks glue them together the way Kafka's `ConsumerCoordinator` does:
before partitions are revoked their positions are committed (auto-commit), newly assigned partitions start from
the group's committed offsets (or `auto_offset_reset` when there is none), lost partitions are dropped without a
commit. Existing code that uses `subscribe`, `poll`, `commit`, `committed`, `assignment` and `close` changes only
where it constructs the consumer.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Iterable, Mapping

from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from kafka.structs import OffsetAndMetadata

from client.errors import GroupError
from client.member import GroupMember, MemberConfig, MemberState, NoOpListener, RebalanceListener
from client.transport import DEFAULT_CONTROL_TOPIC, DEFAULT_RESPONSE_TOPIC, KafkaTransport, Transport

log = logging.getLogger(__name__)

_MEMBER_KEYS = {
    "client_id",
    "group_instance_id",
    "session_timeout_ms",
    "heartbeat_interval_ms",
    "retry_backoff_ms",
    "request_timeout_ms",
    "metadata_max_age_ms",
}


class GroupConsumer:
    """`GroupConsumer(*topics, bootstrap_servers=..., group_id=..., ...)`, with KafkaConsumer's option names.

    Group options: `group_instance_id`, `session_timeout_ms`, `heartbeat_interval_ms`, `max_poll_interval_ms`
    (sent as the rebalance timeout), `partition_assignment_strategy` (names: `range`, `roundrobin`, `sticky`,
    `cooperative-sticky`, or `server:uniform` / `server:range` to let the coordinator assign),
    `enable_auto_commit`, `auto_commit_interval_ms`, `auto_offset_reset`. `control_topic` / `response_topic`
    name the coordinator's topics. Anything else goes to the underlying KafkaConsumer."""

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str,
        group_id: str,
        control_topic: str = DEFAULT_CONTROL_TOPIC,
        response_topic: str = DEFAULT_RESPONSE_TOPIC,
        partition_assignment_strategy: Iterable[str] = ("range", "cooperative-sticky"),
        max_poll_interval_ms: int = 300_000,
        enable_auto_commit: bool = True,
        auto_commit_interval_ms: int = 5_000,
        auto_offset_reset: str = "latest",
        transport: Transport | None = None,
        **config: Any,
    ) -> None:
        member_opts = {k: config.pop(k) for k in list(config) if k in _MEMBER_KEYS}
        member_opts.setdefault("client_id", "groupcoord-consumer")
        self._auto_commit = enable_auto_commit
        self._auto_commit_interval_s = auto_commit_interval_ms / 1000
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        self._auto_offset_reset = auto_offset_reset
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap_servers,
            client_id=member_opts["client_id"],
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset=auto_offset_reset,
            **config,
        )
        # Partition counts for the member, on their own connection: the member's join round runs on another
        # thread than the application's fetching, and KafkaConsumer is not thread-safe.
        self._metadata = KafkaConsumer(
            bootstrap_servers=bootstrap_servers, client_id=f"{member_opts['client_id']}-metadata", group_id=None,
            enable_auto_commit=False, **config,
        )
        self._metadata_lock = threading.Lock()
        self._owns_transport = transport is None
        self._transport: Transport = transport or KafkaTransport(
            bootstrap_servers, control_topic, response_topic, client_id=f"{member_opts['client_id']}-coordinator"
        )
        self._user_listener: RebalanceListener = NoOpListener()
        self._member = GroupMember(
            self._transport,
            MemberConfig(
                group_id=group_id,
                rebalance_timeout_ms=max_poll_interval_ms,
                partition_assignment_strategy=tuple(partition_assignment_strategy),
                **member_opts,
            ),
            self._partition_counts,
            listener=_Glue(self),
        )
        if topics:
            self.subscribe(topics)

    # -- KafkaConsumer's API --------------------------------------------------------------------------

    @property
    def member(self) -> GroupMember:
        return self._member

    def subscribe(self, topics: Iterable[str], listener: RebalanceListener | None = None) -> None:
        if listener is not None:
            self._user_listener = listener
        self._member.subscribe(topics)

    def subscription(self) -> set[str]:
        return set(self._member.subscription)

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, p in self._member.assignment()}

    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Take part in the group (re-joining if it rebalances, running callbacks), auto-commit when due,
        then fetch from the assigned partitions."""
        start = time.monotonic()
        self._member.poll(timeout_ms / 1000)
        self._maybe_auto_commit()
        remaining = max(0, int(timeout_ms - (time.monotonic() - start) * 1000))
        if not self._consumer.assignment():
            time.sleep(remaining / 1000)
            return {}
        return self._consumer.poll(timeout_ms=remaining, max_records=max_records)

    def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None) -> None:
        """Commit `offsets`, or the positions of every assigned partition, with the member's generation.
        Raises CommitFailedError / RebalanceInProgressError as KafkaConsumer.commit does."""
        if offsets is None:
            offsets = self._positions(self._consumer.assignment())
        wire = {}
        for tp, value in offsets.items():
            if isinstance(value, int):
                wire[(tp.topic, tp.partition)] = (value, "")
            else:
                wire[(tp.topic, tp.partition)] = (value.offset, value.metadata)
        self._member.commit(wire)

    def committed(self, partition: TopicPartition) -> int | None:
        return self._member.committed([(partition.topic, partition.partition)]).get(
            (partition.topic, partition.partition)
        )

    def position(self, partition: TopicPartition) -> int:
        return self._consumer.position(partition)

    def highwater(self, partition: TopicPartition) -> int | None:
        return self._consumer.highwater(partition)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._consumer.seek(partition, offset)

    def pause(self, *partitions: TopicPartition) -> None:
        self._consumer.pause(*partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._consumer.resume(*partitions)

    def paused(self) -> set[TopicPartition]:
        return self._consumer.paused()

    def close(self, autocommit: bool = True) -> None:
        """Commit (if auto-commit and `autocommit`), leave the group (dynamic members), release clients."""
        if not autocommit:
            self._auto_commit = False
        try:
            self._member.close()
        finally:
            self._consumer.close(autocommit=False)
            self._metadata.close()
            if self._owns_transport:
                self._transport.close()

    # -- the glue ---------------------------------------------------------------------------------------

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        with self._metadata_lock:
            self._metadata.topics()  # one metadata refresh, so a topic that grew is seen
            return {t: len(self._metadata.partitions_for_topic(t) or ()) for t in topics}

    def _positions(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self._consumer.position(tp) for tp in partitions}

    def _maybe_auto_commit(self) -> None:
        if not self._auto_commit or time.monotonic() < self._next_auto_commit:
            return
        if self._member.state is not MemberState.STABLE:
            return  # never between JoinGroup and SyncGroup: the coordinator would answer 27 (Kafka skips it too)
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval_s
        self._commit_quietly(self._consumer.assignment())

    def _commit_quietly(self, partitions: Iterable[TopicPartition]) -> None:
        """Auto-commit as Kafka does it: a failure is logged, not raised (the next owner re-reads a little)."""
        offsets = self._positions(partitions)
        if not offsets:
            return
        try:
            self.commit(offsets)
        except GroupError as exc:
            log.warning("auto-commit of %d partitions failed: %s", len(offsets), exc)

    def _reassign(self) -> None:
        self._consumer.assign(sorted(self.assignment()))

    def _start_positions(self, added: set[TopicPartition]) -> None:
        committed = self._member.committed([(tp.topic, tp.partition) for tp in added])
        for tp in sorted(added):
            offset = committed.get((tp.topic, tp.partition))
            if offset is not None:
                self._consumer.seek(tp, offset)
            elif self._auto_offset_reset == "earliest":
                self._consumer.seek_to_beginning(tp)
            else:
                self._consumer.seek_to_end(tp)


class _Glue:
    """The member's listener: keeps the KafkaConsumer's assignment and positions in step, then calls the
    application's listener, in Kafka's order (commit, then revoke callback; assign, then assigned callback)."""

    def __init__(self, consumer: GroupConsumer) -> None:
        self._c = consumer

    def on_partitions_revoked(self, revoked: set[tuple[str, int]]) -> None:
        tps = {TopicPartition(t, p) for t, p in revoked}
        if self._c._auto_commit:
            self._c._commit_quietly(tps & self._c._consumer.assignment())
        self._c._user_listener.on_partitions_revoked(tps)
        self._c._reassign()

    def on_partitions_assigned(self, assigned: set[tuple[str, int]]) -> None:
        tps = {TopicPartition(t, p) for t, p in assigned}
        self._c._reassign()
        if tps:
            self._c._start_positions(tps)
        self._c._user_listener.on_partitions_assigned(tps)

    def on_partitions_lost(self, lost: set[tuple[str, int]]) -> None:
        tps = {TopicPartition(t, p) for t, p in lost}
        self._c._user_listener.on_partitions_lost(tps)
        self._c._reassign()
