"""The benchmark report: the coordinator job and tansu's built-in group coordinator, side by side, in one run.

    .venv/bin/python -m bench.report [--out bench/out] [--scale quick|default|full] [--skip-job] [--skip-tansu]

Writes `<out>/report.md` and `<out>/report.png`. Figures (each for both peers where it applies):

1. sustained requests/s and latency at half that rate, idle CPU, graceful restart: `bench.stream_bench` (the
   streaming job's benchmark, reused as is) for both peers, and its echo (a service that does nothing) as a note;
2. latency p50/p99 vs offered load: open-loop heartbeats + commits at several fixed rates from the members of
   G groups x M members;
3. time to Stable for a new group of 10, 100, 1,000 members (every member starts at once);
4. time to reassign a failed member's partitions: one member of a Stable group goes silent, until the others are
   Stable again in a new generation;
5. recovery time after kill -9, restarted and with a standby driver taking over (the job only: tansu keeps groups
   in memory, a killed tansu has nothing to recover);
6. state size and batch time with G groups x M members formed through the protocol (100,000 x 10 at `--scale
   full`; smaller by default: the report says what ran), and with 100,000 groups x 10 members loaded the way a
   rebuild loads them (`bench.state_scale`, at the default and full scales), plus the core's state size per group
   extrapolated to 100,000 groups / 1,000,000 members.

Both peers get the same client behaviour: Kafka consumers' protocol (member-id handshake, JoinGroup, SyncGroup by
the leader, heartbeats, commits), the same session and rebalance timeouts. The job is driven through its topics
(deploy/drills/fleet.py); tansu with raw Kafka protocol requests (kafka-python 3.0.12's protocol classes) over
asyncio connections. The job runs as a separate process (`coordinator run`, local[2], conf/ defaults), on its own
tansu broker; tansu's coordinator is another tansu process. Nothing here is a test: figures depend on the machine,
and the report prints the load average next to them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deploy.drills.fleet import ASSIGNMENT, SUBSCRIPTION, Fleet, Member, percentile  # noqa: E402
from state.errors import Errors  # noqa: E402

if TYPE_CHECKING:
    from deploy.drills.fleet import Wire
    from deploy.drills.harness import Environment

SCALES = {
    # sizes: time-to-Stable groups; rates: latency sweep; backlog/population: batch time with G x M in state;
    # sb_*: bench.stream_bench's sustained-rate and fixed-rate run (groups, burst, seconds).
    "quick": dict(sizes=[10, 100], rates=[100, 500], backlog=3000, population=(100, 10), duration=8,
                  sb_groups=200, sb_burst=5000, sb_seconds=10, loaded=(2_000, 10, 1_000)),
    "default": dict(sizes=[10, 100, 1000], rates=[100, 500, 1000, 2000], backlog=20000, population=(1000, 10),
                    duration=15, sb_groups=1000, sb_burst=100_000, sb_seconds=30, loaded=(100_000, 10, 20_000)),
    "full": dict(sizes=[10, 100, 1000], rates=[100, 500, 1000, 2000, 4000], backlog=50000,
                 population=(100_000, 10), duration=20, sb_groups=1000, sb_burst=100_000, sb_seconds=30,
                 loaded=(100_000, 10, 20_000)),
}
"""`loaded` = (groups, members, backlog) for bench.state_scale: the population loaded as a rebuild does, which
reaches 100,000 groups x 10 members in minutes where forming them through the protocol (`population`) takes hours."""
SESSION_MS = 30000
STABLE_SESSION_MS = 10000
"""Session timeout of the time-to-Stable groups: tansu holds every JoinGroup for session/2,
Kafka and the job use group.initial.rebalance.delay.ms (3 s) instead."""
HEARTBEAT_MS = 3000
FAILOVER_SESSION_MS = 6000
FAILOVER_HEARTBEAT_MS = 1000


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class LatencyPoint(NamedTuple):
    """One rate of the latency sweep: what was offered, what was answered, and the answers' latency."""

    offered_rps: int
    answered_rps: float
    p50_s: float | None
    p99_s: float | None


