"""Benchmark: the coordinator job against tansu's built-in coordinator and a plain echo, driven by the same load.

All peers get the same groups (1,000 one-member groups by default) and the same mix (heartbeats and one-partition
offset commits, alternating), on the same machine in the same minutes:

- ours: JSON requests produced to the control topic of a running coordinator query (embedded tansu as the
  transport), responses read from the response topic; once per state operator (`state.operator`: the default
  `transformWithState` and release 0.1.0's `applyInPandasWithState`), two queries of one SparkSession, each
  on its own topics.
- tansu: raw Kafka protocol requests (kafka-python's message classes over asyncio sockets, one connection per
  member) to a tansu broker's own group coordinator.
- echo: the same JSON requests and client as ours, answered by a plain kafka-python process that reads each request
  and produces one response for it, with no coordinator and no Spark: what a Python service that does nothing
  carries through this broker, topics and client library on this machine, with this generator on the same cores
  (`bench.latency.transport_bench` measures the transport alone, kafka-python against librdkafka).
- floor: the simplest `applyInPandasWithState` query (Spark's rate source, a one-line state function), whose
  micro-batch duration is the least a Python stateful query costs per batch here.

The machine's 2 cores are shared with other work, so every peer is set up first and then measured in turns, in
`--rounds` rounds, each round in another order: one burst each (sustained requests/s: open loop far above capacity,
from the first request to the last response), then `--seconds / --rounds` each at a fixed offered load (half our
default operator's sustained rate unless --rate is given), and the floor query. Sustained ratios are the medians of
the rounds' ratios, latency percentiles are over each peer's pooled samples.

Reported: per peer its bursts, the median, p50/p99 at the fixed load (with the rate the generator really achieved);
for ours the micro-batch duration under that load with its parts (Spark's durations, the state commit, and
`addBatch` split into the state calls and their producing by the job's own timings), and for the default operator
idle CPU and restart to first response; the load average at each phase. Prints one JSON document, the load average,
and the ratios, last:
`stream ratios: sustained/tansu = A, sustained/echo = B, p50/floor = C, p99/floor = D` (the default operator; the
line before it is the same for `applyInPandasWithState`).
Run with `python -m bench.stream_bench [--groups N] [--burst N] [--seconds S] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pandas as pd
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
                                           JoinGroupResponse, OffsetCommitRequest, OffsetCommitResponse,
                                           SyncGroupRequest, SyncGroupResponse)

from common import config as job_config
from common.topics import ensure_topics
from streaming.kafka_io.embedded import start_broker
from streaming.query import OPERATORS, spark_session, start_query, stop_between_batches

SUBSCRIPTION = bytes.fromhex("0003000000010006") + b"orders" + b"\xff\xff\xff\xff" + b"\x00\x00\x00\x00" + \
    b"\xff\xff\xff\xff"


def percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {"p50_ms": None, "p99_ms": None, "n": 0}
    ordered = sorted(samples)
    return {"p50_ms": round(ordered[len(ordered) // 2] * 1000, 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1),
            "n": len(ordered)}


# --- tansu's own coordinator over the raw protocol ------------------------------------------------------------


class RawConnection:
    """One Kafka connection with pipelined requests matched by correlation id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.pending: dict[int, tuple[type, int, asyncio.Future]] = {}
        self.next_id = 0
        self.task = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def open(cls, port: int) -> "RawConnection":
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, request, version: int, response_class):
        self.next_id += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self.next_id, client_id="bench")
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = (response_class, version, future)
        self.writer.write(request.encode(header=True, framed=True))
        return await future

    async def _read_loop(self) -> None:
        while True:
            size = struct.unpack(">i", await self.reader.readexactly(4))[0]
            payload = await self.reader.readexactly(size)
            correlation_id = struct.unpack(">i", payload[:4])[0]
            response_class, version, future = self.pending.pop(correlation_id)
            future.set_result(response_class.decode(payload, version=version, header=True))

    def close(self) -> None:
        self.task.cancel()
        self.writer.close()


