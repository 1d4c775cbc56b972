"""Benchmark: the job with a large population in its state, against the same job with a small one in the same run.

`--compare 1000,100000` runs each population in turn in one process (one SparkSession, one broker, fresh topics and
checkpoint each) and ends with `state scale ratio: batch p50 at 100000 groups / at 1000 groups = R`: the median
micro-batch time under the same touched load (the fixed-rate phase below), so R says how much the population alone
costs. A state row per group (`state.operator=transformWithState`, the default) should give R near 1; the bucket
rows of `applyInPandasWithState` grow with the population.

Forming a million members through the control topic would take the job (and any client fleet on this machine) the
better part of an hour, so each population is loaded the way a lost checkpoint is rebuilt: one internal
`LoadGroup` request per group (`streaming.recovery.rebuild`), built from a template Stable group of M members with one
committed offset each, made by the core and copied under G group ids. Then it measures, on the running query:

- loading: the batches that load the groups (time, groups/s and members/s);
- state size: Spark's reported state-store memory, the state rows, and the checkpoint directory on disk;
- batch time with that state: a backlog of heartbeats and commits from members of distinct groups, produced at once;
- latency and batch time at a fixed low rate (heartbeats and commits from random members): the ratio's load, in
  rounds the populations take in turn, so that a slow minute on a shared machine weighs on both.

`--recovery 1000,100000` measures recovery instead (issue 35; `bench.parts.recovery_scale`): each population is
preloaded into the records topic, rebuilt by `coordinator run --rebuild-from-records` (process start to first
answer), then the driver is killed -9 with a standby waiting (kill to first answer), and the run ends with
`recovery at scale: takeover 100k/1k = R (T1 s / T2 s), rebuild = M members/s, rebuild/Kafka replay = K`.

`--big-group [5000]` measures one big classic group instead (issue 35; `bench.parts.big_group`): members as simulated
clients on the control topic, a state call's cost against a 10-member group's, and a rebalance after one member
leaves; it ends with `big group: step 5000/10 = S, rebalance of 5000 members = B s (...)`.

Nothing here is a test; figures depend on the machine. tansu's coordinator is no peer here (it keeps groups in
broker memory and has no per-batch cost; `bench.stream_bench` compares the two on the request path). Run:
`python -m bench.state_scale [--compare 1000,100000] [--members 10] [--backlog 20000] [--rate 200] [--seconds 20]
[--operator transformWithState|applyInPandasWithState] [--buckets N]`, `--recovery [SMALL,LARGE]` (with
`--rebuild-only`: no takeover; `--recovery 0,100000 --rebuild-only` times the large rebuild alone) or
`--big-group [MEMBERS]`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.micro.core_bench import Group
from bench.stream_bench import JobClient, percentiles
from bench.stream_bench import _load_request as request
from common import config as job_config
from common.topics import ensure_topics
from state.batch import StoredGroup, decode_state
from state.classic.records import group_record
from state.records import offset_record
from streaming.kafka_io.embedded import start_broker
from streaming.query import OPERATORS, await_warm_up, spark_session, start_query, stop_between_batches
from streaming.recovery.rebuild import Latest, load_requests


def template_group(members: int, group_id: str = "template") -> tuple[StoredGroup, list[str], int]:
    """A Stable group of `members` with one committed offset each: (core state, member ids, generation)."""
    g = Group(group_id)
    ids, _, _ = g.stable(members)
    generation = decode_state(g.state).generation
    committed = g.call([g.request("OffsetCommit", member_id=m, generation_id=generation, group_instance_id=None,
                                  topics=[{"name": "orders", "partitions": [
                                      {"partition_index": i, "committed_offset": 100, "committed_leader_epoch": -1,
                                       "committed_metadata": ""}]}])
                        for i, m in enumerate(ids)])
    if {r["topics"][0]["partitions"][0]["error_code"] for r in committed} != {0}:
        raise RuntimeError(f"the template group's commits failed: {committed[:1]}")
    return g.state, ids, generation


def load_request(template: StoredGroup, group_id: str) -> bytes:
    """The LoadGroup request that loads a copy of the template group under `group_id`, as a rebuild writes it."""
    group = decode_state(template)
    group.group_id = group_id
    records = [group_record(group, persist=True).encode()]
    records += [offset_record(group_id, t, p, o).encode() for (t, p), o in sorted(group.offsets.items())]
    return load_requests({k: Latest(v, 0, offset) for offset, (k, v) in enumerate(records)})[group_id]


def batches_with(query, progress_from: int, rows: int, timeout_s: float = 600) -> list:
    """The batches since `progress_from` once they hold `rows` input rows: responses leave before their batch has
    finished, so the last batch's progress may come after the last response."""
    deadline = time.monotonic() + timeout_s
    while True:
        batches = [p for p in query.recentProgress[progress_from:] if p.numInputRows]
        if sum(p.numInputRows for p in batches) >= rows or time.monotonic() > deadline:
            return batches
        time.sleep(0.5)