@dataclass
class Results:
    peer: str
    sustained_rps: float | None = None
    sustained_note: str = ""
    latency: list[LatencyPoint] = field(default_factory=list)
    time_to_stable: dict[int, float | None] = field(default_factory=dict)
    reassign_s: float | None = None
    recovery_s: float | None = None
    standby_recovery_s: float | None = None
    population: tuple[int, int] | None = None
    population_batch_ms: list[int] = field(default_factory=list)
    population_note: str = ""
    first_answer_s: float | None = None
    fixed_rate: dict | None = None
    batch_parts_ms: dict | None = None
    idle_cores: float | None = None
    restart_s: float | None = None
    state_rows: int | None = None
    state_bytes: int | None = None
    loaded: dict | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------------
# tansu's coordinator over the raw Kafka protocol
# ---------------------------------------------------------------------------------------------------------------

class RawConnection:
    """bench.stream_bench's pipelined raw Kafka connection, with the call shape this module uses."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def open(self) -> "RawConnection":
        from bench.stream_bench import RawConnection as StreamBenchConnection

        self.conn = await StreamBenchConnection.open(self.port)
        return self

    def call(self, req_cls, resp_cls, version: int, **fields) -> asyncio.Future:
        return asyncio.ensure_future(self.conn.send(req_cls(**fields), version, resp_cls))

    async def close(self) -> None:
        self.conn.close()


class TansuMember:
    def __init__(self, conn: RawConnection, group: str, session_ms: int) -> None:
        self.conn, self.group, self.session_ms = conn, group, session_ms
        self.member_id, self.generation = "", -1

    async def join_and_sync(self) -> None:
        """Kafka consumer behaviour until this member is Stable (re-joins on REBALANCE_IN_PROGRESS or
        ILLEGAL_GENERATION, starts over on UNKNOWN_MEMBER_ID)."""
        from kafka.protocol.consumer.group import (JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
                                                   SyncGroupResponse)

        P = JoinGroupRequest.JoinGroupRequestProtocol
        A = SyncGroupRequest.SyncGroupRequestAssignment
        while True:
            r = await self.conn.call(JoinGroupRequest, JoinGroupResponse, 5, group_id=self.group,
                                     session_timeout_ms=self.session_ms, rebalance_timeout_ms=self.session_ms,
                                     member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                                     protocols=[P(name="range", metadata=SUBSCRIPTION)])
            if r.error_code == Errors.MEMBER_ID_REQUIRED:
                self.member_id = r.member_id
                continue
            if r.error_code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if r.error_code != Errors.NONE:
                await asyncio.sleep(0.1)
                continue
            self.member_id, self.generation = r.member_id, r.generation_id
            assignments = [A(member_id=m.member_id, assignment=ASSIGNMENT) for m in r.members] \
                if r.leader == self.member_id else []
            s = await self.conn.call(SyncGroupRequest, SyncGroupResponse, 3, group_id=self.group,
                                     generation_id=self.generation, member_id=self.member_id,
                                     group_instance_id=None, assignments=assignments)
            if s.error_code == Errors.NONE:
                return
            if s.error_code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""

    def heartbeat(self, conn: RawConnection | None = None) -> asyncio.Future:
        from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

        return (conn or self.conn).call(HeartbeatRequest, HeartbeatResponse, 3, group_id=self.group,
                                        generation_id=self.generation, member_id=self.member_id,
                                        group_instance_id=None)

    def commit(self, offset: int, partition: int, conn: RawConnection | None = None) -> asyncio.Future:
        from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse

        T = OffsetCommitRequest.OffsetCommitRequestTopic
        PP = T.OffsetCommitRequestPartition
        return (conn or self.conn).call(
            OffsetCommitRequest, OffsetCommitResponse, 7, group_id=self.group,
            generation_id_or_member_epoch=self.generation, member_id=self.member_id, group_instance_id=None,
            topics=[T(name="orders", partitions=[PP(partition_index=partition, committed_offset=offset,
                                                    committed_leader_epoch=-1, committed_metadata="")])])


class TansuPeer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.seq = itertools.count()

    async def _members(self, group: str, n: int, session_ms: int) -> list[TansuMember]:
        conns = [await RawConnection(self.port).open() for _ in range(n)]
        return [TansuMember(c, group, session_ms) for c in conns]

    async def time_to_stable(self, n: int) -> float:
        members = await self._members(f"stable-{n}-{next(self.seq)}", n, STABLE_SESSION_MS)
        start = time.monotonic()
        await asyncio.gather(*(m.join_and_sync() for m in members))
        took = time.monotonic() - start
        for m in members:
            await m.conn.close()
        return took

    async def form(self, groups: int, members: int, session_ms: int = SESSION_MS) -> list[TansuMember]:
        out: list[TansuMember] = []
        for g in range(groups):
            out += await self._members(f"pop-{g}-{next(self.seq)}", members, session_ms)
        # Join in waves, so 10,000 connections do not all hit tansu's 1 s poll at once.
        # Each wave is whole groups; its connections are closed once it is Stable (load uses shared connections).
        wave = max(members, 500 // members * members)
        for i in range(0, len(out), wave):
            await asyncio.gather(*(m.join_and_sync() for m in out[i:i + wave]))
            for m in out[i:i + wave]:
                await m.conn.close()
        return out

    async def latency(self, members: list[TansuMember], rate: int, duration: float) -> tuple[float, float, float]:
        conns = [await RawConnection(self.port).open() for _ in range(8)]
        lat: list[float] = []

        def done(t0: float):
            return lambda fut: lat.append(time.monotonic() - t0) if not fut.exception() else None

        start = time.monotonic()
        n = int(rate * duration)
        futures = []
        for i in range(n):
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            m = members[i % len(members)]
            fut = m.heartbeat(conns[i % 8]) if i % 2 else m.commit(i, i % 16, conns[i % 8])
            fut.add_done_callback(done(time.monotonic()))
            futures.append(fut)
        await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 120)
        achieved = len(lat) / (time.monotonic() - start)
        for c in conns:
            await c.close()
        return achieved, percentile(lat, 0.5), percentile(lat, 0.99)

    async def reassign(self, n: int = 10) -> float:
        """A Stable group of n; one member goes silent; the others heartbeat every second; until all of them are
        Stable again in a newer generation."""
        members = await self._members(f"fail-{next(self.seq)}", n, FAILOVER_SESSION_MS)
        await asyncio.gather(*(m.join_and_sync() for m in members))
        victim, rest = members[0], members[1:]
        old = max(m.generation for m in rest)
        failed_at = time.monotonic()

        async def live(m: TansuMember) -> None:
            while True:
                r = await m.heartbeat()
                if r.error_code != Errors.NONE:
                    await m.join_and_sync()
                    if m.generation > old:
                        return
                await asyncio.sleep(FAILOVER_HEARTBEAT_MS / 1000)

        await asyncio.wait_for(asyncio.gather(*(live(m) for m in rest)), 120)
        took = time.monotonic() - failed_at
        for m in members:
            await m.conn.close()
        del victim
        return took


def run_tansu(scale: dict, results: Results) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    from streaming.kafka_io.embedded import start_broker

    broker = start_broker()
    log(f"tansu coordinator peer on {broker.bootstrap_servers} (pid {broker.process.pid})")
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        admin.create_topics([NewTopic("orders", 16, 1)])
        admin.close()
        peer = TansuPeer(broker.port)

        async def all_figures() -> None:
            for n in scale["sizes"]:
                try:
                    results.time_to_stable[n] = await asyncio.wait_for(peer.time_to_stable(n), 300)
                except (asyncio.TimeoutError, OSError) as exc:
                    results.time_to_stable[n] = None
                    results.notes.append(f"time to Stable, {n} members: {type(exc).__name__}")
                log(f"tansu: {n} members Stable in {results.time_to_stable[n]}")
            try:
                results.reassign_s = await peer.reassign()
            except asyncio.TimeoutError:
                results.notes.append("reassign: no new generation within 120 s")
            log(f"tansu: reassign {results.reassign_s}")
            groups, members = scale["population"]
            pop = await peer.form(groups, members)
            results.population = (groups, members)
            log(f"tansu: formed {groups} x {members}")
            for rate in scale["rates"]:
                achieved, p50, p99 = await peer.latency(pop, rate, scale["duration"])
                results.latency.append(LatencyPoint(rate, achieved, p50, p99))
                log(f"tansu: {rate}/s offered -> p50 {p50} p99 {p99}")

        asyncio.run(all_figures())
        results.recovery_s = None
        results.notes.append("recovery after kill -9: not applicable (memory storage: a restarted tansu has no "
                             "groups to recover)")
    finally:
        broker.stop()


# ---------------------------------------------------------------------------------------------------------------
# the coordinator job, through its topics
# ---------------------------------------------------------------------------------------------------------------

def run_job(scale: dict, results: Results, workdir: Path) -> None:
    """The job's figures, one phase after the other, from one job process on a fresh broker."""
    from deploy.drills.harness import Environment

    env = Environment(workdir / "job", props={"group.initial.rebalance.delay.ms": "3000",
                                              "trigger.interval.ms": "100", "metrics.log": ""})
    log(f"job: starting on {env.bootstrap}")
    run = JobRun(env, results)
    try:
        env.job.start()
        run.first_answer()
        run.time_to_stable(scale["sizes"])
        run.reassign_after_a_silent_failure()
        pop, stable = run.form_population(*scale["population"])
        run.population_backlog(pop, stable, scale["backlog"])
        run.latency_sweep(pop, stable, scale["rates"], scale["duration"])
        run.recovery(pop, stable[0])
    finally:
        run.close()
        env.close()


