"""Benchmark: the job with a large population in its state (default 100,000 groups x 10 members = 1,000,000).

Forming a million members through the control topic would take the job (and any client fleet on this machine) the
better part of an hour, so the population is loaded the way a lost checkpoint is rebuilt: one internal `LoadGroup`
request per group (`streaming.rebuild`), built from a template Stable group of M members with one committed offset
each, made by the core and copied under G group ids. Then it measures, on the running query:

- loading: the batches that load the groups (time per batch, groups per second);
- state size: Spark's reported state-store memory, the state rows, and the checkpoint directory on disk;
- batch time with that state: a backlog of heartbeats and commits from members of distinct groups, produced at once;
- latency at a fixed low rate (heartbeats and commits from random members).

Nothing here is a test; figures depend on the machine. The peer figure the issue asks for (tansu's coordinator)
does not apply: tansu keeps groups in broker memory and has no per-batch cost; `bench.report` compares the two on
the request path. Run: `python -m bench.state_scale [--groups 100000] [--members 10] [--backlog 20000]
[--buckets N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from bench.core_bench import Group
from bench.stream_bench import JobClient, percentiles
from bench.stream_bench import _load_request as request
from state.batch import decode_state
from state.records import group_record, offset_record
from streaming import config as job_config
from streaming.embedded import start_broker
from streaming.query import await_warm_up, spark_session, start_query
from streaming.rebuild import load_requests
from streaming.topics import ensure_topics

def template_group(members: int, group_id: str = "template") -> tuple[bytes, list[str], int]:
    """A Stable group of `members` with one committed offset each: (core state, member ids, generation)."""
    g = Group(group_id)
    ids, _, _ = g.stable(members)
    generation = decode_state(g.state).generation
    committed = g.call([g.request("OffsetCommit", member_id=m, generation_id=generation, group_instance_id=None,
                                  topics=[{"name": "orders", "partitions": [
                                      {"partition_index": i, "committed_offset": 100, "committed_leader_epoch": -1,
                                       "committed_metadata": ""}]}])
                        for i, m in enumerate(ids)])
    assert {r["topics"][0]["partitions"][0]["error_code"] for r in committed} == {0}
    return g.state, ids, generation


def load_request(template: bytes, group_id: str) -> bytes:
    """The LoadGroup request that loads a copy of the template group under `group_id`, as a rebuild writes it."""
    group = decode_state(template)
    group.group_id = group_id
    records = [group_record(group, persist=True).encode()]
    records += [offset_record(group_id, t, p, o).encode() for (t, p), o in sorted(group.offsets.items())]
    return load_requests(dict(records))[group_id]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--buckets", type=int, help="state.buckets (default: conf/coordinator.properties)")
    args = parser.parse_args()
    random.seed(1)
    template, member_ids, generation = template_group(args.members)
    broker = start_broker()
    workdir = Path(tempfile.mkdtemp(prefix="state-scale-"))
    result: dict = {"groups": args.groups, "members_per_group": args.members, "state_buckets": args.buckets,
                    "template_state_bytes": len(template)}
    try:
        props = job_config.load(overrides={
            "bootstrap.servers": broker.bootstrap_servers, "checkpoint.location": str(workdir / "checkpoint"),
            "topic.requests": "scale-requests", "topic.responses": "scale-responses",
            "topic.records": "scale-records", "topic.dead.letters": "scale-dead-letters",
            **({"state.buckets": str(args.buckets)} if args.buckets else {})})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, props)
        client = JobClient(broker.bootstrap_servers, props["topic.requests"], props["topic.responses"])
        start = time.monotonic()
        for g in range(args.groups):
            client.producer.send(props["topic.requests"], key=f"g{g}".encode(),
                                 value=load_request(template, f"g{g}"))
        client.producer.flush()
        result["loads_produced_s"] = round(time.monotonic() - start, 1)

        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        await_warm_up(spark)  # Python worker start-up is not part of the load time
        query = start_query(spark, props)
        start = time.monotonic()
        while sum(p.numInputRows for p in query.recentProgress) < args.groups:
            time.sleep(1)
            if time.monotonic() - start > 3600:
                raise TimeoutError("the loads were not read within an hour")
        loading = [p for p in query.recentProgress if p.numInputRows]
        result["load"] = {"wall_s": round(time.monotonic() - start, 1),
                          "batches_ms": [p.batchDuration for p in loading],
                          "rows_per_batch": [p.numInputRows for p in loading]}
        last = query.lastProgress
        result["state_after_load"] = {
            "state_rows": sum(op["numRowsTotal"] for op in last["stateOperators"]),
            "state_memory_bytes": sum(op["memoryUsedBytes"] for op in last["stateOperators"]),
            "checkpoint_bytes": directory_size(workdir / "checkpoint")}
        probe = client.send(request("g0", member_ids[0], generation, 1))
        client.wait([probe], 600)

        progress_from = len(query.recentProgress)
        groups = random.sample(range(args.groups), min(args.backlog, args.groups))
        start = time.monotonic()
        ids = [client.send(request(f"g{g}", random.choice(member_ids), generation, k))
               for k, g in enumerate(groups)]
        client.wait(ids, 1800)
        took = time.monotonic() - start
        batches = batches_with(query, progress_from, len(ids))
        errors = sum(1 for i in ids if client.bodies.get(i, {}).get("error_code", 0))
        result["backlog"] = {"requests": len(ids), "answered_s": round(took, 1),
                             "requests_per_s": round(len(ids) / took), "errors": errors,
                             "batches_ms": [p.batchDuration for p in batches],
                             "rows_per_batch": [p.numInputRows for p in batches],
                             "state_commit_ms": [sum(op.commitTimeMs for op in p.stateOperators) for p in batches],
                             "state_calls_ms": [p.observedMetrics["coordinator"]["call_us"] // 1000
                                                for p in batches],
                             "produce_ms": [p.observedMetrics["coordinator"]["produce_us"] // 1000
                                            for p in batches]}

        progress_from = len(query.recentProgress)
        ids, start, k = [], time.monotonic(), 0
        while time.monotonic() - start < args.seconds:
            time.sleep(max(0.0, start + k / args.rate - time.monotonic()))
            ids.append(client.send(request(f"g{random.randrange(args.groups)}", random.choice(member_ids),
                                           generation, k)))
            if k % 20 == 0:
                client.producer.flush()
            k += 1
        client.wait(ids, 1800)
        batches = batches_with(query, progress_from, len(ids))
        result["fixed_rate"] = {"offered_per_s": args.rate, **percentiles([client.latencies[i] for i in ids]),
                                "batch_ms_median": round(statistics.median([p.batchDuration for p in batches]))
                                if batches else None}
        last = query.lastProgress
        result["state_at_end"] = {
            "state_memory_bytes": sum(op["memoryUsedBytes"] for op in last["stateOperators"]),
            "checkpoint_bytes": directory_size(workdir / "checkpoint")}
        query.stop()
        client.close()
    finally:
        broker.stop()
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