class TansuPeer:
    def __init__(self, port: int, groups: int) -> None:
        self.port, self.groups = port, groups
        self.members: list[tuple[RawConnection, str, str, int]] = []

    async def form(self) -> None:
        async def one(i: int):
            conn = await RawConnection.open(self.port)
            group = f"bench-{i}"

            def join(member_id: str):
                return JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                        member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                        protocols=[("range", SUBSCRIPTION)])
            first = await conn.send(join(""), 5, JoinGroupResponse)
            joined = await conn.send(join(first.member_id), 5, JoinGroupResponse)
            await conn.send(SyncGroupRequest(group_id=group, generation_id=joined.generation_id,
                                             member_id=joined.member_id, group_instance_id=None,
                                             assignments=[(joined.member_id, b"")]), 3, SyncGroupResponse)
            return conn, group, joined.member_id, joined.generation_id
        self.members = list(await asyncio.gather(*(one(i) for i in range(self.groups))))

    async def request(self, index: int, n: int) -> int:
        conn, group, member_id, generation = self.members[index]
        if n % 2:
            response = await conn.send(HeartbeatRequest(group_id=group, generation_id=generation,
                                                        member_id=member_id, group_instance_id=None), 3,
                                       HeartbeatResponse)
            return response.error_code
        response = await conn.send(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
            group_instance_id=None, retention_time_ms=-1,
            topics=[("orders", [(0, n, -1, "")])]), 7, OffsetCommitResponse)
        return response.topics[0].partitions[0].error_code

    async def burst(self, total: int) -> dict:
        """Open loop far above capacity: every member keeps one request in flight until `total` are answered."""
        done = 0
        errors = 0
        start = time.monotonic()

        async def member(i: int):
            nonlocal done, errors
            n = 0
            while done < total:
                n += 1
                errors += await self.request(i, n) != 0
                done += 1
        await asyncio.gather(*(member(i) for i in range(self.groups)))
        return {"requests_per_s": round(done / (time.monotonic() - start)), "errors": errors}

    async def fixed_rate(self, rate: float, seconds: float) -> list[float]:
        """Latencies (s) of requests offered at `rate` for `seconds`."""
        latencies: list[float] = []
        interval = 1 / rate
        start = time.monotonic()
        tasks = []

        async def one(i: int, n: int):
            t = time.monotonic()
            await self.request(i, n)
            latencies.append(time.monotonic() - t)
        k = 0
        while time.monotonic() - start < seconds:
            due = start + k * interval
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(one(k % self.groups, k)))
            k += 1
        await asyncio.gather(*tasks)
        return latencies


# --- a service that does nothing: a plain kafka-python echo -------------------------------------------------------


def _answer(request: bytes) -> bytes:
    """The echo's response to a request: `{"request_id", "error_code": 0}`."""
    return json.dumps({"request_id": json.loads(request)["request_id"], "error_code": 0},
                      separators=(",", ":")).encode()