def directory_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@dataclass
class Population:
    """One population's running query and its figures so far."""

    groups: int
    query: object
    client: JobClient
    workdir: Path
    result: dict
    latencies: list = field(default_factory=list)
    batches: list = field(default_factory=list)


def load(spark, broker, groups: int, args: argparse.Namespace, template: StoredGroup, member_ids: list[str],
         generation: int) -> Population:
    """A fresh query (topics, checkpoint) with `groups` copies of the template loaded, and the load's figures."""
    workdir = Path(tempfile.mkdtemp(prefix="state-scale-"))
    result: dict = {"groups": groups, "members": groups * args.members}
    suffix = f"{groups}-{int(time.time())}"
    props = job_config.load(overrides={
        "bootstrap.servers": broker.bootstrap_servers, "checkpoint.location": str(workdir / "checkpoint"),
        "topic.requests": f"scale-requests-{suffix}", "topic.responses": f"scale-responses-{suffix}",
        "topic.records": f"scale-records-{suffix}", "topic.dead.letters": f"scale-dead-letters-{suffix}",
        "topic.timers": f"scale-timers-{suffix}", "topic.views": f"scale-views-{suffix}",
        "state.operator": args.operator,
        **({"state.buckets": str(args.buckets)} if args.buckets else {})})
    ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
    client = JobClient(broker.bootstrap_servers, props["topic.requests"], props["topic.responses"])
    start = time.monotonic()
    for g in range(groups):
        client.producer.send(props["topic.requests"], key=f"g{g}".encode(), value=load_request(template, f"g{g}"))
    client.producer.flush()
    result["loads_produced_s"] = round(time.monotonic() - start, 1)

    query = start_query(spark, props, query_name=f"scale-{groups}")
    start = time.monotonic()
    while sum(p.numInputRows for p in query.recentProgress) < groups:
        time.sleep(1)
        if time.monotonic() - start > 3600:
            raise TimeoutError("the loads were not read within an hour")
    loading = [p for p in query.recentProgress if p.numInputRows]
    wall = time.monotonic() - start
    result["load"] = {"wall_s": round(wall, 1), "groups_per_s": round(groups / wall),
                      "members_per_s": round(groups * args.members / wall),
                      "batches_ms": [p.batchDuration for p in loading],
                      "rows_per_batch": [p.numInputRows for p in loading],
                      "state_calls_ms": [p.observedMetrics["coordinator"]["call_us"] // 1000 for p in loading],
                      "state_commit_ms": [sum(op.commitTimeMs for op in p.stateOperators) for p in loading],
                      "durations_ms": [dict(p.durationMs) for p in loading]}
    last = query.lastProgress
    result["state_after_load"] = {
        "state_rows": sum(op["numRowsTotal"] for op in last["stateOperators"]),
        "state_memory_bytes": sum(op["memoryUsedBytes"] for op in last["stateOperators"]),
        "checkpoint_bytes": directory_size(workdir / "checkpoint")}
    client.wait([client.send(request("g0", member_ids[0], generation, 1))], 600)
    return Population(groups, query, client, workdir, result)


def backlog(pop: Population, args: argparse.Namespace, member_ids: list[str], generation: int) -> None:
    """A backlog of requests from distinct groups, produced at once: how fast big batches go with this state."""
    query, client = pop.query, pop.client
    progress_from = len(query.recentProgress)
    touched = random.sample(range(pop.groups), min(args.backlog, pop.groups))
    start = time.monotonic()
    ids = [client.send(request(f"g{g}", random.choice(member_ids), generation, k)) for k, g in enumerate(touched)]
    client.wait(ids, 1800)
    took = time.monotonic() - start
    batches = batches_with(query, progress_from, len(ids))
    errors = sum(1 for i in ids if client.bodies.get(i, {}).get("error_code", 0))
    pop.result["backlog"] = {"requests": len(ids), "answered_s": round(took, 1),
                             "requests_per_s": round(len(ids) / took), "errors": errors,
                             "batches_ms": [p.batchDuration for p in batches],
                             "rows_per_batch": [p.numInputRows for p in batches],
                             "state_commit_ms": [sum(op.commitTimeMs for op in p.stateOperators) for p in batches],
                             "state_calls_ms": [p.observedMetrics["coordinator"]["call_us"] // 1000
                                                for p in batches],
                             "produce_ms": [p.observedMetrics["coordinator"]["produce_us"] // 1000
                                            for p in batches]}


def fixed_rate(pop: Population, args: argparse.Namespace, member_ids: list[str], generation: int,
               seconds: float) -> None:
    """`args.rate` requests/s from random members for `seconds`: the touched load the ratio compares."""
    query, client = pop.query, pop.client
    progress_from = len(query.recentProgress)
    ids, start, k = [], time.monotonic(), 0
    while time.monotonic() - start < seconds:
        time.sleep(max(0.0, start + k / args.rate - time.monotonic()))
        ids.append(client.send(request(f"g{random.randrange(pop.groups)}", random.choice(member_ids), generation, k)))
        if k % 20 == 0:
            client.producer.flush()
        k += 1
    client.wait(ids, 1800)
    pop.latencies += [client.latencies[i] for i in ids]
    pop.batches += batches_with(query, progress_from, len(ids))


def finish(pop: Population, args: argparse.Namespace) -> dict:
    durations = sorted(p.batchDuration for p in pop.batches)
    pop.result["fixed_rate"] = {
        "offered_per_s": args.rate, "seconds": args.seconds * args.rounds, **percentiles(pop.latencies),
        "batches": len(pop.batches), "batch_ms_median": durations[len(durations) // 2] if durations else None,
        "state_calls_ms_median": round(statistics.median(
            [p.observedMetrics["coordinator"]["call_us"] / 1000 for p in pop.batches])) if pop.batches else None}
    last = pop.query.lastProgress
    pop.result["state_at_end"] = {
        "state_memory_bytes": sum(op["memoryUsedBytes"] for op in last["stateOperators"]),
        "checkpoint_bytes": directory_size(pop.workdir / "checkpoint")}
    stop_between_batches(pop.query)
    pop.client.close()
    shutil.rmtree(pop.workdir, ignore_errors=True)
    return pop.result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", default="100000", help="comma-separated group counts, each its own query")
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of one fixed-rate round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="fixed-rate rounds per population, the populations taking turns (a slow minute on a "
                        "shared machine then weighs on both)")
    parser.add_argument("--operator", default="transformWithState", choices=OPERATORS)
    parser.add_argument("--buckets", type=int, help="state.buckets (default: conf/coordinator.properties)")
    parser.add_argument("--recovery", nargs="?", const="1000,100000", metavar="SMALL,LARGE",
                        help="instead: rebuild and kill -9 takeover at two populations (bench.parts.recovery_scale)")
    parser.add_argument("--recovery-rounds", type=int, default=1, help="rounds of the two populations, alternating")
    parser.add_argument("--rebuild-only", action="store_true",
                        help="with --recovery: the rebuilds alone, no takeover (SMALL may be 0: the LARGE one only)")
    parser.add_argument("--big-group", nargs="?", type=int, const=5000, metavar="MEMBERS",
                        help="instead: one big classic group's step and rebalance against a 10-member group's "
                        "(bench.parts.big_group)")
    parser.add_argument("--big-group-rounds", type=int, default=10, help="step rounds of each group, alternating")
    args = parser.parse_args()
    random.seed(1)
    if args.big_group:
        from bench.parts import big_group

        big_group.main(args.big_group, args.big_group_rounds)
        return
    template, member_ids, generation = template_group(args.members)
    if args.recovery:
        recovery_at_scale(args, template, member_ids, generation)
        return
    broker = start_broker()
    try:
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        await_warm_up(spark)  # Python worker start-up is not part of any load time
        pops = [load(spark, broker, int(n), args, template, member_ids, generation) for n in args.compare.split(",")]
        for pop in pops:
            if args.backlog:
                backlog(pop, args, member_ids, generation)
        for _ in range(args.rounds):
            for pop in pops:
                fixed_rate(pop, args, member_ids, generation, args.seconds)
        results = [finish(pop, args) for pop in pops]
    finally:
        broker.stop()
    for result in results:
        print(json.dumps({"operator": args.operator, "template_state_bytes": len(template.metadata), **result},
                         indent=2))
    print(json.dumps({"load_average": os.getloadavg()}))
    if len(results) > 1:
        small, large = results[0], results[-1]
        ratio = large["fixed_rate"]["batch_ms_median"] / small["fixed_rate"]["batch_ms_median"]
        print(f"state scale ratio: batch p50 at {large['groups']} groups / at {small['groups']} groups = "
              f"{ratio:.2f} ({large['fixed_rate']['batch_ms_median']} ms / {small['fixed_rate']['batch_ms_median']} "
              f"ms, {args.operator}; loading {large['members']:,} members: {large['load']['members_per_s']:,} "
              f"members/s)")


KAFKA_REPLAY_RECORDS_PER_S = 4_400_000
"""Kafka's load of `__consumer_offsets` (KAFKA-19716's JMH), the peer of the rebuild rate."""


def recovery_at_scale(args: argparse.Namespace, template: StoredGroup, member_ids: list[str],
                      generation: int) -> None:
    """`--recovery SMALL,LARGE`: each population preloaded, rebuilt and taken over (see
    `bench.parts.recovery_scale`), the two alternating for `--recovery-rounds`; medians of each."""
    from bench.parts.recovery_scale import recovery

    small, large = (int(n) for n in args.recovery.split(","))
    broker = start_broker()
    runs: dict[int, list[dict]] = {small: [], large: []}
    try:
        for _ in range(args.recovery_rounds):
            for groups in (small, large) if small else (large,):
                result = recovery(broker.bootstrap_servers, Path(tempfile.mkdtemp(prefix="recovery-")), template,
                                  member_ids, generation, groups, takeover=not args.rebuild_only)
                result["load_average"] = os.getloadavg()
                print(json.dumps(result), flush=True)
                runs[groups].append(result)
    finally:
        broker.stop()
    rate = statistics.median(r["rebuild"]["members_per_s"] for r in runs[large])
    if args.rebuild_only:
        print(f"rebuild at scale: {large:,} groups x {args.members}, rebuild = {rate:,} members/s "
              f"(first answers {', '.join(str(r['rebuild']['first_answer_s']) for r in runs[large])} s; "
              f"load average {os.getloadavg()[0]:.1f})")
        return
    t_small = statistics.median(r["takeover_s"] for r in runs[small])
    t_large = statistics.median(r["takeover_s"] for r in runs[large])
    records_per_s = rate * (1 + 1 / args.members)  # a group record per group and an offset record per member
    print(f"recovery at scale: takeover {large // 1000}k/{small // 1000}k = {t_large / t_small:.2f} "
          f"({t_large} s / {t_small} s), rebuild = {rate:,} members/s, rebuild/Kafka replay = "
          f"{records_per_s / KAFKA_REPLAY_RECORDS_PER_S:.4f} ({records_per_s:,.0f} / "
          f"{KAFKA_REPLAY_RECORDS_PER_S:,} records/s; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
