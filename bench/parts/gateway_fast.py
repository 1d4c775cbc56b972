"""The gateway's fast path measured against its floors and tansu's own coordinator (`bench.gateway_bench` runs it).

1. Latency. One raw Kafka connection per target, requests one at a time, alternating, `samples` of each:
   - through the gateway, in front of the real coordinator query: OffsetCommit (one partition) and Heartbeat of a
     one-member Stable group (answered from its view once the view is fresh), an acks=all Produce of one 100-byte
     record (forwarded: the floor of any durable commit through a log) and ApiVersions (answered by the gateway
     itself: its own floor);
   - straight to tansu, the same OffsetCommit, Heartbeat, Produce and ApiVersions: tansu's own coordinator.
2. Control records per member-minute: ten unmodified consumers (five kafka-python, five librdkafka, both at their
   default heartbeat interval of 3 s and session timeout of 45 s) in one Stable group through the gateway, idle for
   `liveness_s`; every record the group writes to the requests topic in that time counts.
3. Three librdkafka consumers that commit every record synchronously, through the gateway (with the classic
   protocol, and with KIP-848's consumer protocol, which tansu does not have) and straight to tansu's coordinator:
   the seconds until the group is formed (each consumer owns partitions of a 6-partition topic), then, 600 records
   produced, the seconds until every one is committed (classic: session timeout 6 s, heartbeat 2 s, as tansu's own
   figures in the reference are taken; the consumer protocol: the coordinator's, 45 s and 5 s; a 10 ms fetch wait
   on every path). Forming is reported apart: it is Kafka's delayed initial rebalance here (3 s, extended once as
   the other two join: KIP-134), which tansu has not.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from typing import Any, Callable

from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           OffsetCommitRequest, OffsetCommitResponse, SyncGroupRequest,
                                           SyncGroupResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from assignors.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from bench.stream_bench import RawConnection, percentiles

PARTITIONS = 6


def _port(servers: str) -> int:
    return int(servers.rpartition(":")[2])


def create_topic(bootstrap: str, partitions: int = PARTITIONS) -> str:
    topic = f"bench-fast-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, 1)])
    admin.close()
    return topic


def fill(bootstrap: str, topic: str, records_per_partition: int, partitions: int = PARTITIONS) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    for p in range(partitions):
        for i in range(records_per_partition):
            producer.send(topic, b"%d" % i, partition=p)
    producer.flush()
    producer.close()


# -- CPU per process ------------------------------------------------------------------------------------------------

_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) * _TICK_S


def cpu_seconds(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each named process and its live descendants; `bench` is this process alone, and
    `spark` its other descendants (the driver's JVM and its Python workers) that are no named process's."""
    stats = {int(d): _stat(int(d)) for d in os.listdir("/proc") if d.isdigit()}
    children: dict[int, list[int]] = {}
    for pid, stat in stats.items():
        if stat is not None:
            children.setdefault(stat[0], []).append(pid)

    def tree(pid: int, skip: set[int]) -> float:
        if pid in skip or stats.get(pid) is None:
            return 0.0
        return stats[pid][1] + sum(tree(c, skip) for c in children.get(pid, ()))

    named = set(roots.values())
    out = {name: round(tree(pid, set()), 2) for name, pid in roots.items()}
    me = os.getpid()
    out["bench"] = round(stats[me][1], 2) if stats.get(me) else 0.0
    out["spark"] = round(sum(tree(c, named) for c in children.get(me, ())), 2)
    return out


def cpu_between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before.get(name, 0.0), 2) for name in after}


# -- 1. latency ----------------------------------------------------------------------------------------------------