def _echo(bootstrap: str, requests: str, responses: str) -> None:
    """Answer every request with `_answer`, as fast as kafka-python can (a child process)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                             fetch_max_wait_ms=10, max_poll_records=10000)
    partitions = None
    while not partitions:
        partitions = consumer.partitions_for_topic(requests)
    consumer.assign([TopicPartition(requests, p) for p in partitions])
    consumer.seek_to_beginning()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, batch_size=256 * 1024)
    while True:
        for records in consumer.poll(timeout_ms=50).values():
            for record in records:
                producer.send(responses, key=record.key, value=_answer(record.value))
        producer.flush()


def _burst(client: "JobClient", members: list[tuple[str, str, int]], total: int) -> float:
    """Requests/s for `total` requests sent at once, from the first sent to the last answered. The requests are
    encoded before the clock starts: the generator shares the cores with the peer it measures, and building them
    in the loop took CPU from it (the echo alone: 9,000-11,500/s with, 11,800-12,300/s without, 2026-11-22)."""
    requests = [encoded(_load_request(*members[k % len(members)], k)) for k in range(total)]
    t = time.monotonic()
    ids = [client.send_encoded(*request) for request in requests]
    client.wait(ids)
    return total / (time.monotonic() - t)


def _fixed_rate(client: "JobClient", members: list[tuple[str, str, int]], rate: float,
                seconds: float) -> tuple[list[float], float]:
    """Request -> response latencies (s) with requests offered at `rate` for `seconds`, and the rate the generator
    really offered (one short of CPU falls behind its schedule)."""
    ids = []
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < seconds:
        due = start + k / rate
        time.sleep(max(0.0, due - time.monotonic()))  # one clock read: the time may pass `due` in between
        ids.append(client.send(_load_request(*members[k % len(members)], k)))
        k += 1
    sent_for = time.monotonic() - start
    client.wait(ids)
    return [client.latencies[i] for i in ids], len(ids) / sent_for


# --- our coordinator job --------------------------------------------------------------------------------------


class JobClient:
    """Produces JSON requests and matches responses by request_id in a background consumer thread."""

    def __init__(self, bootstrap: str, requests: str, responses: str) -> None:
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, batch_size=256 * 1024)
        self.requests = requests
        self.sent: dict[str, float] = {}
        self.latencies: dict[str, float] = {}
        self.bodies: dict[str, dict] = {}
        self.keep: set[str] = set()
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                      fetch_max_wait_ms=10, max_poll_records=10000)
        parts = None
        while not parts:
            parts = self.consumer.partitions_for_topic(responses)
        tps = [TopicPartition(responses, p) for p in parts]
        self.consumer.assign(tps)
        for tp in tps:
            self.consumer.seek(tp, 0)
        self.running = True
        self.thread = threading.Thread(target=self._consume, daemon=True)
        self.thread.start()

    def _consume(self) -> None:
        while self.running:
            for records in self.consumer.poll(timeout_ms=50).values():
                now = time.monotonic()
                for record in records:
                    body = json.loads(record.value)
                    rid = body["request_id"]
                    if rid in self.sent and rid not in self.latencies:
                        self.latencies[rid] = now - self.sent[rid]
                        if rid in self.keep:
                            self.bodies[rid] = body

    def send(self, request: dict, keep: bool = False) -> str:
        if keep:
            self.keep.add(request["request_id"])
        return self.send_encoded(*encoded(request))

    def send_encoded(self, rid: str, key: bytes, value: bytes) -> str:
        self.sent[rid] = time.monotonic()
        self.producer.send(self.requests, key=key, value=value)
        return rid

    def wait(self, ids: list[str], timeout_s: float = 600) -> None:
        self.producer.flush()
        deadline = time.monotonic() + timeout_s
        while any(i not in self.latencies for i in ids):
            if time.monotonic() > deadline:
                missing = sum(i not in self.latencies for i in ids)
                raise TimeoutError(f"{missing} of {len(ids)} requests unanswered")
            time.sleep(0.05)

    def close(self) -> None:
        self.running = False
        self.thread.join()
        self.consumer.close()
        self.producer.close()


def encoded(request: dict) -> tuple[str, bytes, bytes]:
    """(request_id, key, value) as the control topic takes a request."""
    return (request["request_id"], request["group_id"].encode(),
            json.dumps(request, separators=(",", ":")).encode())


def _join(group: str, member_id: str, rid: str) -> dict:
    return {"api": "JoinGroup", "request_id": rid, "group_id": group, "member_id": member_id,
            "group_instance_id": None, "client_id": "bench", "client_host": "/127.0.0.1",
            "session_timeout_ms": 60000, "rebalance_timeout_ms": 60000, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": "AAMAAAABAAZvcmRlcnP/////AAAAAP///////w=="}]}


def _load_request(group: str, member: str, generation: int, n: int) -> dict:
    rid = uuid.uuid4().hex
    if n % 2:
        return {"api": "Heartbeat", "request_id": rid, "group_id": group, "member_id": member,
                "generation_id": generation, "group_instance_id": None}
    return {"api": "OffsetCommit", "request_id": rid, "group_id": group, "member_id": member,
            "generation_id": generation, "group_instance_id": None,
            "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": n,
                                                          "committed_leader_epoch": -1,
                                                          "committed_metadata": ""}]}]}


def _cpu_by_pid(pids: list[int]) -> dict[int, float]:
    """User + system time of each of `pids` that is still running."""
    times = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            times[pid] = sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")
        except (FileNotFoundError, IndexError):
            pass
    return times


def _cpu_in(seconds: float) -> float:
    """Cores the job's processes used over `seconds`, from each process's own CPU time at both ends. A process that
    exits in the window drops out (Spark retires Python workers idle for a minute, and PySpark's daemon ignores
    SIGCHLD, so their time never reaches a parent: summing totals instead read below zero); one that starts in it
    counts in full."""
    before, t0 = _cpu_by_pid(_job_pids()), time.monotonic()
    time.sleep(seconds)
    after = _cpu_by_pid(_job_pids())
    return sum(t - before.get(pid, 0.0) for pid, t in after.items()) / (time.monotonic() - t0)


def _job_pids() -> list[int]:
    """The JVM and its Python workers: every descendant of this process except the broker."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if b"tansu" in (entry / "cmdline").read_bytes():
                    continue
            except (FileNotFoundError, ProcessLookupError):
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    out, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out




