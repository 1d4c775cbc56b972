"""A big classic group through the real query (issue 35): what one call costs it, and its rebalance.

One query (embedded broker, fresh topics and checkpoint) holds two Stable classic groups formed by simulated members
on the control topic (`bench.parts.member_fleet`): a big one (`--members`, 5,000 by default, over 10 partitions
each of one topic: 50,000) and a small one (10 members, 100 partitions), every partition committed once. Then:

- step: rounds alternating between the two groups, each one OffsetCommit (a member's partitions) and one Liveness
  (another member's heartbeat a gateway answered) produced together; a round's cost is the state calls' time of the
  batches that held them (`call_us`, the processor's own time in its calls: reading the group's rows, the step,
  writing them). `S` is the median over the big group's rounds / the median over the small group's. The same two
  requests through the core alone (`step_group` in this process, no Spark) give the core's share, printed beside.
- rebalance: one member of the big group leaves while every other member heartbeats (as if its interval came due):
  all are told REBALANCE_IN_PROGRESS, join again, the leader assigns (`range`, timed apart: the assignor's time)
  and all sync. `B` is the seconds from producing the leave to the last SyncGroup answer, with the micro-batches it
  took.

Ends with `big group: step 5000/10 = S, rebalance of 5000 members = B s (N micro-batches, assignor A s; ...)`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.parts.member_fleet import CoreTransport, Fleet, QueryTransport
from bench.stream_bench import JobClient
from common import config as job_config
from common.topics import ensure_topics
from state.config import CoordinatorConfig
from streaming.kafka_io.embedded import start_broker
from streaming.query import await_warm_up, spark_session, start_query, stop_between_batches

PARTITIONS_PER_MEMBER = 10
SMALL = 10


def _requests(progress) -> int:
    coordinator = progress.observedMetrics.get("coordinator")
    return progress.numInputRows - (coordinator["timer_rows"] if coordinator is not None else 0)


def _batches_after(query, batch_id: int, rows: int, timeout_s: float = 120) -> list:
    """The batches after `batch_id` once they hold `rows` requests (a batch's progress may come after its answers)."""
    deadline = time.monotonic() + timeout_s
    while True:
        batches = [p for p in query.recentProgress if p.batchId > batch_id and _requests(p)]
        if sum(_requests(p) for p in batches) >= rows or time.monotonic() > deadline:
            return batches
        time.sleep(0.05)


def _last_batch(query) -> int:
    progress = query.recentProgress
    return progress[-1].batchId if progress else -1


def _round(fleet: Fleet, transport: QueryTransport, query, k: int) -> dict:
    """One OffsetCommit and one Liveness of `fleet`'s group, produced together; the batches' state-call time."""
    time.sleep(0.3)  # let the previous batch's progress be reported
    before = _last_batch(query)
    committer, heard = fleet.ids[k % len(fleet.ids)], fleet.ids[(k + 1) % len(fleet.ids)]
    commit, liveness = fleet.commit(committer, 1000 + k), fleet.liveness(heard, int(time.time() * 1000))
    answer = transport.exchange([commit, liveness], [commit["request_id"]], 120)[commit["request_id"]]
    if {p["error_code"] for t in answer["topics"] for p in t["partitions"]} != {0}:
        raise RuntimeError(f"a commit failed: {answer}")
    batches = _batches_after(query, before, 2)
    return {"call_ms": sum(p.observedMetrics["coordinator"]["call_us"] for p in batches) / 1000,
            "batch_ms": sum(p.batchDuration for p in batches), "batches": len(batches)}


def core_step(members: int, rounds: int) -> dict:
    """The same round through `step_group` alone (no Spark, no state store): ms per call, stored sizes."""
    transport = CoreTransport("core", CoordinatorConfig())
    fleet = Fleet(transport, "core", members, members * PARTITIONS_PER_MEMBER)
    fleet.form()
    fleet.commit_all(1)
    times = []
    for k in range(rounds):
        transport.now_ms += 1000
        commit = fleet.commit(fleet.ids[k % members], 1000 + k)
        liveness = fleet.liveness(fleet.ids[(k + 1) % members], transport.now_ms)
        transport.exchange([commit, liveness], [commit["request_id"]], 60)
        times.append(transport.step_s[-1] * 1000)
    return {"step_ms": round(statistics.median(times), 3), "metadata_bytes": len(transport.stored.metadata),
            "offsets_bytes": len(transport.stored.offsets or b"")}


def run(members: int = 5000, rounds: int = 10, overrides: dict[str, str] | None = None) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="big-group-"))
    broker = start_broker()
    result: dict = {"members": members, "partitions": members * PARTITIONS_PER_MEMBER}
    try:
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        await_warm_up(spark)
        suffix = str(int(time.time()))
        props = job_config.load(overrides={
            "bootstrap.servers": broker.bootstrap_servers, "checkpoint.location": str(workdir / "checkpoint"),
            **{f"topic.{t}": f"big-{t}-{suffix}" for t in ("requests", "responses", "records", "dead.letters",
                                                             "timers", "views")},
            "offsets.retention.check.interval.ms": str(10**13), "topic.metadata.refresh.interval.ms": "0",
            **(overrides or {})})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
        client = JobClient(broker.bootstrap_servers, props["topic.requests"], props["topic.responses"])
        transport = QueryTransport(client)
        query = start_query(spark, props, query_name=f"big-group-{suffix}")
        try:
            # sessions of 30 minutes (Kafka's maximum): nobody expires while the bench runs without heartbeats
            big = Fleet(transport, "big", members, members * PARTITIONS_PER_MEMBER, session_timeout_ms=1_800_000)
            small = Fleet(transport, "small", SMALL, SMALL * PARTITIONS_PER_MEMBER, session_timeout_ms=1_800_000)
            for fleet in (small, big):
                start = time.monotonic()
                fleet.form()
                formed = time.monotonic() - start
                fleet.commit_all(1)
                result[f"{fleet.group_id}_formed_s"] = round(formed, 1)
                result[f"{fleet.group_id}_committed_s"] = round(time.monotonic() - start - formed, 1)
            rounds_of: dict[str, list[dict]] = {"big": [], "small": []}
            for k in range(rounds):
                for fleet in (big, small):
                    rounds_of[fleet.group_id].append(_round(fleet, transport, query, k))
            for name, got in rounds_of.items():
                result[f"{name}_step"] = {key: statistics.median(r[key] for r in got)
                                          for key in ("call_ms", "batch_ms", "batches")}
                result[f"{name}_step"]["call_ms_all"] = [r["call_ms"] for r in got]
            before = _last_batch(query)
            leaving = next(m for m in big.ids if m != big.leader)
            result["rebalance"] = big.leave_and_rejoin(leaving)
            # the leave, 4,999 heartbeats, 4,999 joins and 4,999 syncs
            batches = _batches_after(query, before, 3 * (members - 1) + 1)
            result["rebalance"].update(
                micro_batches=len(batches), batches_ms=[p.batchDuration for p in batches],
                rows=[_requests(p) for p in batches],
                state_calls_ms=[p.observedMetrics["coordinator"]["call_us"] // 1000 for p in batches])
            result["load_average"] = os.getloadavg()
        finally:
            stop_between_batches(query)
            client.close()
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    result["core_big"] = core_step(members, rounds)
    result["core_small"] = core_step(SMALL, rounds)
    return result


def line(result: dict) -> str:
    members = result["members"]
    s = result["big_step"]["call_ms"] / result["small_step"]["call_ms"]
    core = result["core_big"]["step_ms"] / result["core_small"]["step_ms"]
    r = result["rebalance"]
    return (f"big group: step {members}/{SMALL} = {s:.1f} ({result['big_step']['call_ms']:.1f} ms / "
            f"{result['small_step']['call_ms']:.1f} ms of state calls; core alone {core:.0f}: "
            f"{result['core_big']['step_ms']} / {result['core_small']['step_ms']} ms), rebalance of {members} members "
            f"= {r['rebalanced_s']} s ({r['micro_batches']} micro-batches, assignor {r['assignor_s']} s; load average "
            f"{os.getloadavg()[0]:.1f})")


def main(members: int, rounds: int) -> None:
    result = run(members, rounds)
    print(json.dumps(result, indent=2))
    print(line(result))
