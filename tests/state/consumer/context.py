"""ConsumerContext: drive one consumer group like Kafka's GroupMetadataManagerTestContext.

`heartbeat(...)` calls the handler, then does what Kafka's runtime does with the result: replays its records into
the group (the only way it changes) and applies its timer operations. `sleep(ms)` advances the clock and fires
what comes due, in deadline order, each result replayed the same way. On the way it checks what must hold after
any step: the handler changed nothing itself, every record and response matches its JSON Schema, and replaying
every record written so far from nothing gives back the same group (the rebuild from the records topic).
"""

from __future__ import annotations

import copy
import json
from typing import Any, Iterable

from schemas.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
)
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.consumer.heartbeat import Env, consumer_group_heartbeat, on_timer
from state.consumer.replay import replay
from state.topics.image import EMPTY_IMAGE, MetadataImage
from state.handling.step import CoordinatorResult as Result
from state.records import Record
from state.handling.timers import Schedule, consumer_rebalance_timeout_key, consumer_session_timeout_key
from state.wire import encode
from tests.state.consumer.support import MockAssignor, assignment
from tests.state.schemas import validate_record, validator

CLIENT_ID = "client"
CLIENT_HOST = "localhost/127.0.0.1"
"""Kafka's test context: DEFAULT_CLIENT_ID and DEFAULT_CLIENT_ADDRESS.toString()."""


def durable(group: ConsumerGroup | None) -> Any:
    """Everything replay keeps about a group, for comparing two groups."""
    if group is None:
        return None
    return {k: v for k, v in vars(group).items()}


class ConsumerContext:
    def __init__(self, *assignors: Any, image: MetadataImage = EMPTY_IMAGE, config: CoordinatorConfig | None = None,
                 group_id: str = "fooup", now_ms: int = 0) -> None:
        self.assignors = {a.name: a for a in (assignors or (MockAssignor("range"),))}
        self.image = image
        self.config = config or CoordinatorConfig()
        self.group_id = group_id
        self.now_ms = now_ms
        self.group: ConsumerGroup | None = None
        self.timers: dict[str, int] = {}
        self.log: list[Record] = []

    @property
    def assignor(self) -> MockAssignor:
        (first, *_) = self.assignors.values()
        return first

    def env(self) -> Env:
        return Env(self.now_ms, self.config, self.image, dict(self.timers), self.assignors)

    # -- driving -----------------------------------------------------------------------------------------------

    def heartbeat(self, member_id: str = "", member_epoch: int = 0, *, owned: Iterable | None = None,
                  version: int | None = None, **fields: Any) -> Result:
        """One ConsumerGroupHeartbeat; `owned` as ((topic name, partitions), ...) becomes `topic_partitions`."""
        if owned is not None:
            fields["topic_partitions"] = tuple(
                ConsumerGroupHeartbeatRequestTopicPartitions(tid, tuple(sorted(parts)))
                for tid, parts in sorted(assignment(*owned).items()))
        fields.setdefault("client_id", CLIENT_ID)
        fields.setdefault("client_host", CLIENT_HOST)
        if version is not None:
            fields["api_version"] = version
        request = ConsumerGroupHeartbeatRequest(request_id=f"r{len(self.log)}", group_id=fields.pop(
            "group_id", self.group_id), member_id=member_id, member_epoch=member_epoch, **fields)
        before = copy.deepcopy(durable(self.group))
        result = consumer_group_heartbeat(self.group, request, self.env())
        assert durable(self.group) == before, "the handler changed the group"
        validator("ConsumerGroupHeartbeatResponse").validate(json.loads(encode(result.response)))
        again = consumer_group_heartbeat(self.group, request, self.env())
        assert encoded(again) == encoded(result), "the same heartbeat gave another result"
        self.apply(result)
        return result

    def join(self, member_id: str, topics: Iterable[str] = ("foo", "bar"), **fields: Any) -> Result:
        """A full join: epoch 0, rebalance timeout 5000, the topics, no owned partitions."""
        fields.setdefault("rebalance_timeout_ms", 5000)
        fields.setdefault("server_assignor", "range")
        return self.heartbeat(member_id, 0, subscribed_topic_names=tuple(topics), owned=(), **fields)

    def apply(self, result: Result) -> None:
        for record in result.records:
            self.replay(record)
        for op in result.timers:
            if isinstance(op, Schedule):
                self.timers[op.key] = op.deadline_ms
            else:
                self.timers.pop(op.key, None)

    def replay(self, *records: Record) -> None:
        for record in records:
            key, value = record.encode()
            validate_record(json.loads(key), None if value is None else json.loads(value))
            self.log.append(record)
            self.group = replay(self.group, record)
        rebuilt = None
        for record in self.log:
            rebuilt = replay(rebuilt, record)
        assert durable(rebuilt) == durable(self.group), "the records do not rebuild the group"

    def sleep(self, ms: int) -> list[tuple[str, Result]]:
        """Advance the clock; fire every timer that comes due, in deadline order."""
        self.now_ms += ms
        fired = []
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= self.now_ms)
            if not due:
                return fired
            _, key = due[0]
            del self.timers[key]
            result = on_timer(self.group, key, self.env())
            self.apply(result)
            fired.append((key, result))

    # -- looking -----------------------------------------------------------------------------------------------

    def member(self, member_id: str):
        assert self.group is not None
        return self.group.members[member_id]

    def session_deadline(self, member_id: str) -> int | None:
        return self.timers.get(consumer_session_timeout_key(member_id))

    def rebalance_deadline(self, member_id: str, epoch: int) -> int | None:
        return self.timers.get(consumer_rebalance_timeout_key(member_id, epoch))