# --- the peers, each set up once and then measured in turns ---------------------------------------------------


class OursPeer:
    """A coordinator query (`operator`) on its own topics of a shared broker, with its groups formed."""

    def __init__(self, spark, broker, operator: str, groups: int, trigger_ms: int, workdir: Path,
                 overrides: dict[str, str]) -> None:
        self.spark, self.operator, self.groups = spark, operator, groups
        short = {"transformWithState": "tws", "applyInPandasWithState": "aipws"}[operator]
        self.props = job_config.load(overrides={
            "bootstrap.servers": broker.bootstrap_servers, "checkpoint.location": str(workdir / f"checkpoint-{short}"),
            "group.initial.rebalance.delay.ms": "0", "trigger.interval.ms": str(trigger_ms), "state.operator": operator,
            **{f"topic.{name}": f"bench-{short}-{name.replace('.', '-')}"
               for name in ("requests", "responses", "records", "dead.letters", "timers", "views")}, **overrides})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, self.props)
        self.query_name = f"bench-{short}"
        self.query = start_query(spark, self.props, query_name=self.query_name)
        self.client = JobClient(broker.bootstrap_servers, self.props["topic.requests"], self.props["topic.responses"])
        self.members: list[tuple[str, str, int]] = []
        self.windows: list[tuple[int, int]] = []  # batch ids of the fixed-rate phases

    def form(self) -> float:
        client, groups = self.client, self.groups
        t = time.monotonic()
        joined: dict[int, dict] = {}
        attempt = 0
        while len(joined) < groups:  # a handshake that straddles a retention check finds its group deleted: redo it
            attempt += 1
            joining = [i for i in range(groups) if i not in joined]
            first = [client.send(_join(f"g{i}", "", f"j1-{i}-{attempt}"), keep=True) for i in joining]
            client.wait(first)
            second = [client.send(_join(f"g{i}", client.bodies[f"j1-{i}-{attempt}"]["member_id"], f"j2-{i}-{attempt}"),
                                  keep=True) for i in joining]
            client.wait(second)
            joined.update((i, client.bodies[f"j2-{i}-{attempt}"]) for i in joining
                          if client.bodies[f"j2-{i}-{attempt}"]["error_code"] == 0)
        syncs = []
        for i in range(groups):
            member, generation = joined[i]["member_id"], joined[i]["generation_id"]
            self.members.append((f"g{i}", member, generation))
            syncs.append(client.send({"api": "SyncGroup", "request_id": f"s-{i}", "group_id": f"g{i}",
                                      "member_id": member, "generation_id": generation, "group_instance_id": None,
                                      "protocol_type": "consumer", "protocol_name": "range",
                                      "assignments": [{"member_id": member, "assignment": ""}]}))
        client.wait(syncs)
        return time.monotonic() - t

    def burst(self, total: int) -> dict:
        return {"requests_per_s": round(_burst(self.client, self.members, total)), "errors": 0}

    def fixed_rate(self, rate: float, seconds: float) -> tuple[list[float], float]:
        first = self._last_batch()
        result = _fixed_rate(self.client, self.members, rate, seconds)
        self.windows.append((first, self._last_batch()))
        return result

    def _last_batch(self) -> int:
        progress = self.query.lastProgress
        return progress.batchId if progress else -1

    def batch_parts(self) -> dict:
        """Medians of the fixed-rate phases' micro-batches: Spark's durations, the state commit, and `addBatch`
        split by the state calls' own timings (`streaming.kafka_io.sink.SUMMARY_SCHEMA`): what is left of it is reading,
        routing, the shuffle and Spark's per-key work."""
        batches = [p for p in self.query.recentProgress if p.numInputRows > 0
                   and any(first < p.batchId <= last for first, last in self.windows)]
        parts = {"batches": len(batches)}
        if not batches:
            return parts
        for name in ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets",
                     "triggerExecution"):
            parts[name] = round(statistics.median([p.durationMs.get(name, 0) for p in batches]))
        parts["state_commit"] = round(statistics.median(
            [sum(op.commitTimeMs for op in p.stateOperators) for p in batches]))
        for name, column in (("state_calls", "call_us"), ("produce", "produce_us")):
            values = [p.observedMetrics["coordinator"][column] / 1000 for p in batches
                      if "coordinator" in p.observedMetrics]
            parts[name] = round(statistics.median(values)) if values else None
        parts["rows_per_batch"] = round(statistics.median([p.numInputRows for p in batches]))
        return parts

    def idle_and_restart(self, idle_seconds: float) -> dict:
        """Cores the whole job used while idle (every query of this process counts), and a graceful restart of
        this query to its first response."""
        time.sleep(3)
        idle = _cpu_in(idle_seconds)
        stop_between_batches(self.query)
        t = time.monotonic()
        self.query = start_query(self.spark, self.props, query_name=self.query_name)
        group, member, generation = self.members[0]
        self.client.wait([self.client.send({"api": "Heartbeat", "request_id": "after-restart", "group_id": group,
                                            "member_id": member, "generation_id": generation,
                                            "group_instance_id": None})])
        return {"idle_cores": round(idle, 3), "restart_to_first_response_s": round(time.monotonic() - t, 1)}

    def stop(self) -> None:
        stop_between_batches(self.query)
        self.client.close()


