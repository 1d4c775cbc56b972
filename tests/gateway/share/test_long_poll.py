"""ShareFetch long polls (MaxWaitMs, MinBytes) as Kafka's DelayedShareFetch answers them (issue 34; the reference's
§2 "Long poll": /work/shared/reference/kafka-share-groups.md), raw requests to a gateway in front of the real query
and broker (tests/gateway/conftest.py):

- a fetch that finds too few bytes to acquire waits, up to MaxWaitMs; it is answered as soon as enough arrive (new
  records in the log, produced through this gateway or straight to the broker; records released by another member,
  or whose lock ran out), and "enough" is MinBytes: the bytes from the share-partition's next fetch offset to the
  high watermark (`isMinBytesSatisfied`), so a MinBytes of 0 is answered at once;
- at MaxWaitMs it is answered with whatever can be acquired then, below MinBytes or nothing, never an error;
- records are acquired when the answer is made, not when the request came: their acquisition lock counts from
  then, so a wait longer than the lock does not hand out records whose lock already ran out.

The waits are checked by what the answer holds (records produced after the request was sent), and a wait's lower
bound by the clock (a gateway that waits cannot answer before MaxWaitMs; load only makes it later). Each test has
its own topic and group; one member (a raw connection that joined with ShareGroupHeartbeat) per test, two in the
wake-up tests."""

from __future__ import annotations

import select
import time
import uuid
from typing import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from gateway.upstream.control import from_json, to_json
from gateway.upstream.kafka_apis import (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
                                         ShareAcknowledgeRequest, ShareAcknowledgeResponse, ShareFetchRequest,
                                         ShareFetchResponse, ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)
from tests.gateway.conftest import GatewayEnv, wait_for
from tests.gateway.raw import Connection

pytestmark = [pytest.mark.broker, pytest.mark.spark]

ACCEPT, RELEASE = 1, 2
LONG_WAIT_MS = 120_000
"""A MaxWaitMs no test waits out: an answer that comes at all came early (the connection gives up after 60 s)."""
VALUE = b"v" * 400
"""One record's value: a log batch of one record is ~470 bytes."""


class ShareMember:
    """A share group member on a raw connection: joined with ShareGroupHeartbeat, one share session."""

    def __init__(self, env: GatewayEnv, group: str, topic: str, name: str) -> None:
        self.connection = Connection(env.bootstrap)
        self.connection.sock.settimeout(60)
        self.member_id = f"{name}-{uuid.uuid4().hex[:12]}"
        self.group = group
        self.epoch = 0
        self.topic_id = wait_for(lambda: self._assigned(topic), 120, f"{name}'s share assignment")

    def _assigned(self, topic: str) -> str | None:
        answer = self.connection.call(from_json(ShareGroupHeartbeatRequest, 1, {
            "group_id": self.group, "member_id": self.member_id, "member_epoch": getattr(self, "_hb_epoch", 0),
            "rack_id": None, "subscribed_topic_names": [topic]}), 1, ShareGroupHeartbeatResponse)
        assert answer.error_code == 0, answer
        self._hb_epoch = answer.member_epoch
        if answer.assignment is not None and answer.assignment.topic_partitions:
            return str(answer.assignment.topic_partitions[0].topic_id)
        return None

    def send_fetch(self, max_wait_ms: int, min_bytes: int, acks: list[tuple[int, int, int]] = ()) -> float:
        """Sends a ShareFetch of partition 0 (acknowledging `acks`: (first, last, type)); returns when it was sent."""
        partition = {"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}
        self.connection.send(from_json(ShareFetchRequest, 1, {
            "group_id": self.group, "member_id": self.member_id, "share_session_epoch": self.epoch,
            "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20, "max_records": 500,
            "batch_size": 500, "topics": [{"topic_id": self.topic_id, "partitions": [partition]}] if
            self.epoch == 0 or acks else [], "forgotten_topics_data": []}), 1)
        self.epoch += 1
        return time.monotonic()

    def receive_fetch(self) -> dict:
        answer = to_json(self.connection.receive(ShareFetchResponse, 1), 1)
        assert answer["error_code"] == 0, answer
        return answer

    def fetch(self, max_wait_ms: int, min_bytes: int, acks: list[tuple[int, int, int]] = ()) -> tuple[dict, float]:
        """(the answer, seconds from before the request was sent to after its answer came)."""
        sent = self.send_fetch(max_wait_ms, min_bytes, acks)
        answer = self.receive_fetch()
        return answer, time.monotonic() - sent

    def acknowledge(self, first: int, last: int, kind: int) -> int:
        answer = self.connection.call(from_json(ShareAcknowledgeRequest, 1, {
            "group_id": self.group, "member_id": self.member_id, "share_session_epoch": self.epoch,
            "topics": [{"topic_id": self.topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]}]}]}),
            1, ShareAcknowledgeResponse)
        self.epoch += 1
        assert answer.error_code == 0, answer
        return answer.responses[0].partitions[0].error_code

    def answered(self, within_s: float) -> bool:
        """Whether an answer is there to read within `within_s`."""
        return bool(select.select([self.connection.sock], [], [], within_s)[0])

    def close(self) -> None:
        self.connection.close()