async def _form(conn: RawConnection, group: str, topic: str) -> tuple[str, int]:
    """A one-member group, Stable: the member-id handshake, the join, the sync. (member id, generation)."""
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                         metadata=encode_subscription(Subscription((topic,))))
    member_id = ""
    for _ in range(10):  # the member-id handshake; again after a rebalance in progress (tansu) or a timeout
        joined = await conn.send(JoinGroupRequest[9](
            group_id=group, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id=member_id,
            group_instance_id=None, protocol_type="consumer", protocols=[protocol], reason=None), 9, JoinGroupResponse)
        member_id = joined.member_id or member_id
        if joined.error_code != 0:
            continue
        # tansu takes a SyncGroup only with an assignment for every member that is not empty
        assignment = SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=encode_assignment(
            Assignment(((topic, tuple(range(PARTITIONS))),))))
        synced = await conn.send(SyncGroupRequest[5](
            group_id=group, generation_id=joined.generation_id, member_id=member_id, group_instance_id=None,
            protocol_type="consumer", protocol_name="range", assignments=[assignment]), 5, SyncGroupResponse)
        if synced.error_code == 0:
            return member_id, joined.generation_id
    raise RuntimeError(f"group {group} did not form: {joined}")


def _produce_request(topic: str) -> Any:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1024)
    builder.append(int(time.time() * 1000), None, b"x" * 100)
    builder.close()
    data = ProduceRequest.TopicProduceData
    return ProduceRequest[8](transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=0, records=builder.buffer())])])


def _requests(group: str, topic: str, member_id: str, generation: int) -> dict[str, tuple[Any, type, int]]:
    commit_topic = OffsetCommitRequest.OffsetCommitRequestTopic
    return {
        "produce": (_produce_request(topic), ProduceResponse, 8),
        "commit": (OffsetCommitRequest[8](
            group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
            topics=[commit_topic(name=topic, partitions=[commit_topic.OffsetCommitRequestPartition(
                partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata="")])]),
            OffsetCommitResponse, 8),
        "heartbeat": (HeartbeatRequest[4](group_id=group, generation_id=generation, member_id=member_id,
                                          group_instance_id=None), HeartbeatResponse, 4),
        "api_versions": (ApiVersionsRequest[3](client_software_name="bench", client_software_version="1"),
                         ApiVersionsResponse, 3),
    }


def _error(kind: str, answer: Any) -> int:
    if kind == "produce":
        return max(p.error_code for t in answer.responses for p in t.partition_responses)
    if kind == "commit":
        return max(p.error_code for t in answer.topics for p in t.partitions)
    return answer.error_code


async def round_trips(servers: str, topic: str, samples: int, warm_s: float) -> dict[str, list[float]]:
    conn = await RawConnection.open(_port(servers))
    try:
        group = f"bench-fast-{uuid.uuid4().hex[:6]}"
        member_id, generation = await _form(conn, group, topic)
        requests = _requests(group, topic, member_id, generation)
        # Until the group's view is fresh (ours) and the connections warm: requests of each kind, untimed.
        deadline = time.monotonic() + warm_s
        while time.monotonic() < deadline:
            for kind, (request, response, version) in requests.items():
                await conn.send(request, version, response)
        out: dict[str, list[float]] = {kind: [] for kind in requests}
        for _ in range(samples):
            for kind, (request, response, version) in requests.items():
                started = time.perf_counter()
                answer = await conn.send(request, version, response)
                out[kind].append(time.perf_counter() - started)
                if _error(kind, answer) != 0:
                    raise RuntimeError(f"{kind} answered with an error: {answer}")
        return out
    finally:
        conn.close()


def latency(gateway: str, broker: str, samples: int) -> dict:
    ours = asyncio.run(round_trips(gateway, create_topic(broker), samples, warm_s=8.0))
    tansu = asyncio.run(round_trips(broker, create_topic(broker), samples, warm_s=2.0))
    out = {"samples": samples,
           "gateway": {kind: percentiles(times) for kind, times in ours.items()},
           "tansu": {kind: percentiles(times) for kind, times in tansu.items()}}
    out["ratios"] = ratios(ours)
    out["goal"] = "commit/produce p50 <= 2, p99 <= 5; heartbeat/ApiVersions p50 <= 2, p99 <= 5"
    return out