class EchoPeer:
    """The plain kafka-python echo (`_echo`, a child process) on its own broker, driven by the same client."""

    def __init__(self, groups: int) -> None:
        self.broker = start_broker()
        props = job_config.load(overrides={"bootstrap.servers": self.broker.bootstrap_servers})
        ensure_topics({"bootstrap_servers": self.broker.bootstrap_servers}, props)
        requests, responses = props["topic.requests"], props["topic.responses"]
        self.process = multiprocessing.get_context("spawn").Process(
            target=_echo, args=(self.broker.bootstrap_servers, requests, responses), daemon=True)
        self.process.start()
        self.client = JobClient(self.broker.bootstrap_servers, requests, responses)
        self.members = [(f"g{i}", f"member-{i}", 1) for i in range(groups)]

    def burst(self, total: int) -> dict:
        return {"requests_per_s": round(_burst(self.client, self.members, total)), "errors": 0}

    def fixed_rate(self, rate: float, seconds: float) -> tuple[list[float], float]:
        return _fixed_rate(self.client, self.members, rate, seconds)

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.join()
        self.broker.stop()


class TansuSide:
    """tansu's own coordinator (`TansuPeer`) on its own broker, on an event loop kept between turns."""

    def __init__(self, groups: int) -> None:
        self.broker = start_broker()
        self.loop = asyncio.new_event_loop()
        self.peer = TansuPeer(self.broker.port, groups)

    def form(self) -> float:
        t = time.monotonic()
        self.loop.run_until_complete(self.peer.form())
        return time.monotonic() - t

    def burst(self, total: int) -> dict:
        return self.loop.run_until_complete(self.peer.burst(total))

    def fixed_rate(self, rate: float, seconds: float) -> tuple[list[float], float]:
        t = time.monotonic()
        latencies = self.loop.run_until_complete(self.peer.fixed_rate(rate, seconds))
        return latencies, len(latencies) / max(seconds, time.monotonic() - t - max(latencies, default=0))

    def stop(self) -> None:
        for conn, *_ in self.peer.members:
            conn.close()
        self.loop.run_until_complete(asyncio.gather(*(conn.task for conn, *_ in self.peer.members),
                                                    return_exceptions=True))
        self.loop.close()
        self.broker.stop()


def _count_rows(key, frames, state):
    """The floor query's state function: one line."""
    yield pd.DataFrame({"rows": [sum(len(frame) for frame in frames)]})


