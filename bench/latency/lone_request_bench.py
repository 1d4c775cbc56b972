"""Benchmark: a lone request's answer from the coordinator query against the simplest query of the same shape.

Three queries in one SparkSession, on one embedded tansu broker, measured in turns in the same minutes:

- ours: the coordinator query (`streaming.query.start_query`, the default operator and settings) with one group of
  one member; a lone request is a heartbeat or a one-partition commit (alternating) sent to the control topic when
  nothing else is in flight, and its latency runs from the send to its answer read from the response topic.
- same-source floor: the simplest query that reads a control topic with our source (`KafkaSource`, routed, as
  ours), keys the rows as ours does, calls a one-line state function per key (`EchoRows`: the request goes back
  as its own answer) and writes that answer with our sink (`KafkaOutput`). The same lone requests, the same client,
  the same trigger and Spark settings: what any query built from our source and sink costs per request.
- rate floor: Spark's `rate` source into `applyInPandasWithState` with a one-line function (`bench.stream_bench`'s
  `FloorQuery`), its micro-batch duration: the least a Python stateful query costs per batch here.

Between two requests the client waits a random 0.3-0.7 s, so each finds its query idle. Every query's batches over
the measured windows are summarised by Spark's own durations (`durationMs`) and, for ours, the state calls' timings.

Prints one JSON document, the load average, and last:
`lone request: p50/same-source floor = X, same-source floor/rate floor = Y` where X is ours' p50 over the
same-source query's p50, and Y that p50 over the rate query's batch median: what reading and writing Kafka with
our source and sink, and the client's round trip, add to Spark's own floor.
Run with `python -m bench.latency.lone_request_bench [--samples N] [--rounds R] [--set key=value]`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle

from bench.stream_bench import FloorQuery, JobClient, OursPeer, _load_request, _ratio, percentiles
from common import config as job_config
from common.config import Topics, client_config, kafka_options
from common.topics import ensure_topics
from streaming.kafka_io.embedded import start_broker
from streaming.kafka_io.kafka_clients import chosen_client
from streaming.kafka_io.sink import KafkaOutput, OutputRow
from streaming.kafka_io.source import KafkaSource
from streaming.query import spark_session, stop_between_batches
from streaming.stateful import INPUT_COLUMNS

DURATIONS = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "triggerExecution")


class EchoRows(StatefulProcessor):
    """The same-source floor's state function: every request goes back as its own answer (it carries its
    request_id), produced with our sink and flushed once per task, as `GroupRows` does."""

    def __init__(self, output: KafkaOutput) -> None:
        self.output = output

    def init(self, handle: StatefulProcessorHandle) -> None:
        pass

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues) -> Iterator[Row]:
        self.output.send([OutputRow("response", r.group_id.encode(), r.value) for r in rows if r.value])
        yield Row(rows=0)

    def close(self) -> None:
        self.output.flush()


class EchoQuery:
    """The same-source floor query on its own topics of the shared broker."""

    def __init__(self, spark, broker, trigger_ms: int, workdir: Path, overrides: dict[str, str]) -> None:
        self.props = job_config.load(overrides={
            "bootstrap.servers": broker.bootstrap_servers, "trigger.interval.ms": str(trigger_ms),
            **{f"topic.{name}": f"bench-echo-{name.replace('.', '-')}"
               for name in ("requests", "responses", "records", "dead.letters", "timers")}, **overrides})
        ensure_topics({"bootstrap_servers": broker.bootstrap_servers}, self.props)
        topics = Topics.from_properties(self.props)
        kafka = kafka_options(self.props)
        output = KafkaOutput(client_config(kafka), {"response": topics.responses}, chosen_client(kafka))
        rows = (spark.readStream.format(KafkaSource.name()).options(**kafka)
                .option("subscribe", topics.requests).option("route", "true")
                .option("startingOffsets", "latest").option("buckets", self.props["state.buckets"]).load())
        self.query = (rows.select(*INPUT_COLUMNS).groupBy("kind", "bucket")
                      .transformWithState(EchoRows(output), "rows INT", "Append", "None")
                      .writeStream.format("noop").option("checkpointLocation", str(workdir / "checkpoint-echo"))
                      .trigger(processingTime=f"{trigger_ms} milliseconds").queryName("bench-echo").start())
        self.client = JobClient(broker.bootstrap_servers, topics.requests, topics.responses)
        self.members = [("g0", "member-0", 1)]

    def stop(self) -> None:
        stop_between_batches(self.query)
        self.client.close()


def lone_requests(client: JobClient, members: list[tuple[str, str, int]], count: int, tag: str) -> list[float]:
    """Latencies (s) of `count` requests, each sent alone after a random pause."""
    out = []
    for n in range(count):
        time.sleep(random.uniform(0.3, 0.7))
        group, member, generation = members[n % len(members)]
        request = _load_request(group, member, generation, n)
        request["request_id"] = f"{tag}-{n}-{request['request_id']}"
        rid = client.send(request)
        client.wait([rid], timeout_s=60)
        out.append(client.latencies[rid])
    return out


def batch_summary(query, first: int, last: int) -> dict:
    """Medians of Spark's durations over the batches with input in (first, last]."""
    batches = [p for p in query.recentProgress if first < p.batchId <= last and p.numInputRows > 0]
    out: dict = {"batches": len(batches)}
    if not batches:
        return out
    for name in DURATIONS:
        out[name] = round(statistics.median([p.durationMs.get(name, 0) for p in batches]))
    operators = [op for p in batches for op in p.stateOperators]
    if operators:
        out["state_commit"] = round(statistics.median([op.commitTimeMs for op in operators]))
    observed = [p.observedMetrics["coordinator"] for p in batches if "coordinator" in p.observedMetrics]
    if observed:
        out["state_calls"] = round(statistics.median([m["call_us"] / 1000 for m in observed]), 1)
    return out


