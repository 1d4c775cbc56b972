"""GroupContext: drive one group through `step_group` like Kafka's GroupMetadataManagerTestContext.

Every step goes through the public contract (`state.batch.step_group` with JSON bytes), and checks on the way
what must hold after any step: responses and records match their JSON Schemas, the step is deterministic
(run twice, byte-identical), the records written so far rebuild the group's durable state, and the group
changed only through the records its handlers returned (`changes_only_by_replay`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from assignors.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from state.runtime import coordinator
from state.batch import (
    TOPIC_METADATA_GROUP,
    GroupStep,
    StoredGroup,
    _after_outage,
    _fetch_position,
    _longest_wait,
    decode_state,
    encode_state,
    step_group,
)
from state.config import CoordinatorConfig
from state.consumer.group import ConsumerGroup
from state.consumer.stored import snapshot
from state.runtime.replay import replay
from state.handling.step import CoordinatorResult, Env
from state.runtime.replay import applied
from state.errors import Errors
from state.classic.group import ClassicGroup
from state.runtime.load import load
from state.handling.timers import Cancel
from state.views.published import encode_view, view_of
from state.wire import BadRequest, decode_request
from tests.state.schemas import validate_record, validate_request, validate_response, validator


def subscription(*topics: str) -> str:
    return base64.b64encode(encode_subscription(Subscription(tuple(topics)))).decode()


def assignment(*pairs: tuple[str, tuple[int, ...]]) -> str:
    return base64.b64encode(encode_assignment(Assignment(tuple(pairs)))).decode()


def replayed(group: ClassicGroup | None, result: CoordinatorResult) -> ClassicGroup | None:
    """The group after a result, from its records and timer operations alone."""
    for record in result.records:
        group = replay(group, record)
    for operation in result.timers:
        if group is not None:
            if isinstance(operation, Cancel):
                group.timers.pop(operation.key, None)
            else:
                group.timers[operation.key] = operation.deadline_ms
    return group


def changes_only_by_replay(group_id: str, stored: StoredGroup | None, raw: list[bytes], now_ms: int,
                           config: CoordinatorConfig, topics: bytes | None = None) -> None:
    """Run a step's timers and requests through the coordinator, one result each (as step_group does for a step
    at one instant), and check after each that a copy of the group fed only that result's records and timer
    operations is the group the handler left: nothing changed it but `replay`. Steps the check cannot mirror
    (requests that do not decode, a call after an outage) are passed over."""
    live_group = decode_state(stored)
    if live_group is not None and _after_outage(live_group, live_group.clock_ms, now_ms, None, config):
        return
    try:
        requests = [decode_request(r) for r in raw]
    except BadRequest:
        return
    if any(r.group_id != group_id for r in requests):
        return
    live = live_group
    shadow = decode_state(stored)

    def env() -> Env:
        return Env(now_ms, config, timers=live.timers if live is not None else {}, topics=topics)

    steps = [lambda: coordinator.fire_timers(live, env())] + [lambda r=r: coordinator.handle(live, r, env())
                                                              for r in requests]
    for number, run in enumerate(steps):
        result = run()
        live = applied(live, result)
        shadow = replayed(shadow, result)
        assert encode_state(shadow) == encode_state(live), f"step part {number}: changed outside replay"


def durable_view(group: ClassicGroup | ConsumerGroup | None) -> tuple[Any, Any]:
    """What the records topic must be able to give back: Kafka's group value as last persisted (a consumer group:
    its records as compaction leaves them), and offsets."""
    if group is None:
        return None, {}
    offsets = {tp: (o.offset, o.leader_epoch, o.metadata, o.commit_timestamp, o.expire_timestamp)
               for tp, o in group.offsets.items()}
    offsets.update({key: (v.value.offset, v.superseded) for key, v in group.offsets.pending.items()})
    if isinstance(group, ConsumerGroup):
        return [r.encode() for r in snapshot(group)], offsets
    return group.persisted, offsets


class GroupContext:
    def __init__(self, config: CoordinatorConfig | None = None, group_id: str = "g", now_ms: int = 0,
                 check_replay: bool = True) -> None:
        self.config = config or CoordinatorConfig()
        self.group_id = group_id
        self.now_ms = now_ms
        self.state: StoredGroup | None = None
        self.records: list[tuple[bytes, bytes | None]] = []
        self.last: GroupStep | None = None
        self.last_requests: list[dict] = []
        self.check_replay = check_replay
        self._next_request = 0
        self.topics: bytes | None = None
        """The bucket's topic metadata row (`publish_topics`), passed to every step as the shell passes it."""
        self.requests_topic_end = 0
        """Where the next request would sit in the (one-partition) requests topic: each step's last request's
        position goes to `step_group`, as the shell passes it."""

    # -- driving -----------------------------------------------------------------------------------------------

    def step(self, *requests: dict, valid: bool = True, times: list[int] | None = None,
             resumed: bool = False) -> list[dict]:
        """Run the requests at `now_ms` (each at its arrival time in `times`, when given); `valid=False` for
        requests that are meant to break the schema; `resumed` as the first call after the shell restarted."""
        if valid:
            for request in requests:
                validate_request(request)
        raw = [json.dumps(r).encode() for r in requests]
        self.last_requests = list(requests)
        if times is None and not resumed:
            changes_only_by_replay(self.group_id, self.state, raw, self.now_ms, self.config, self.topics)
        position = (0, self.requests_topic_end + len(raw) - 1) if raw else None
        self.requests_topic_end += len(raw)
        result = step_group(self.group_id, self.state, raw, self.now_ms, self.config, times, resumed,
                            topics=self.topics, position=position)
        again = step_group(self.group_id, self.state, raw, self.now_ms, self.config, times, resumed,
                           topics=self.topics, position=position)
        assert again == result, "step_group is not deterministic"
        # The Spark shell passes a reader instead of the offsets: the same step, whether it reads them or not.
        reads: list[int] = []
        stored_offsets = None if self.state is None else self.state.offsets
        lazy = step_group(self.group_id, self.state, raw, self.now_ms, self.config, times, resumed,
                          read_offsets=lambda: reads.append(1) or stored_offsets, topics=self.topics,
                          position=position)
        assert len(reads) <= 1, "offsets read more than once"
        assert lazy == result, "reading offsets lazily changed the step"
        assert not [d for d in result.dead_letters if d[1].startswith("internal error")], result.dead_letters
        for response in result.responses:
            validate_response(json.loads(response))
        for key, value in result.records:
            validate_record(json.loads(key), None if value is None else json.loads(value))
        view_before = view_of(self.group, self.config)
        self.state = result.stored(self.state)
        self.records.extend(result.records)
        self.last = result
        # A view that changed is published (gateways answer from it), and what is published is the group's view.
        view_after = view_of(self.group, self.config)
        assert result.publish_view or view_after == view_before, "the group's view changed and was not published"
        assert not result.publish_view or result.view == encode_view(
            view_of(self.group, self.config, _fetch_position(self.group, position),
                    _longest_wait(self.now_ms, times))), "a view that is not the group's"
        if self.check_replay:
            rebuilt = load(self.group_id, self.records, self.now_ms, self.config).group
            assert durable_view(rebuilt) == durable_view(self.group), "records do not rebuild the group"
        return [json.loads(r) for r in result.responses]

    def sleep(self, ms: int) -> list[dict]:
        self.now_ms += ms
        return self.step()

    def request_id(self) -> str:
        self._next_request += 1
        return f"r{self._next_request}"

    @property
    def group(self) -> ClassicGroup | ConsumerGroup | None:
        return decode_state(self.state)

    def publish_topics(self, version: int, *topics: tuple[str, str, int]) -> None:
        """A `TopicMetadata` of (topic id, name, partitions), stepped as the shell steps a bucket's topic row."""
        request = {"api": "TopicMetadata", "request_id": "", "version": version,
                   "topics": [{"topic_id": i, "name": n, "partitions": p} for i, n, p in topics]}
        validator("TopicMetadataRequest").validate(request)
        stored = None if self.topics is None else StoredGroup(self.topics)
        step = step_group(TOPIC_METADATA_GROUP, stored, [json.dumps(request).encode()], self.now_ms, self.config)
        assert not step.dead_letters and not step.responses and not step.records and step.next_deadline_ms is None
        self.topics = step.metadata

    def consumer_heartbeat(self, member_id: str, member_epoch: int, **fields: Any) -> dict:
        """One ConsumerGroupHeartbeat (v1), its response."""
        (response,) = self.step({"api": "ConsumerGroupHeartbeat", "request_id": self.request_id(),
                                 "group_id": self.group_id, "member_id": member_id, "member_epoch": member_epoch,
                                 **fields})
        return response

    def consumer_join(self, member_id: str, topics: tuple[str, ...] = ("t",), **fields: Any) -> dict:
        """A consumer-protocol member joins (epoch 0), as librdkafka's first heartbeat."""
        return self.consumer_heartbeat(member_id, 0, rebalance_timeout_ms=300_000,
                                       subscribed_topic_names=list(topics), subscribed_topic_regex="",
                                       topic_partitions=[], **fields)

    @property
    def record_values(self) -> list[dict | None]:
        """Records of the last step, decoded."""
        assert self.last is not None
        return [None if v is None else json.loads(v) for _, v in self.last.records]

    # -- requests ----------------------------------------------------------------------------------------------

    def join_request(self, member_id: str = "", *, instance: str | None = None, client_id: str = "client",
                     protocols: list[tuple[str, str]] | None = None, protocol_type: str = "consumer",
                     session: int = 10_000, rebalance: int = 30_000, version: int = 9, **extra: Any) -> dict:
        req = {
            "api": "JoinGroup", "api_version": version, "request_id": self.request_id(), "group_id": self.group_id,
            "session_timeout_ms": session, "rebalance_timeout_ms": rebalance, "member_id": member_id,
            "group_instance_id": instance, "protocol_type": protocol_type, "client_id": client_id,
            "protocols": [{"name": n, "metadata": m}
                          for n, m in (protocols if protocols is not None else [("range", subscription("t"))])],
        }
        req.update(extra)
        return req

    def join(self, member_id: str = "", **kw: Any) -> list[dict]:
        return self.step(self.join_request(member_id, **kw))

    def join_all(self, *member_ids: str, **kw: Any) -> list[dict]:
        """Several JoinGroups in one batch (one step_group call), as they arrive in one micro-batch."""
        return self.step(*(self.join_request(m, **kw) for m in member_ids))

    def sync_request(self, member_id: str, generation: int, assignments: dict[str, str] | None = None,
                     instance: str | None = None, version: int = 5, protocol_name: str | None = "range",
                     protocol_type: str | None = "consumer") -> dict:
        return {
            "api": "SyncGroup", "api_version": version, "request_id": self.request_id(), "group_id": self.group_id,
            "generation_id": generation, "member_id": member_id, "group_instance_id": instance,
            "protocol_type": protocol_type, "protocol_name": protocol_name,
            "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        }

    def sync(self, member_id: str, generation: int, assignments: dict[str, str] | None = None,
             **kw: Any) -> list[dict]:
        return self.step(self.sync_request(member_id, generation, assignments, **kw))

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> list[dict]:
        return self.step({"api": "Heartbeat", "request_id": self.request_id(), "group_id": self.group_id,
                          "generation_id": generation, "member_id": member_id, "group_instance_id": instance})

    def leave(self, *members: str | tuple[str, str | None]) -> list[dict]:
        entries = [{"member_id": m, "group_instance_id": None} if isinstance(m, str)
                   else {"member_id": m[0], "group_instance_id": m[1]} for m in members]
        return self.step({"api": "LeaveGroup", "request_id": self.request_id(), "group_id": self.group_id,
                          "members": entries})

    def commit(self, offsets: dict[tuple[str, int], int], member_id: str = "", generation: int = -1,
               metadata: str | None = None, version: int = 8, **extra: Any) -> list[dict]:
        topics: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                 "committed_metadata": metadata})
        req = {"api": "OffsetCommit", "api_version": version, "request_id": self.request_id(),
               "group_id": self.group_id, "generation_id_or_member_epoch": generation, "member_id": member_id,
               "topics": [{"name": t, "partitions": p} for t, p in topics.items()]}
        req.update(extra)
        return self.step(req)

    def fetch(self, topics: dict[str, list[int]] | None = None) -> dict:
        (response,) = self.step({
            "api": "OffsetFetch", "request_id": self.request_id(), "group_id": self.group_id,
            "topics": None if topics is None else [{"name": t, "partition_indexes": p} for t, p in topics.items()],
        })
        return response

    def committed(self) -> dict[tuple[str, int], int]:
        return {(t["name"], p["partition_index"]): p["committed_offset"]
                for t in self.fetch()["topics"] for p in t["partitions"]}

    def describe(self) -> dict:
        (response,) = self.step({"api": "DescribeGroups", "request_id": self.request_id(),
                                 "group_id": self.group_id})
        return response

    # -- composite steps ---------------------------------------------------------------------------------------

    def new_member(self, client_id: str = "client", **kw: Any) -> str:
        """The KIP-394 handshake: join with "" and get MEMBER_ID_REQUIRED; returns the id to join with."""
        (response,) = self.join(client_id=client_id, **kw)
        assert response["error_code"] == Errors.MEMBER_ID_REQUIRED, response
        return response["member_id"]

    def stable_group(self, n: int, **kw: Any) -> list[str]:
        """n dynamic members joined and synced (the leader assigns nothing); returns their ids, leader first."""
        ids = [self.new_member(client_id=f"c{i}", **kw) for i in range(n)]
        for member_id in ids:
            self.join(member_id, **kw)
        responses = self.sleep(self.config.group_initial_rebalance_delay_ms)
        for _ in range(n):  # the initial delay is extended once per delay while members were added
            if responses:
                break
            responses = self.sleep(self.config.group_initial_rebalance_delay_ms)
        assert {r["error_code"] for r in responses} == {Errors.NONE}, responses
        generation = responses[0]["generation_id"]
        leader = responses[0]["leader"]
        ordered = [leader] + [m for m in ids if m != leader]
        protocol = {"protocol_type": kw.get("protocol_type", "consumer"),
                    "protocol_name": responses[0]["protocol_name"]}
        for member_id in ordered[1:]:
            self.sync(member_id, generation, **protocol)
        self.sync(leader, generation, {m: assignment(("t", (i,))) for i, m in enumerate(ordered)}, **protocol)
        assert self.group.state.value == "Stable"
        return ordered


def by_request(responses: list[dict]) -> dict[str, dict]:
    return {r["request_id"]: r for r in responses}