class JobRun:
    """The job's benchmark phases: simulated members (`deploy.drills.fleet`) speaking to it through its topics,
    every response recorded in one ledger."""

    def __init__(self, env: Environment, results: Results) -> None:
        from deploy.drills.fleet import Ledger

        self.env, self.results = env, results
        self.wire: Wire | None = None
        self.ledger = Ledger()
        self.seq = itertools.count()

    def first_answer(self) -> None:
        """Waits for the started job, then for its first answer: the first batch starts the Python workers, which
        is `first_answer_s` and not part of any later figure."""
        from client import protocol as wire_protocol

        env, results = self.env, self.results
        started = time.monotonic()
        env.job.wait_running(600)
        self.wire = env.wire()
        warm = Fleet(self.wire, [], 0)
        rid = warm.send_admin(wire_protocol.describe_group("warm-up"))
        warm.run_until(lambda: rid in warm.ledger.first_at, 600)
        results.first_answer_s = time.monotonic() - started
        log(f"job: first answer {results.first_answer_s:.1f} s after start")

    def close(self) -> None:
        if self.wire is not None:
            self.wire.close()

    def fleet(self, groups: list[str], n: int, session_ms: int = SESSION_MS, hb_ms: int = HEARTBEAT_MS) -> Fleet:
        f = Fleet(self.wire, groups, n, session_timeout_ms=session_ms, rebalance_timeout_ms=session_ms,
                  heartbeat_interval_ms=hb_ms, commit_interval_ms=10 * hb_ms)
        f.ledger = self.ledger
        return f

    def time_to_stable(self, sizes: list[int]) -> None:
        for n in sizes:
            f = self.fleet([f"stable-{n}-{next(self.seq)}"], n, session_ms=STABLE_SESSION_MS)
            start = time.monotonic()
            ok = f.run_until(f.all_stable, 600)
            self.results.time_to_stable[n] = time.monotonic() - start if ok else None
            log(f"job: {n} members Stable in {self.results.time_to_stable[n]}")
            f.members = []  # stop them (their sessions expire later, harmlessly)

    def reassign_after_a_silent_failure(self) -> None:
        """One of 10 members stops without a LeaveGroup: time until the others are Stable in a newer generation."""
        f = self.fleet([f"fail-{next(self.seq)}"], 10, FAILOVER_SESSION_MS, FAILOVER_HEARTBEAT_MS)
        if f.run_until(f.all_stable, 300):
            victim = f.members[0]
            old = max(m.generation for m in f.members)
            f.members = f.members[1:]
            failed_at = time.monotonic()
            victim.phase = "left"  # silent: no LeaveGroup
            ok = f.run_until(lambda: all(m.phase == "stable" and m.generation > old for m in f.members), 180)
            self.results.reassign_s = time.monotonic() - failed_at if ok else None
        log(f"job: reassign {self.results.reassign_s}")
        f.members = []

    def form_population(self, groups: int, members: int) -> tuple[Fleet, list[Member]]:
        """groups x members kept in the job's state (sessions long enough to need no heartbeats); returns the
        fleet, no longer sending on its own, and its Stable members."""
        pop = self.fleet([f"pop-{g}" for g in range(groups)], members, session_ms=600_000, hb_ms=600_000)
        self.results.population = (groups, members)
        pop.run_until(pop.all_stable, 1800)
        log(f"job: formed {groups} x {members} ({sum(m.phase == 'stable' for m in pop.members)} stable)")
        pop.sending = False
        return pop, [m for m in pop.members if m.phase == "stable"]

    def population_backlog(self, pop: Fleet, stable: list[Member], backlog: int) -> None:
        """Batch time with the population in state: one heartbeat or commit from every member, at once."""
        shared = self.ledger
        metrics_from = len(self.env.job.metrics())
        rids = []
        start = time.monotonic()
        for i in range(backlog):
            m = stable[i % len(stable)]
            rids.append(_send_request(pop, m, i))
        pop.wire.flush()
        pop.run_until(lambda: all(r in shared.first_at for r in rids), 1800)
        answered = sum(r in shared.first_at for r in rids)
        took = max(shared.first_at[r] for r in rids if r in shared.first_at) - start if answered else None
        self.results.population_note = (f"{backlog:,} heartbeats + commits from the population produced at once, "
                                        f"{answered:,} answered in {_fmt(took)} s")
        batches = self.env.job.metrics()[metrics_from:]
        self.results.population_batch_ms = [b["batch_duration_ms"] for b in batches if b.get("requests_in")]
        if batches:
            self.results.state_rows = batches[-1].get("state_rows")
            self.results.state_bytes = batches[-1].get("state_memory_bytes")
        log(f"job: population backlog batches {self.results.population_batch_ms[:10]}")

    def latency_sweep(self, pop: Fleet, stable: list[Member], rates: list[int], duration: float) -> None:
        """Open loop: each rate's requests sent on schedule whatever the answers, then their latencies."""
        shared = self.ledger
        for rate in rates:
            sent = []
            start = time.monotonic()
            n = int(rate * duration)
            for i in range(n):
                due = start + i / rate
                while time.monotonic() < due:
                    pop.tick(poll_ms=max(1, int((due - time.monotonic()) * 1000)))
                sent.append(_send_request(pop, stable[i % len(stable)], i))
            pop.run_until(lambda: all(r in shared.first_at for r in sent), 300)
            lat = [shared.first_at[r] - shared.sent[r].at for r in sent if r in shared.first_at]
            achieved = len(lat) / (time.monotonic() - start)
            self.results.latency.append(LatencyPoint(rate, achieved, percentile(lat, 0.5), percentile(lat, 0.99)))
            log(f"job: {rate}/s offered -> p50 {percentile(lat, 0.5)} p99 {percentile(lat, 0.99)}")

    def recovery(self, pop: Fleet, probe: Member) -> None:
        """After kill -9: the driver restarted on its checkpoint, then a warm, rehearsed standby driver
        (streaming/driver_lock.py) taking over; each timed to the first answer."""
        from deploy.drills.harness import JobProcess

        env, shared = self.env, self.ledger
        env.job.kill()
        killed = time.monotonic()
        env.job.start()
        rid = _send_request(pop, probe, 1)
        pop.wire.flush()
        if pop.run_until(lambda: rid in shared.first_at, 600):
            self.results.recovery_s = shared.first_at[rid] - killed
        log(f"job: recovered in {self.results.recovery_s}")

        env.job.wait_running(600)
        standby = JobProcess(env.props, env.workdir / "standby", env.job.spark_conf).start()
        try:
            standby.wait_standby(600)
            env.job.kill()
            killed = time.monotonic()
            rid = _send_request(pop, probe, 2)
            pop.wire.flush()
            if pop.run_until(lambda: rid in shared.first_at, 600):
                self.results.standby_recovery_s = shared.first_at[rid] - killed
            log(f"job: the standby took over in {self.results.standby_recovery_s}")
        finally:
            standby.stop()