def acquired(answer: dict) -> list[tuple[int, int, int]]:
    """(first offset, last offset, delivery count) of every acquired range in the answer."""
    return [(r["first_offset"], r["last_offset"], r["delivery_count"])
            for t in answer["responses"] for p in t["partitions"] for r in p["acquired_records"]]


def offsets(ranges: list[tuple[int, int, int]]) -> list[int]:
    return [o for first, last, _ in ranges for o in range(first, last + 1)]


def counts(ranges: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """(offset, delivery count) of every offset acquired."""
    return sorted((o, count) for first, last, count in ranges for o in range(first, last + 1))


def produce(bootstrap: str, topic: str, n: int = 1) -> None:
    """`n` records of VALUE, each its own log batch."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(n):
        producer.produce(topic, VALUE)
        producer.flush(30)


@pytest.fixture
def share(gateway_env) -> Iterator:
    """`share(lock_ms, members=1, warm=True)`: a fresh one-partition topic and share group (from the earliest offset,
    records locked `lock_ms`), its members joined and, if `warm`, the share-partition held by the gateway and
    resolved (a first record fetched and accepted: the next offset is 1); returns (topic, [members])."""
    env = gateway_env
    opened: list[ShareMember] = []

    def start(lock_ms: int = 30_000, members: int = 1, warm: bool = True) -> tuple[str, list[ShareMember]]:
        topic = env.topic(partitions=1)
        group = f"share-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": env.bootstrap})
        entries = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
                   ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                               incremental_operation=AlterConfigOpType.SET)]

        def configured() -> bool:
            futures = admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                      incremental_configs=entries)])
            try:
                for future in futures.values():
                    future.result(timeout=180)
            except Exception:  # a fresh query's first batches may outlast the gateway's request timeout
                return False
            return True
        wait_for(configured, 300, "the group's configs")
        for i in range(members):
            opened.append(ShareMember(env, group, topic, f"m{i}"))
        group_members = opened[-members:]
        if not warm:
            return topic, group_members
        produce(env.bootstrap, topic)
        first = group_members[0]
        got = wait_for(lambda: acquired(first.fetch(5000, 1)[0]), 120, "the first record")
        assert offsets(got) == [0]
        assert first.acknowledge(0, 0, ACCEPT) == 0
        for other in group_members[1:]:
            answer, _ = other.fetch(0, 1)  # opens its session
            assert acquired(answer) == []
        return topic, group_members

    try:
        yield start
    finally:
        for member in opened:
            member.close()


def test_a_fetch_with_nothing_to_acquire_waits_max_wait_and_is_answered_empty(share):
    _, (member,) = share()
    answer, took = member.fetch(1500, 1)
    assert acquired(answer) == []
    assert took >= 1.5, f"answered after {took:.3f} s, MaxWaitMs 1500"


@pytest.mark.parametrize("through", ["gateway", "broker"])
def test_records_produced_during_the_wait_answer_it_early(share, gateway_env, through):
    """Produced through this gateway (which wakes the wait at once) or straight to the broker (found by reading
    the log while someone waits)."""
    topic, (member,) = share()
    member.send_fetch(LONG_WAIT_MS, 1)
    assert not member.answered(0.5)
    produce(gateway_env.bootstrap if through == "gateway" else gateway_env.broker, topic)
    assert member.answered(60), "no answer 60 s after a record was produced (MaxWaitMs 120 s)"
    assert acquired(member.receive_fetch()) == [(1, 1, 1)]


def test_min_bytes_waits_for_that_many_bytes_and_not_for_the_first_record(share, gateway_env):
    topic, (member,) = share()
    member.send_fetch(LONG_WAIT_MS, 3 * len(VALUE))
    for produced in (1, 2):
        produce(gateway_env.bootstrap, topic)
        assert not member.answered(1.0), f"answered with {produced} record(s) below MinBytes"
    produce(gateway_env.bootstrap, topic)
    assert member.answered(60), "no answer 60 s after MinBytes was reached"
    assert offsets(acquired(member.receive_fetch())) == [1, 2, 3]


def test_min_bytes_0_is_answered_at_once(share):
    """Kafka's `isMinBytesSatisfied`: 0 bytes available satisfy a MinBytes of 0."""
    _, (member,) = share()
    member.send_fetch(LONG_WAIT_MS, 0)
    assert member.answered(60), "a MinBytes 0 fetch waited (MaxWaitMs 120 s)"
    assert acquired(member.receive_fetch()) == []


def test_at_max_wait_below_min_bytes_the_answer_holds_what_there_is_locked_from_then(share, gateway_env):
    """The record is there from the start, fewer bytes than MinBytes: the fetch waits MaxWaitMs, longer than the
    lock, and is answered with the record acquired then; accepting it at once succeeds (its lock counts from the
    answer: acquired at the request, it would have run out before the answer)."""
    lock_ms = 2000
    topic, (member,) = share(lock_ms=lock_ms)
    produce(gateway_env.bootstrap, topic)
    answer, took = member.fetch(5000, 1 << 20)
    assert took >= 5.0, f"answered after {took:.3f} s below MinBytes, MaxWaitMs 5000"
    assert answer["acquisition_lock_timeout_ms"] == lock_ms
    assert acquired(answer) == [(1, 1, 1)]
    assert member.acknowledge(1, 1, ACCEPT) == 0


@pytest.mark.parametrize("how", ["released", "lock ran out"])
def test_records_another_member_gives_back_wake_a_waiting_fetch(share, gateway_env, how):
    """Another member holds every record; its RELEASE (or its lock running out) makes them acquirable, which
    answers the waiting fetch with them, delivery count 2."""
    topic, (holder, waiter) = share(lock_ms=3000 if how == "lock ran out" else 60_000, members=2)
    produce(gateway_env.bootstrap, topic, 2)
    got: list[int] = []
    wait_for(lambda: got.extend(offsets(acquired(holder.fetch(5000, 1)[0]))) or len(got) >= 2, 60,
             "the holder's records")
    assert got == [1, 2]
    waiter.send_fetch(LONG_WAIT_MS, 1)
    if how == "released":
        assert not waiter.answered(0.5)
        assert holder.acknowledge(1, 2, RELEASE) == 0
    assert waiter.answered(60), f"the waiting fetch was not answered 60 s after the records were {how}"
    assert counts(acquired(waiter.receive_fetch())) == [(1, 2), (2, 2)]


def test_a_wait_on_an_empty_log_is_answered_by_its_first_record(share, gateway_env):
    """The share-partition is taken and its start offset resolved while the fetch waits, on a log with nothing in
    it yet: the first record produced (straight to the broker) answers the fetch."""
    topic, (member,) = share(warm=False)
    member.send_fetch(LONG_WAIT_MS, 1)
    describe = Connection(gateway_env.bootstrap)
    try:
        def resolved() -> bool:
            answer = describe.call(from_json(DescribeShareGroupOffsetsRequest, 1, {"groups": [
                {"group_id": member.group, "topics": [{"topic_name": topic, "partitions": [0]}]}]}),
                1, DescribeShareGroupOffsetsResponse)
            return [p.start_offset for t in answer.groups[0].topics for p in t.partitions] == [0]
        wait_for(resolved, 120, "the share-partition's start offset resolved")
    finally:
        describe.close()
    assert not member.answered(0.5)
    produce(gateway_env.broker, topic)
    assert member.answered(60), "no answer 60 s after the first record was produced (MaxWaitMs 120 s)"
    assert acquired(member.receive_fetch()) == [(0, 0, 1)]