class FloorQuery:
    """The batch floor: the simplest `applyInPandasWithState` query (Spark's rate source, a few rows per batch, 4
    keys, `_count_rows`), started for each turn and measured by its micro-batches' durations."""

    SKIP = 3  # a (re)started query's first batches plan and warm up

    def __init__(self, spark, trigger_ms: int, workdir: Path) -> None:
        self.spark, self.trigger_ms, self.checkpoint = spark, trigger_ms, str(workdir / "checkpoint-floor")

    def batches(self, seconds: float) -> list[int]:
        """The `triggerExecution` (ms) of the batches that had input, over `seconds` after the warm-up."""
        from pyspark.sql import functions as F
        from pyspark.sql.streaming.state import GroupStateTimeout

        query = (self.spark.readStream.format("rate").option("rowsPerSecond", 10).load()
                 .withColumn("key", F.col("value") % 4).groupBy("key")
                 .applyInPandasWithState(_count_rows, "rows LONG", "n LONG", "append", GroupStateTimeout.NoTimeout)
                 .writeStream.format("noop").option("checkpointLocation", self.checkpoint)
                 .trigger(processingTime=f"{self.trigger_ms} milliseconds").queryName("bench-floor").start())
        try:
            deadline = time.monotonic() + 60
            while len(query.recentProgress) < self.SKIP and time.monotonic() < deadline:
                time.sleep(0.05)
            first = query.lastProgress.batchId if query.lastProgress else -1
            time.sleep(seconds)
            return [p.durationMs["triggerExecution"] for p in query.recentProgress
                    if p.batchId > first and p.numInputRows > 0]
        finally:
            query.stop()


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def _turns(names: list[str], rounds: int) -> list[list[str]]:
    """Each round's order: the names rotated by one per round, so no peer always runs first or last."""
    return [names[r % len(names):] + names[:r % len(names)] for r in range(rounds)]


def run(groups: int = 1000, burst: int = 50_000, seconds: float = 30.0, rate: float | None = None,
        rounds: int = 3, trigger_ms: int = 100, operators: tuple[str, ...] = OPERATORS, tansu: bool = True,
        echo: bool = True, floor_seconds: float = 10.0, idle_seconds: float = 15.0,
        overrides: dict[str, str] | None = None, log=lambda message: None) -> dict:
    """Every peer set up at once, then measured in turns: `rounds` rounds of one burst each, then `rounds` rounds
    of `seconds / rounds` at the fixed rate each (and the floor query), each round in another order. Ratios are
    taken round by round (sustained) or over the pooled samples (latency), so a machine whose speed drifts
    (other work on the same cores) moves both sides of a ratio alike."""
    load = {"start": os.getloadavg()}
    workdir = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    broker = start_broker()
    peers: dict = {}
    try:
        # Spark keeps the last 100 progress reports by default: fewer than a loaded run's batches.
        spark = spark_session({**job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS),
                               "spark.sql.streaming.numRecentProgressUpdates": "10000"})
        formed = {}
        for operator in operators:
            peers[operator] = OursPeer(spark, broker, operator, groups, trigger_ms, workdir, overrides or {})
            formed[operator] = round(peers[operator].form(), 1)
            log(f"{operator}: {groups} groups formed in {formed[operator]} s")
        if tansu:
            peers["tansu"] = TansuSide(groups)
            formed["tansu"] = round(peers["tansu"].form(), 1)
            log(f"tansu: {groups} groups formed in {formed['tansu']} s")
        if echo:
            peers["echo"] = EchoPeer(groups)
        names = list(peers)
        sustained: dict[str, list[dict]] = {name: [] for name in names}
        for r, order in enumerate(_turns(names, rounds)):
            for name in order:
                sustained[name].append(peers[name].burst(burst))
                log(f"round {r + 1} burst {name}: {sustained[name][-1]}")
        load["after_bursts"] = os.getloadavg()
        rates = {name: [s["requests_per_s"] for s in runs] for name, runs in sustained.items()}
        rate = rate or max(1.0, round(_median(rates[operators[0]]) / 2))
        floor = FloorQuery(spark, trigger_ms, workdir)
        latencies: dict[str, list[float]] = {name: [] for name in names}
        achieved: dict[str, list[float]] = {name: [] for name in names}
        floor_batches: list[int] = []
        for r, order in enumerate(_turns([*names, "floor"], rounds)):
            for name in order:
                if name == "floor":
                    floor_batches += floor.batches(floor_seconds)
                    log(f"round {r + 1} floor: median {_median(floor_batches)} ms")
                    continue
                samples, offered = peers[name].fixed_rate(rate, seconds / rounds)
                latencies[name] += samples
                achieved[name].append(offered)
                log(f"round {r + 1} fixed rate {name}: {percentiles(samples)}")
        load["after_fixed_rate"] = os.getloadavg()
        result: dict = {"groups": groups, "burst": burst, "rounds": rounds, "groups_formed_s": formed,
                        "floor": {"batch_ms_median": _median(floor_batches), "batches": len(floor_batches),
                                  "query": "rate source, 10 rows/s, 4 keys, applyInPandasWithState, one-line "
                                           "function, noop sink, same trigger and Spark settings"},
                        "peers": {}}
        for name in names:
            result["peers"][name] = {
                "sustained_per_round": [s["requests_per_s"] for s in sustained[name]],
                "sustained_median": _median(rates[name]),
                "errors": sum(s["errors"] for s in sustained[name]),
                "fixed_rate": {"offered_per_s": rate, "achieved_per_s": round(_median(achieved[name])),
                               **percentiles(latencies[name])}}
            if name in operators:
                result["peers"][name]["batch_ms_median"] = peers[name].batch_parts()
        result["ratios"] = {operator: _ratios(result, operator, rates) for operator in operators}
        if idle_seconds:  # the default operator's query alone
            for name in names[1:]:
                peers.pop(name).stop()
            result["peers"][operators[0]].update(peers[operators[0]].idle_and_restart(idle_seconds))
        load["end"] = os.getloadavg()
        result["load_average"] = load
        return result
    finally:
        for peer in peers.values():
            peer.stop()
        broker.stop()