def encoded(result: Result) -> tuple:
    return tuple(r.encode() for r in result.records), encode(result.response), result.timers


def ok(member_id: str, epoch: int, interval: int = 5000, assigned: Iterable | None = None,
       request_id: str | None = None) -> dict:
    """The fields a successful heartbeat response should have (`assigned`: ((topic, partitions), ...))."""
    expected: dict[str, Any] = {"error_code": 0, "member_id": member_id, "member_epoch": epoch,
                                "heartbeat_interval_ms": interval, "assignment": None}
    if assigned is not None:
        expected["assignment"] = {"topic_partitions": [
            {"topic_id": tid, "partitions": sorted(parts)} for tid, parts in sorted(assignment(*assigned).items())]}
    return expected


def fields(response: ConsumerGroupHeartbeatResponse) -> dict:
    """The response's fields that `ok` describes."""
    doc = json.loads(encode(response))
    return {k: doc[k] for k in ("error_code", "member_id", "member_epoch", "heartbeat_interval_ms", "assignment")}


def error(result: Result) -> tuple[int, str | None]:
    return result.response.error_code, result.response.error_message



def build_group(ctx: ConsumerContext, epoch: int, members: Iterable, targets: dict | None = None,
                assignment_epoch: int | None = None) -> None:
    """Kafka's ConsumerGroupBuilder: the records of a group at `epoch` with these members (each member's current
    target defaults to its assigned partitions), replayed into the context. The metadata hash is the one of the
    members' subscribed topics in the context's image, so the group is up to date with it."""
    from state.consumer import records
    from state.consumer.group import partitions_of
    from state.topics.image import metadata_hash

    members = list(members)
    topics = {t for m in members for t in m.subscribed_topic_names}
    ctx.replay(*[records.member_subscription(ctx.group_id, m) for m in members])
    ctx.replay(records.group_epoch(ctx.group_id, epoch, metadata_hash(topics, ctx.image)))
    targets = targets if targets is not None else {m.member_id: partitions_of(m.assigned_partitions) for m in members}
    ctx.replay(*[records.target_assignment(ctx.group_id, m, t) for m, t in targets.items()])
    ctx.replay(records.target_assignment_epoch(ctx.group_id, epoch if assignment_epoch is None else assignment_epoch,
                                               0))
    ctx.replay(*[records.current_assignment(ctx.group_id, m) for m in members])