def ratios(times: dict[str, list[float]]) -> dict[str, float]:
    """Issue 24's latency ratios A-D of one target's samples."""

    def ratio(numerator: str, denominator: str, p: float) -> float:
        return round(_quantile(times[numerator], p) / _quantile(times[denominator], p), 2)

    return {"commit_p50_over_produce_p50": ratio("commit", "produce", 0.5),
            "commit_p99_over_produce_p99": ratio("commit", "produce", 0.99),
            "heartbeat_p50_over_api_versions_p50": ratio("heartbeat", "api_versions", 0.5),
            "heartbeat_p99_over_api_versions_p99": ratio("heartbeat", "api_versions", 0.99)}


def _quantile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


# -- 2. control records per member-minute --------------------------------------------------------------------------


def _consumer(client: str, servers: str, topic: str, group: str) -> Any:
    if client == "kafka-python":
        consumer = KafkaConsumer(bootstrap_servers=servers, group_id=group, enable_auto_commit=False)
        consumer.subscribe([topic])
        return consumer
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([topic])
    return consumer


class _Polling:
    """Each consumer polled in a thread of its own, as an application polls its consumer (each client's own thread
    heartbeats; polls make joins and rebalances progress).

    Not in turn from one thread with short polls: kafka-python 3.0.12 drops a join round (JoinGroup then SyncGroup)
    that completes between two of its polls and starts another (`ensure_active_group_async` replaces a done join
    task instead of taking its result). Ten consumers polled 20 ms each in turn were each outside a poll most of
    the time, so whenever SyncGroup took longer than a poll (a micro-batch here) its kafka-python members joined
    again and again: 20-33 control records per member-minute in four of seven runs of this figure (issue 32),
    1.0 in the others, with no change of the coordinator between them."""

    def __init__(self, consumers: list[Any]) -> None:
        self._stop = threading.Event()
        self._assigned = [False] * len(consumers)
        self._threads = [threading.Thread(target=self._run, args=(i, c), daemon=True) for i, c in enumerate(consumers)]
        for thread in self._threads:
            thread.start()

    def _run(self, index: int, consumer: Any) -> None:
        while not self._stop.is_set():
            if isinstance(consumer, KafkaConsumer):
                consumer.poll(timeout_ms=100)
            else:
                consumer.poll(0.1)
            self._assigned[index] = bool(consumer.assignment())

    def all_assigned(self) -> bool:
        return all(self._assigned)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)


def control_records_per_member_minute(gateway: str, broker: str, requests_topic: str, liveness_s: float) -> dict:
    topic = create_topic(broker, partitions=10)
    group = f"bench-liveness-{uuid.uuid4().hex[:6]}"
    consumers = [_consumer("kafka-python" if i < 5 else "librdkafka", gateway, topic, group) for i in range(10)]
    polling = _Polling(consumers)
    try:
        deadline = time.monotonic() + 180
        while not polling.all_assigned():
            if time.monotonic() > deadline:
                raise TimeoutError("10 consumers did not get their partitions within 180 s")
            time.sleep(0.5)
        time.sleep(5)  # the last members' first heartbeats
        started = int(time.time() * 1000)
        time.sleep(liveness_s)
        ended = int(time.time() * 1000)
    finally:
        polling.stop()
        for consumer in consumers:
            consumer.close()
    records = _group_records(broker, requests_topic, group, started, ended)
    minutes = (ended - started) / 60_000
    return {"members": 10, "seconds": round((ended - started) / 1000, 1), "records": len(records),
            "by_api": {api: records.count(api) for api in sorted(set(records))},
            "control_records_per_member_minute": round(len(records) / 10 / minutes, 2),
            "before_the_fast_path": "20 (a control record per heartbeat, every 3 s)", "goal": "<= 2"}


def _group_records(broker: str, topic: str, group: str, start_ms: int, end_ms: int) -> list[str]:
    """The `api` of every record keyed by `group` on the requests topic with a timestamp in [start, end)."""
    import json

    consumer = KafkaConsumer(bootstrap_servers=broker, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)])
    apis = [json.loads(r.value)["api"] for r in consumer
            if r.key == group.encode() and start_ms <= r.timestamp < end_ms]
    consumer.close()
    return apis


# -- 3. three consumers committing every record --------------------------------------------------------------------