def _ratios(result: dict, operator: str, rates: dict[str, list[int]]) -> dict:
    """A and B: medians of the ratios of each round's bursts; C and D: the pooled percentiles over the floor."""
    ours = rates[operator]
    floor = result["floor"]["batch_ms_median"]
    fixed = result["peers"][operator]["fixed_rate"]
    out = {}
    for peer in ("tansu", "echo"):
        if peer in rates:
            out[f"sustained/{peer}"] = _median([a / b for a, b in zip(ours, rates[peer]) if b])
    out["p50/floor"] = _ratio(fixed["p50_ms"], floor)
    out["p99/floor"] = _ratio(fixed["p99_ms"], floor)
    return out


def ratio_line(ratios: dict, operator: str | None = None) -> str:
    def fmt(name: str) -> str:
        value = ratios.get(name)
        return f"{name} = {'n/a' if value is None else f'{value:.2f}'}"
    label = "stream ratios" if operator is None else f"stream ratios ({operator})"
    return f"{label}: " + ", ".join(fmt(n) for n in ("sustained/tansu", "sustained/echo", "p50/floor",
                                                      "p99/floor"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=50_000, help="requests in each sustained-rate burst")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="duration of each peer's fixed-rate phase, split over the rounds")
    parser.add_argument("--rate", type=float, help="fixed offered load (default: half our sustained rate)")
    parser.add_argument("--rounds", type=int, default=3, help="turns each peer takes at each measurement")
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--operator", choices=OPERATORS, action="append",
                        help="the state operator(s) to measure (default: both, the default first)")
    parser.add_argument("--skip-tansu", action="store_true")
    parser.add_argument("--skip-echo", action="store_true")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator property for our queries (e.g. kafka.client=kafka-python)")
    args = parser.parse_args()
    operators = tuple(args.operator or OPERATORS)
    result = run(args.groups, args.burst, args.seconds, args.rate, args.rounds, args.trigger_ms, operators,
                 not args.skip_tansu, not args.skip_echo, overrides=job_config.parse_assignments(args.set),
                 log=lambda message: print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2))
    print("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                        for when, avg in result["load_average"].items()))
    for operator in operators[1:]:
        print(ratio_line(result["ratios"][operator], operator))
    print(ratio_line(result["ratios"][operators[0]]))


if __name__ == "__main__":
    main()
