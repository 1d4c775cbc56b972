"""What the admin CLI asks of the coordinator and of the brokers, separate from how the CLI prints it.

Group facts come from the coordinator over the control topic (DescribeGroups, OffsetFetch, ListGroups, ...);
log offsets come from the brokers, the log end read as the high watermark of a fetch response because tansu's
ListOffsets can under-report it (docs/admin.md). Nothing here prints.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from kafka import KafkaConsumer, TopicPartition

from assignors import consumer_protocol as cp
from client import protocol
from client.errors import Errors, GroupError, for_code
from client.transport import Transport

ADMIN_KEY = "groupcoord-admin"
"""Record key for ListGroups, which has no group: answers come back under the same key."""


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]
    member_epoch: int | None = None
    """A consumer group's member (KIP-848): its epoch and its target assignment; None for a classic group's."""
    target_assignment: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    """The classic group's protocol (the assignor), or the consumer group's server-side assignor."""
    members: tuple[Member, ...] = field(default=())
    group_epoch: int | None = None
    """A consumer group's (KIP-848) group epoch and target assignment epoch; None for a classic group."""
    assignment_epoch: int | None = None

    @property
    def exists(self) -> bool:
        return self.state != "Dead"

    @property
    def group_type(self) -> str:
        """Kafka's GroupType as the tool prints it."""
        return "Consumer" if self.group_epoch is not None else "Classic"