def three_consumers(servers: str, broker: str, records_per_partition: int = 100,
                    processes: dict[str, int] | None = None, formed_hook: Callable[[], None] | None = None,
                    group_protocol: str = "classic") -> dict:
    """Three librdkafka consumers of one group on a 6-partition topic: seconds until the group is formed (each owns
    partitions), then, the records produced, seconds until every one is committed. `processes`: named process ids
    whose CPU seconds over the committing are reported (`cpu_seconds`); `formed_hook`: called once the group is
    formed, before the records are produced (the bench pauses the query there). `group_protocol="consumer"`:
    KIP-848's protocol (its session and heartbeat interval are the coordinator's: the client may not set them)."""
    from confluent_kafka import Consumer

    topic = create_topic(broker)
    group = f"bench-three-{uuid.uuid4().hex[:6]}"
    committed = {p: 0 for p in range(PARTITIONS)}
    owned: dict[int, int] = {}
    lock = threading.Lock()
    done = threading.Event()
    failures: list[str] = []
    commit_times: list[float] = []
    timeline: dict[int, dict[str, float]] = {i: {"records": 0, "commit_s": 0.0} for i in range(3)}
    """Per consumer: its first record's and last commit's monotonic times, records committed, seconds in commit."""

    def run(index: int) -> None:
        # A short fetch wait on both paths: tansu holds a fetch for its whole wait when there is nothing new.
        timing = ({"group.protocol": "consumer"} if group_protocol == "consumer"
                  else {"session.timeout.ms": 6000, "heartbeat.interval.ms": 2000})
        consumer = Consumer({"bootstrap.servers": servers, "group.id": group, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10, **timing})
        consumer.subscribe([topic])
        try:
            while not done.is_set():
                for message in consumer.consume(100, 0.05):
                    if message.error() is not None:
                        continue
                    before = time.perf_counter()
                    try:
                        consumer.commit(message=message, asynchronous=False)
                    except Exception as exc:  # noqa: BLE001 - a rebalance: the next owner re-reads
                        failures.append(str(exc))
                        continue
                    commit_times.append(time.perf_counter() - before)
                    mine = timeline[index]
                    mine.setdefault("first", time.monotonic() - commit_times[-1])
                    mine["last"] = time.monotonic()
                    mine["records"] += 1
                    mine["commit_s"] += commit_times[-1]
                    with lock:
                        committed[message.partition()] = max(committed[message.partition()], message.offset() + 1)
                        if all(o == records_per_partition for o in committed.values()):
                            done.set()
                owned[index] = len(consumer.assignment())
        finally:
            consumer.close()

    started = time.monotonic()
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(3)]
    for thread in threads:
        thread.start()
    deadline = started + 180
    while not (len(owned) == 3 and all(owned.values()) and sum(owned.values()) == PARTITIONS):
        if time.monotonic() > deadline:
            done.set()
            raise TimeoutError(f"three consumers did not share the partitions within 180 s: {owned}")
        time.sleep(0.05)
    formed = time.monotonic()
    if formed_hook is not None:
        formed_hook()
    cpu_before = cpu_seconds(processes or {})
    fill(broker, topic, records_per_partition)
    produced = time.monotonic()
    finished = done.wait(300)
    ended = time.monotonic()
    cpu = cpu_between(cpu_before, cpu_seconds(processes or {}))
    done.set()
    for thread in threads:
        thread.join(timeout=30)
    return {"records": records_per_partition * PARTITIONS, "all_committed": finished,
            "seconds_to_form": round(formed - started, 2),
            "seconds_to_commit_all": round(ended - produced, 2), "seconds": round(ended - started, 2),
            "commit_call": percentiles(commit_times), "refused_commits": len(failures),
            "cpu_seconds_while_committing": cpu,
            "consumers": [{"records": t["records"], "seconds_in_commit": round(t["commit_s"], 3),
                           "first_record_s": round(t.get("first", produced) - produced, 3),
                           "last_commit_s": round(t.get("last", produced) - produced, 3)}
                          for t in timeline.values()]}