def _last(query) -> int:
    return query.lastProgress.batchId if query.lastProgress else -1


def run(samples: int = 100, rounds: int = 4, trigger_ms: int = 100, floor_seconds: float = 10.0,
        overrides: dict[str, str] | None = None, spark_conf: dict[str, str] | None = None,
        log=lambda message: None) -> dict:
    load = {"start": os.getloadavg()}
    workdir = Path(tempfile.mkdtemp(prefix="lone-request-bench-"))
    broker = start_broker()
    peers: dict[str, Any] = {}
    try:
        spark = spark_session({**job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS),
                               "spark.sql.streaming.numRecentProgressUpdates": "10000", **(spark_conf or {})})
        peers["ours"] = OursPeer(spark, broker, "transformWithState", 1, trigger_ms, workdir, overrides or {})
        peers["ours"].form()
        peers["same-source"] = EchoQuery(spark, broker, trigger_ms, workdir, overrides or {})
        rate_floor = FloorQuery(spark, trigger_ms, workdir)
        for name in peers:  # warm up: the first batches of a query plan and start its workers
            lone_requests(peers[name].client, peers[name].members, 5, f"warm-{name}")
        load["measuring"] = os.getloadavg()
        latencies: dict[str, list[float]] = {name: [] for name in peers}
        windows: dict[str, list[tuple[int, int]]] = {name: [] for name in peers}
        rate_batches: list[int] = []
        per_round = max(1, samples // rounds)
        for r in range(rounds):
            order = [*peers, "rate"]
            order = order[r % len(order):] + order[:r % len(order)]
            for name in order:
                if name == "rate":
                    rate_batches += rate_floor.batches(floor_seconds)
                    log(f"round {r + 1} rate floor: median {statistics.median(rate_batches)} ms")
                    continue
                peer = peers[name]
                first = _last(peer.query)
                latencies[name] += lone_requests(peer.client, peer.members, per_round, f"r{r}-{name}")
                time.sleep(0.5)
                windows[name].append((first, _last(peer.query)))
                log(f"round {r + 1} {name}: {percentiles(latencies[name])}")
        load["end"] = os.getloadavg()
        result: dict = {"samples_per_peer": per_round * rounds, "rounds": rounds, "trigger_ms": trigger_ms,
                        "rate_floor": {"batch_ms_median": statistics.median(rate_batches) if rate_batches else None,
                                       "batches": len(rate_batches)}, "peers": {}}
        for name, peer in peers.items():
            batches = [batch_summary(peer.query, first, last) for first, last in windows[name]]
            merged = _merge(batches)
            result["peers"][name] = {"latency": percentiles(latencies[name]), "batch_ms_median": merged}
        ours = result["peers"]["ours"]["latency"]["p50_ms"]
        floor = result["peers"]["same-source"]["latency"]["p50_ms"]
        rate = result["rate_floor"]["batch_ms_median"]
        result["ratios"] = {"p50/same-source floor": _ratio(ours, floor),
                            "same-source floor/rate floor": _ratio(floor, rate)}
        result["load_average"] = load
        return result
    finally:
        for peer in peers.values():
            peer.stop()
        broker.stop()


def _merge(summaries: list[dict]) -> dict:
    """One summary for several windows: their batch counts summed, each duration the median of the windows'."""
    out: dict = {"batches": sum(s.get("batches", 0) for s in summaries)}
    for name in (*DURATIONS, "state_commit", "state_calls"):
        values = [s[name] for s in summaries if name in s]
        if values:
            out[name] = statistics.median(values)
    return out


def ratio_line(ratios: dict) -> str:
    def fmt(name: str) -> str:
        value = ratios.get(name)
        return f"{name} = {'n/a' if value is None else f'{value:.2f}'}"
    return "lone request: " + ", ".join(fmt(n) for n in ("p50/same-source floor", "same-source floor/rate floor"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=100, help="lone requests per query")
    parser.add_argument("--rounds", type=int, default=4, help="turns each query takes")
    parser.add_argument("--trigger-ms", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator property for both Kafka-sourced queries")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    args = parser.parse_args()
    result = run(args.samples, args.rounds, args.trigger_ms, overrides=job_config.parse_assignments(args.set),
                 spark_conf=job_config.parse_assignments(args.conf),
                 log=lambda message: print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2))
    print("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                        for when, avg in result["load_average"].items()))
    print(ratio_line(result["ratios"]))


if __name__ == "__main__":
    main()
