"""Benchmark: the coordinator job against tansu's built-in coordinator and a plain echo, driven by the same load.

All peers get the same groups (1,000 one-member groups by default) and the same mix (heartbeats and one-partition
offset commits, alternating), one after the other on the same machine:

- tansu: raw Kafka protocol requests (kafka-python's message classes over asyncio sockets, one connection per
  member) to a tansu broker's own group coordinator.
- ours: JSON requests produced to the control topic of a running coordinator query (embedded tansu as the
  transport), responses read from the response topic.
- echo: the same JSON requests and client, answered by a plain kafka-python process that reads each request and
  produces one response for it, with no coordinator and no Spark: what a Python service that does nothing carries
  through this broker, topics and client library on this machine, with this generator on the same cores
  (`bench.transport_bench` measures the transport alone, kafka-python against librdkafka).

Reported per peer: sustained requests/s (open loop, a burst far above capacity, counted from the first request to
the last response), request -> response latency p50/p99 at a fixed offered load (half our sustained rate unless
--rate is given; with the rate the generator really achieved), and for ours the micro-batch duration with its parts
(Spark's durations, the state commit, and `addBatch` split into the state calls and their producing by the job's own
timings), idle CPU and restart to first response.
Prints one JSON document; run with `python -m bench.stream_bench [--groups N] [--seconds S]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import struct
import tempfile
import threading
import time
import uuid
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
                                           JoinGroupResponse, OffsetCommitRequest, OffsetCommitResponse,
                                           SyncGroupRequest, SyncGroupResponse)

from streaming import config as job_config
from streaming.embedded import start_broker
from streaming.query import spark_session, start_query
from streaming.topics import ensure_topics

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

    async def fixed_rate(self, rate: float, seconds: float) -> dict:
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
        return {"offered_per_s": rate, **percentiles(latencies)}


def run_tansu(groups: int, burst: int, rate: float, seconds: float) -> dict:
    broker = start_broker()
    try:
        async def main():
            peer = TansuPeer(broker.port, groups)
            t = time.monotonic()
            await peer.form()
            formed = time.monotonic() - t
            sustained = await peer.burst(burst)
            latency = await peer.fixed_rate(rate, seconds)
            for conn, *_ in peer.members:
                conn.close()
            return {"groups_formed_s": round(formed, 1), "sustained": sustained, "fixed_rate": latency}
        return asyncio.run(main())
    finally:
        broker.stop()


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


def run_echo(groups: int, burst: int, rate: float, seconds: float) -> dict:
    broker = start_broker()
    echo = None
    try:
        props = job_config.load(overrides={"bootstrap.servers": broker.bootstrap_servers})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
        requests, responses = props["topic.requests"], props["topic.responses"]
        echo = multiprocessing.get_context("spawn").Process(
            target=_echo, args=(broker.bootstrap_servers, requests, responses), daemon=True)
        echo.start()
        client = JobClient(broker.bootstrap_servers, requests, responses)
        members = [(f"g{i}", f"member-{i}", 1) for i in range(groups)]
        sustained = _burst(client, members, burst)
        latency = _fixed_rate(client, members, rate, seconds)
        client.close()
        return {"sustained": {"requests_per_s": round(sustained), "errors": 0}, "fixed_rate": latency}
    finally:
        if echo is not None:
            echo.terminate()
            echo.join()
        broker.stop()


def _burst(client: "JobClient", members: list[tuple[str, str, int]], total: int) -> float:
    """Requests/s for `total` requests sent at once, from the first sent to the last answered. The requests are
    encoded before the clock starts: the generator shares the cores with the peer it measures, and building them
    in the loop took CPU from it (the echo alone: 9,000-11,500/s with, 11,800-12,300/s without, 2026-11-22)."""
    requests = [encoded(_load_request(*members[k % len(members)], k)) for k in range(total)]
    t = time.monotonic()
    ids = [client.send_encoded(*request) for request in requests]
    client.wait(ids)
    return total / (time.monotonic() - t)


def _fixed_rate(client: "JobClient", members: list[tuple[str, str, int]], rate: float, seconds: float) -> dict:
    """Request -> response latency with requests offered at `rate` for `seconds`."""
    ids = []
    start = time.monotonic()
    k = 0
    while time.monotonic() - start < seconds:
        due = start + k / rate
        time.sleep(max(0.0, due - time.monotonic()))  # one clock read: the time may pass `due` in between
        ids.append(client.send(_load_request(*members[k % len(members)], k)))
        if k % 50 == 0:
            client.producer.flush()
        k += 1
    sent_for = time.monotonic() - start
    client.wait(ids)
    # A load generator short of CPU falls behind its schedule: report the rate it really offered too.
    return {"offered_per_s": rate, "achieved_per_s": round(len(ids) / sent_for),
            **percentiles([client.latencies[i] for i in ids])}


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


def run_ours(groups: int, burst: int, rate: float | None, seconds: float, trigger_ms: int) -> dict:
    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    try:
        props = job_config.load(overrides={
            "bootstrap.servers": broker.bootstrap_servers, "checkpoint.location": str(workdir / "checkpoint"),
            "group.initial.rebalance.delay.ms": "0", "trigger.interval.ms": str(trigger_ms),
            "topic.requests": "bench-requests", "topic.responses": "bench-responses",
            "topic.records": "bench-records", "topic.dead.letters": "bench-dead-letters"})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
        # Spark keeps the last 100 progress reports by default: fewer than a loaded run's batches.
        spark = spark_session({**job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS),
                               "spark.sql.streaming.numRecentProgressUpdates": "10000"})
        query = start_query(spark, props)
        client = JobClient(broker.bootstrap_servers, props["topic.requests"], props["topic.responses"])
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
        members = []
        syncs = []
        for i in range(groups):
            member, generation = joined[i]["member_id"], joined[i]["generation_id"]
            members.append((f"g{i}", member, generation))
            syncs.append(client.send({"api": "SyncGroup", "request_id": f"s-{i}", "group_id": f"g{i}",
                                      "member_id": member, "generation_id": generation, "group_instance_id": None,
                                      "protocol_type": "consumer", "protocol_name": "range",
                                      "assignments": [{"member_id": member, "assignment": ""}]}))
        client.wait(syncs)
        formed = time.monotonic() - t
        formed_at = query.lastProgress.batchId if query.lastProgress else -1

        sustained = _burst(client, members, burst)
        latency = _fixed_rate(client, members, rate or max(1.0, round(sustained / 2)), seconds)
        batches = [p for p in query.recentProgress if p.batchId > formed_at and p.numInputRows > 0]
        parts = {}
        for name in ("latestOffset", "queryPlanning", "getBatch", "addBatch", "walCommit", "commitOffsets",
                     "triggerExecution"):
            values = [p.durationMs.get(name, 0) for p in batches]
            parts[name] = round(statistics.median(values)) if values else None
        parts["state_commit"] = round(statistics.median(
            [sum(op.commitTimeMs for op in p.stateOperators) for p in batches])) if batches else None
        # addBatch split by the state calls' own timings (streaming.sink.SUMMARY_SCHEMA): what is left is reading,
        # routing, the shuffle and Spark's per-key work.
        for name, column in (("state_calls", "call_us"), ("produce", "produce_us")):
            values = [p.observedMetrics["coordinator"][column] / 1000 for p in batches
                      if "coordinator" in p.observedMetrics]
            parts[name] = round(statistics.median(values)) if values else None
        parts["rows_per_batch"] = round(statistics.median([p.numInputRows for p in batches])) if batches else None

        time.sleep(5)
        idle = _cpu_in(30)

        query.stop()
        t = time.monotonic()
        query = start_query(spark, props)
        group, member, generation = members[0]
        rid = client.send({"api": "Heartbeat", "request_id": "after-restart", "group_id": group,
                           "member_id": member, "generation_id": generation, "group_instance_id": None})
        client.wait([rid])
        restart = time.monotonic() - t
        query.stop()
        client.close()
        return {"groups_formed_s": round(formed, 1),
                "sustained": {"requests_per_s": round(sustained), "errors": 0},
                "fixed_rate": latency,
                "batch_ms_median": parts, "batches_measured": len(batches),
                "idle_cores": round(idle, 3), "restart_to_first_response_s": round(restart, 1)}
    finally:
        broker.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=100_000, help="requests in the sustained-rate burst")
    parser.add_argument("--seconds", type=float, default=30.0, help="duration of the fixed-rate phase")
    parser.add_argument("--rate", type=float, help="fixed offered load (default: half our sustained rate)")
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--skip-tansu", action="store_true")
    parser.add_argument("--skip-echo", action="store_true")
    args = parser.parse_args()
    ours = run_ours(args.groups, args.burst, args.rate, args.seconds, args.trigger_ms)
    result = {"ours": ours}
    if not args.skip_tansu:
        rate = ours["fixed_rate"]["offered_per_s"]
        result["tansu"] = run_tansu(args.groups, min(args.burst, 50_000), rate, args.seconds)
    if not args.skip_echo:
        result["echo"] = run_echo(args.groups, args.burst, ours["fixed_rate"]["offered_per_s"], args.seconds)
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