class GroupAdmin:
    """The coordinator side: one request per call, errors raised as GroupError with Kafka's code."""

    def __init__(self, transport: Transport, timeout_s: float = 30.0) -> None:
        self._transport = transport
        self._timeout_s = timeout_s

    def _call(self, key: str, body: protocol.Json) -> protocol.Json:
        return self._transport.request(key, body, self._timeout_s, attempts=2)

    def list_groups(self) -> list[tuple[str, str, str, str]]:
        """(group_id, protocol_type, state, group type: classic or consumer) of every group, sorted."""
        response = self._call(ADMIN_KEY, protocol.list_groups())
        if response.get("error_code"):
            raise GroupError(for_code(response["error_code"]), "ListGroups")
        rows = [(g["group_id"], g.get("protocol_type") or "", g.get("group_state") or "",
                 g.get("group_type") or "classic") for g in response.get("groups") or []]
        return sorted(rows)

    def describe(self, group_id: str) -> GroupDescription:
        """As Kafka's admin client describes a group: ConsumerGroupDescribe, and DescribeGroups when the group is
        not a consumer group (GROUP_ID_NOT_FOUND; DescribeGroups then says Dead when there is no group at all)."""
        r = self._call(group_id, protocol.consumer_group_describe(group_id))
        code = r.get("error_code")
        if not code:
            return _consumer_group(r)
        if code != Errors.GROUP_ID_NOT_FOUND:
            raise GroupError(for_code(code), "ConsumerGroupDescribe")
        r = self._call(group_id, protocol.describe_group(group_id))
        if r.get("error_code"):
            raise GroupError(for_code(r["error_code"]), "DescribeGroups")
        members = []
        for m in r.get("members") or []:
            assignment: tuple[tuple[str, int], ...] = ()
            raw = protocol.unb64(m.get("member_assignment"))
            if raw and r.get("protocol_type") == "consumer":
                try:
                    assignment = tuple(sorted(cp.decode_assignment(raw).partitions()))
                except cp.ConsumerProtocolError:
                    assignment = ()
            members.append(
                Member(m["member_id"], m.get("group_instance_id"), m.get("client_id") or "",
                       m.get("client_host") or "", assignment)
            )
        return GroupDescription(
            group_id, r.get("group_state") or "Dead", r.get("protocol_type") or "", r.get("protocol_data") or "",
            tuple(members),
        )

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        r = self._call(group_id, protocol.offset_fetch(group_id))
        if r.get("error_code"):
            raise GroupError(for_code(r["error_code"]), "OffsetFetch")
        return {tp: off for tp, (off, _md) in protocol.fetched_offsets(r).items()}

    def pending(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """The partitions among `partitions` with a transactional offset pending (a transaction of the group's
        open: its TxnOffsetCommit written, its marker not yet): what a require_stable OffsetFetch (v7+) answers
        UNSTABLE_OFFSET_COMMIT (88), as Kafka's coordinator answers it."""
        partitions = sorted(partitions)
        if not partitions:
            return set()
        r = self._call(group_id, {**protocol.offset_fetch(group_id, partitions), "require_stable": True})
        return {(topic["name"], p["partition_index"]) for topic in r.get("topics") or []
                for p in topic.get("partitions") or [] if p.get("error_code") == Errors.UNSTABLE_OFFSET_COMMIT}

    def delete(self, group_id: str) -> int:
        """DeleteGroups; returns the error code (0, 68 NON_EMPTY_GROUP, 69 GROUP_ID_NOT_FOUND, ...)."""
        r = self._call(group_id, protocol.delete_group(group_id))
        return int(r.get("error_code", 0))

    def delete_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete; (top-level error code, per-partition error codes)."""
        r = self._call(group_id, protocol.offset_delete(group_id, partitions))
        return int(r.get("error_code", 0)), protocol.partition_errors(r)

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """An admin commit (generation -1, no member), which the coordinator accepts only for an Empty group;
        returns per-partition error codes."""
        body = protocol.offset_commit(group_id, -1, "", None, {tp: (o, "") for tp, o in offsets.items()})
        return protocol.partition_errors(self._call(group_id, body))


def _partitions(assignment: protocol.Json | None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((t["topic_name"], p) for t in (assignment or {}).get("topic_partitions") or []
                        for p in t["partitions"]))


def _consumer_group(r: protocol.Json) -> GroupDescription:
    """A ConsumerGroupDescribe answer (KIP-848): topics by name, member epochs, current and target assignments."""
    members = tuple(Member(m["member_id"], m.get("instance_id"), m.get("client_id") or "", m.get("client_host") or "",
                           _partitions(m.get("assignment")), m.get("member_epoch"),
                           _partitions(m.get("target_assignment")))
                    for m in r.get("members") or [])
    return GroupDescription(r["group_id"], r.get("group_state") or "Dead", "consumer", r.get("assignor_name") or "",
                            members, r.get("group_epoch"), r.get("assignment_epoch"))


class UnknownLogOffsets:
    """No broker to ask (`--checkpoint` without `--bootstrap-server`): every log end is unknown, printed `-`."""

    def log_end(self, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        return {}

    def close(self) -> None:
        pass


class LogOffsets:
    """The brokers' side: partitions of a topic, earliest / log-end offsets, offsets for a timestamp."""

    def __init__(self, bootstrap_servers: str, **kafka_config: object) -> None:
        self._consumer = KafkaConsumer(**{
            "bootstrap_servers": bootstrap_servers, "group_id": None, "enable_auto_commit": False,
            "fetch_max_wait_ms": 1, "client_id": "groupcoord-admin", **kafka_config,
        })

    def partitions(self, topic: str) -> list[int]:
        return sorted(self._consumer.partitions_for_topic(topic) or ())

    def earliest(self, tps: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        kafka_tps = [TopicPartition(t, p) for t, p in tps]
        if not kafka_tps:
            return {}
        return {(tp.topic, tp.partition): off for tp, off in self._consumer.beginning_offsets(kafka_tps).items()}

    def log_end(self, tps: Iterable[tuple[str, int]], timeout_s: float = 10.0) -> dict[tuple[str, int], int]:
        """High watermarks from fetch responses: fetch at the earliest offset with no wait; every fetch
        response carries the partition's true high watermark."""
        kafka_tps = [TopicPartition(t, p) for t, p in tps]
        if not kafka_tps:
            return {}
        start = self._consumer.beginning_offsets(kafka_tps)
        self._consumer.assign(kafka_tps)
        for tp in kafka_tps:
            self._consumer.seek(tp, start[tp])
            self._consumer._subscription.assignment[tp].highwater = None  # never trust a stale value
        deadline = time.monotonic() + timeout_s
        while True:
            self._consumer.poll(timeout_ms=5, max_records=1)
            marks = {tp: self._consumer.highwater(tp) for tp in kafka_tps}
            if all(m is not None for m in marks.values()):
                return {(tp.topic, tp.partition): int(m) for tp, m in marks.items()}  # type: ignore[arg-type]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no fetch response for {[tp for tp, m in marks.items() if m is None]}")

    def for_time(self, tps: Iterable[tuple[str, int]], timestamp_ms: int) -> dict[tuple[str, int], int | None]:
        """The earliest offset whose record timestamp is >= `timestamp_ms` (None: no such record).

        ListOffsets by timestamp answers this, but tansu answers offset 0 whatever the timestamp; so the
        answer is checked against the records around it, and when it does not hold, the partition is
        scanned (correct everywhere, slower on long logs)."""
        kafka_tps = [TopicPartition(t, p) for t, p in tps]
        hints = self._consumer.offsets_for_times({tp: timestamp_ms for tp in kafka_tps})
        ends = self.log_end([(tp.topic, tp.partition) for tp in kafka_tps])
        out: dict[tuple[str, int], int | None] = {}
        for tp in kafka_tps:
            end = ends[(tp.topic, tp.partition)]
            hint = hints.get(tp)
            if hint is not None and self._holds(tp, hint.offset, timestamp_ms, end):
                out[(tp.topic, tp.partition)] = hint.offset
            else:
                out[(tp.topic, tp.partition)] = self._scan(tp, timestamp_ms, end)
        return out

    def _records(self, tp: TopicPartition, start: int, stop: int, timeout_s: float = 30.0):
        """(offset, timestamp) of the records in [start, stop), in order."""
        self._consumer.assign([tp])
        self._consumer.seek(tp, start)
        deadline = time.monotonic() + timeout_s
        while self._consumer.position(tp) < stop:
            for record in self._consumer.poll(timeout_ms=100).get(tp, []):
                if record.offset < stop:
                    yield record.offset, record.timestamp
            if time.monotonic() > deadline:
                raise TimeoutError(f"could not read {tp} from {start} to {stop}")

    def _holds(self, tp: TopicPartition, offset: int, timestamp_ms: int, end: int) -> bool:
        if offset >= end:
            return False
        first = self.earliest([(tp.topic, tp.partition)])[(tp.topic, tp.partition)]
        around = dict(self._records(tp, max(first, offset - 1), offset + 1))
        before_ok = offset == first or around.get(offset - 1, timestamp_ms) < timestamp_ms
        return around.get(offset, -1) >= timestamp_ms and before_ok

    def _scan(self, tp: TopicPartition, timestamp_ms: int, end: int) -> int | None:
        first = self.earliest([(tp.topic, tp.partition)])[(tp.topic, tp.partition)]
        for offset, ts in self._records(tp, first, end):
            if ts >= timestamp_ms:
                return offset
        return None

    def close(self) -> None:
        self._consumer.close()