def run_stream_bench(scale: dict, job: Results | None, tansu: Results | None) -> None:
    """Sustained requests/s and latency at a fixed load, from bench.stream_bench (the streaming job's own
    benchmark: one-member groups, heartbeats + commits), for both peers, in this run."""
    from bench import stream_bench

    groups, burst, seconds = scale["sb_groups"], scale["sb_burst"], scale["sb_seconds"]
    rate = None
    if job is not None:
        log(f"stream_bench (job): {groups} groups, burst {burst:,}, {seconds} s fixed rate")
        ours = stream_bench.run_ours(groups, burst, None, seconds, 100)
        _stop_spark()
        job.sustained_rps = ours["sustained"]["requests_per_s"]
        job.sustained_note = f"bench.stream_bench: {groups:,} one-member groups, burst of {burst:,}"
        job.fixed_rate, job.batch_parts_ms = ours["fixed_rate"], ours["batch_ms_median"]
        job.idle_cores, job.restart_s = ours["idle_cores"], ours["restart_to_first_response_s"]
        rate = ours["fixed_rate"]["offered_per_s"]
        log(f"stream_bench (job): {ours}")
    if tansu is not None:
        theirs = stream_bench.run_tansu(groups, min(burst, 50_000), rate or 500, seconds)
        tansu.sustained_rps = theirs["sustained"]["requests_per_s"]
        tansu.sustained_note = f"bench.stream_bench: {groups:,} one-member groups, burst of {min(burst, 50_000):,}"
        tansu.fixed_rate = theirs["fixed_rate"]
        log(f"stream_bench (tansu): {theirs}")
    if job is not None:
        echo = stream_bench.run_echo(groups, burst, rate or 500, seconds)
        fixed = echo["fixed_rate"]
        job.notes.append(
            f"a service that does nothing (bench.stream_bench's echo: the same requests answered by a plain "
            f"kafka-python process through the same broker, no coordinator, no Spark): "
            f"{echo['sustained']['requests_per_s']:,} "
            f"requests/s sustained; p50 {_fmt(fixed['p50_ms'])} ms, p99 {_fmt(fixed['p99_ms'])} ms at "
            f"{_fmt(fixed['offered_per_s'], digits=0)}/s")
        log(f"stream_bench (echo): {echo}")


def run_state_scale(scale: dict, job: Results) -> None:
    """State size and batch time with a large population (bench.state_scale, in its own process: it starts its own
    broker and SparkSession)."""
    import subprocess

    groups, members, backlog = scale["loaded"]
    log(f"state_scale (job): {groups:,} groups x {members} members, backlog {backlog:,}")
    done = subprocess.run([sys.executable, "-m", "bench.state_scale", "--groups", str(groups), "--members",
                           str(members), "--backlog", str(backlog)], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600)
    if done.returncode != 0 or "{" not in done.stdout:
        job.notes.append(f"bench.state_scale failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        return
    job.loaded = json.loads(done.stdout[done.stdout.index("{"):])
    log(f"state_scale (job): {job.loaded}")


def _stop_spark() -> None:
    """stream_bench leaves its SparkSession running; stop it so it does not compete with what follows."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()


def _send_request(fleet: Fleet, m: Member, i: int) -> str:
    """The i-th request of the offered traffic from member m: a heartbeat or an offset commit, in turn."""
    from client import protocol as wire

    if i % 2:
        return fleet.send_admin(wire.heartbeat(m.group, m.generation, m.member_id, None))
    return fleet.send_admin(wire.offset_commit(m.group, m.generation, m.member_id, None,
                                               {("orders", m.slot): (i, "")}))


# ---------------------------------------------------------------------------------------------------------------
# the core's state size (no Spark): extrapolation to 100,000 groups / 1,000,000 members
# ---------------------------------------------------------------------------------------------------------------

def core_state_size(members: int = 10) -> int:
    from bench.state_scale import template_group

    return len(template_group(members, "size")[0])


# ---------------------------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------------------------

def _fmt(value, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def write_report(out: Path, scale_name: str, scale: dict, job: Results | None, tansu: Results | None,
                 state_per_group: int, started: float, load: tuple[float, float, float]) -> Path:
    peers = [r for r in (job, tansu) if r is not None]
    lines = [
        "# Benchmark report: the coordinator job vs tansu's built-in coordinator",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, scale `{scale_name}`, "
        f"{os.cpu_count()} CPUs, load average before/after {load[0]:.1f} / {os.getloadavg()[0]:.1f} "
        "(the machine is shared: treat absolute figures as rough). Both peers ran in this one run, one after the "
        "other, driven by the same client behaviour (bench/report.py docstring).",
        "",
        "| figure | " + " | ".join(r.peer for r in peers) + " |",
        "|---|" + "---|" * len(peers),
        "| sustained requests/s (bench.stream_bench burst) | "
        + " | ".join(_fmt(r.sustained_rps, digits=0) for r in peers) + " |",
        "| latency p50 / p99 at half the job's sustained rate (ms) | "
        + " | ".join("n/a" if not r.fixed_rate else
                     f"{_fmt(r.fixed_rate.get('p50_ms'))} / {_fmt(r.fixed_rate.get('p99_ms'))} "
                     f"at {_fmt(r.fixed_rate.get('offered_per_s'), digits=0)}/s" for r in peers) + " |",
        "| idle CPU (cores) | " + " | ".join(_fmt(r.idle_cores, digits=2) for r in peers) + " |",
        "| graceful restart to first response (s) | " + " | ".join(_fmt(r.restart_s) for r in peers) + " |",
        "| first answer after a cold start (s) | " + " | ".join(_fmt(r.first_answer_s) for r in peers) + " |",
    ]
    for n in scale["sizes"]:
        lines.append(f"| time to Stable, new group of {n:,} (s) | "
                     + " | ".join(_fmt(r.time_to_stable.get(n)) for r in peers) + " |")
    lines.append(f"| (session timeout of those groups: {STABLE_SESSION_MS} ms) | "
                 + " | ".join("" for _ in peers) + " |")
    lines.append(f"| time to reassign a failed member's partitions, group of 10, session "
                 f"{FAILOVER_SESSION_MS} ms (s) | " + " | ".join(_fmt(r.reassign_s) for r in peers) + " |")
    lines.append("| recovery after kill -9 (s, to the first answer) | "
                 + " | ".join(_fmt(r.recovery_s) for r in peers) + " |")
    lines.append("| the same with a standby driver taking over (s) | "
                 + " | ".join(_fmt(r.standby_recovery_s) for r in peers) + " |")
    lines += ["", "## Latency vs offered load (heartbeats + commits, open loop)", "",
              "| offered/s | " + " | ".join(f"{r.peer} answered/s | {r.peer} p50 ms | {r.peer} p99 ms"
                                          for r in peers) + " |",
              "|---|" + "---|---|---|" * len(peers)]
    for rate in scale["rates"]:
        cells = []
        for r in peers:
            point = next((x for x in r.latency if x.offered_rps == rate), None)
            cells += ["n/a"] * 3 if point is None else [_fmt(point.answered_rps, digits=0),
                                                         _fmt(point.p50_s and point.p50_s * 1000),
                                                         _fmt(point.p99_s and point.p99_s * 1000)]
        lines.append(f"| {rate:,} | " + " | ".join(cells) + " |")
    lines += ["", "## State size and batch time", ""]
    if job is not None and job.population:
        g, m = job.population
        batches = job.population_batch_ms
        lines.append(f"- Ran with **{g:,} groups x {m} members = {g * m:,} members** in the job's state "
                     f"(scale `{scale_name}`; `--scale full` runs 100,000 x 10). State rows after the run: "
                     f"{job.state_rows}, state memory reported by Spark: {_fmt((job.state_bytes or 0) / 1e6, ' MB')}.")
        if batches:
            lines.append(f"- Batch time with that state, every member sending one request at once "
                         f"({job.population_note}): median {_fmt(percentile(batches, 0.5), ' ms', 0)}, "
                         f"max {_fmt(max(batches), ' ms', 0)} ({len(batches)} batches).")
    if job is not None and job.loaded:
        r = job.loaded
        g, m, backlog, fixed = r["groups"], r["members_per_group"], r["backlog"], r["fixed_rate"]
        lines.append(
            f"- **{g:,} groups x {m} members = {g * m:,} members** loaded into the job's state as a rebuild does "
            f"(bench.state_scale): loading took {_fmt(r['load']['wall_s'], ' s')} in batches of "
            f"{', '.join(f'{n:,}' for n in r['load']['rows_per_batch'])} groups; checkpoint on disk "
            f"{_fmt(r['state_after_load']['checkpoint_bytes'] / 1e6, ' MB')} after the load and "
            f"{_fmt(r['state_at_end']['checkpoint_bytes'] / 1e6, ' MB')} at the end; state memory reported by "
            f"Spark {_fmt(r['state_at_end']['state_memory_bytes'] / 1e6, ' MB')}.")
        lines.append(
            f"- Batch time with that state: {backlog['requests']:,} heartbeats + commits from as many groups at once "
            f"were answered in {_fmt(backlog['answered_s'], ' s')} ({backlog['requests_per_s']:,}/s), batches of "
            f"{', '.join(f'{n:,}' for n in backlog['rows_per_batch'])} requests took "
            f"{', '.join(f'{ms:,}' for ms in backlog['batches_ms'])} ms; at {fixed['offered_per_s']:,.0f} requests/s "
            f"from random members p50 {_fmt(fixed['p50_ms'], ' ms', 0)}, p99 {_fmt(fixed['p99_ms'], ' ms', 0)} "
            f"(median batch {_fmt(fixed['batch_ms_median'], ' ms', 0)}).")
    if job is not None and job.batch_parts_ms:
        lines.append("- Median batch parts under the fixed load (bench.stream_bench, ms): "
                     + ", ".join(f"{k} {v}" for k, v in job.batch_parts_ms.items()) + ".")
    lines.append(f"- The core's state row for a 10-member group with one committed offset per member: "
                 f"{state_per_group:,} bytes, so 100,000 groups / 1,000,000 members = "
                 f"{_fmt(state_per_group * 100_000 / 1e9, ' GB', 2)} of state rows before RocksDB compression.")
    if tansu is not None and tansu.population:
        lines.append(f"- tansu was loaded with the same {tansu.population[0]:,} x {tansu.population[1]} members "
                     "(its state lives in the broker's memory; no per-batch figure applies).")
    lines += ["", "## Notes", ""]
    for r in peers:
        lines += [f"- {r.peer}: {n}" for n in r.notes]
        if r.sustained_note:
            lines.append(f"- {r.peer} sustained: {r.sustained_note}")
    lines += ["", "![report](report.png)", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def plot(out: Path, scale: dict, job: Results | None, tansu: Results | None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peers = [r for r in (job, tansu) if r is not None]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ax = axes[0]
    for r in peers:
        points = [x for x in r.latency if x.p50_s is not None]
        ax.plot([x.offered_rps for x in points], [x.p50_s * 1000 for x in points], "o-", label=f"{r.peer} p50")
        ax.plot([x.offered_rps for x in points], [x.p99_s * 1000 for x in points], "s--", label=f"{r.peer} p99")
    ax.set(xlabel="offered requests/s", ylabel="latency (ms)", yscale="log", title="latency vs offered load")
    ax.legend(fontsize=8)
    ax = axes[1]
    width = 0.38
    sizes = scale["sizes"]
    for i, r in enumerate(peers):
        ax.bar([k + i * width for k in range(len(sizes))], [r.time_to_stable.get(n) or 0 for n in sizes], width,
               label=r.peer)
    ax.set_xticks([k + width / 2 for k in range(len(sizes))], [f"{n:,}" for n in sizes])
    ax.set(xlabel="members in a new group", ylabel="seconds", title="time to Stable")
    ax.legend(fontsize=8)
    ax = axes[2]
    labels = ["sustained req/s / 100", "reassign (s)", "recovery (s)"]
    for i, r in enumerate(peers):
        values = [(r.sustained_rps or 0) / 100, r.reassign_s or 0, r.recovery_s or 0]
        ax.bar([k + i * width for k in range(3)], values, width, label=r.peer)
    ax.set_xticks([k + width / 2 for k in range(3)], labels, fontsize=8)
    ax.set(title="throughput, failover, recovery")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "report.png"
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    parser.add_argument("--scale", choices=sorted(SCALES), default="default")
    parser.add_argument("--skip-job", action="store_true")
    parser.add_argument("--skip-tansu", action="store_true")
    parser.add_argument("--json", action="store_true", help="also write report.json with the raw figures")
    args = parser.parse_args(argv)
    scale = SCALES[args.scale]
    args.out.mkdir(parents=True, exist_ok=True)
    started, load = time.time(), os.getloadavg()
    random.seed(1)
    tansu = None if args.skip_tansu else Results("tansu")
    job = None if args.skip_job else Results("coordinator job")
    run_stream_bench(scale, job, tansu)
    if not args.skip_tansu:
        run_tansu(scale, tansu)
    if not args.skip_job:
        run_job(scale, job, Path(tempfile.mkdtemp(prefix="bench-report-")))
        run_state_scale(scale, job)
    state_per_group = core_state_size(10)
    report = write_report(args.out, args.scale, scale, job, tansu, state_per_group, started, load)
    plot(args.out, scale, job, tansu)
    if args.json:
        (args.out / "report.json").write_text(json.dumps({"job": job and job.__dict__,
                                                          "tansu": tansu and tansu.__dict__}, default=str))
    print(report.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
