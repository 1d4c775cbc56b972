"""Benchmark: how fast unmodified kafka-python consumers form a group through the gateway and on tansu, same run.

Two peers, each with its own embedded tansu broker and a 6-partition topic:

- ours: the coordinator query (`coordinator run`'s defaults: `group.initial.rebalance.delay.ms` 3000, as Kafka's)
  and a gateway in front of the broker (`coordinator gateway`, as the embedded default runs it);
- tansu: the broker's own group coordinator, the consumers connected to it directly.

Every consumer is a kafka-python `KafkaConsumer` with its default settings but the session timeout
(`--session-timeout-ms`, 10 s by default: kafka-python's own 45 s would have tansu hold every JoinGroup for 22.5 s)
and one assignment strategy, in a process of its own, created before the clock starts. Measured, per peer and strategy
(`range`: eager; `cooperative-sticky`: two rounds when partitions move), in `--rounds` rounds whose order alternates:

- formation: three consumers subscribe at once; until all three own partitions, disjoint and covering the topic;
- join of a fourth: a fourth subscribes to that Stable group of three; until all four own partitions so.

Prints one JSON document (seconds per round, medians), the load average, and last:
`formation: ours/tansu = Z (range R, cooperative-sticky C), fourth joining: ours/tansu = range R4, cooperative-sticky C4`
where each ratio is of the medians over the rounds, and Z of the medians over both strategies' rounds (with
`--compare-gateway-arg FLAG`, the same query is also measured through a second gateway with FLAG, a line each).
Run with `python -m bench.rebalance_bench [--rounds R] [--set key=value]`. `python -m bench.rebalance_bench steps
[--quick]` is the step-by-step mode of `bench.parts.rebalance_steps` (librdkafka members joining one by one, one
leaving, one killed; the classic protocol, eager and cooperative, beside the consumer protocol; issue 26).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.parts.rebalance_peers import PARTITIONS, OtherGateway, Ours, Tansu
from common import config as job_config
from streaming.query import spark_session

STRATEGIES = ("range", "cooperative-sticky")
TIMEOUT_S = 120.0


def _member(bootstrap: str, topic: str, group: str, strategy: str, session_timeout_ms: int, index: int, go, stop,
            reports) -> None:
    """One consumer (a child process): created, then subscribed at `go`; reports (index, time, owned partitions)
    whenever what it owns changes; closes (LeaveGroup) at `stop`."""
    from kafka import KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    assignor = {"range": RangePartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[strategy]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=f"bench-{index}",
                             partition_assignment_strategy=[assignor], enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=session_timeout_ms)
    reports.put((index, time.monotonic(), None))  # ready
    go.wait()
    consumer.subscribe([topic])
    owned: tuple[int, ...] | None = None
    while not stop.is_set():
        consumer.poll(timeout_ms=50)
        now = tuple(sorted(tp.partition for tp in consumer.assignment()))
        if now != owned:
            owned = now
            reports.put((index, time.monotonic(), owned))
    consumer.close()


class Members:
    """Consumers of one group, each in its own process."""

    def __init__(self, bootstrap: str, topic: str, group: str, strategy: str, session_timeout_ms: int) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.args = (bootstrap, topic, group, strategy, session_timeout_ms)
        self.reports = self.context.Queue()
        self.stop = self.context.Event()
        self.processes: list[Any] = []
        self.owned: dict[int, tuple[int, ...]] = {}

    def start(self, count: int) -> float:
        """`count` more consumers, created, then subscribed at once; returns when they were told to."""
        go = self.context.Event()
        first = len(self.processes)
        for index in range(first, first + count):
            process = self.context.Process(target=_member, args=(*self.args, index, go, self.stop, self.reports),
                                           daemon=True)
            process.start()
            self.processes.append(process)
        ready = 0
        while ready < count:
            index, _, owned = self.reports.get(timeout=TIMEOUT_S)
            ready += owned is None
        started = time.monotonic()
        go.set()
        return started

    def settled(self, started: float) -> float:
        """Seconds from `started` until every consumer owns partitions, disjoint and covering the topic."""
        deadline = started + TIMEOUT_S
        while True:
            index, at, owned = self.reports.get(timeout=max(0.1, deadline - time.monotonic()))
            if owned is None:
                continue
            self.owned[index] = owned
            everyone = [self.owned.get(i, ()) for i in range(len(self.processes))]
            flat = [p for parts in everyone for p in parts]
            if all(everyone) and sorted(flat) == list(range(PARTITIONS)):
                return at - started

    def close(self) -> None:
        self.stop.set()
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()


def measure(peer: Any, strategy: str, session_timeout_ms: int) -> tuple[float, float]:
    """(formation of three, join of a fourth) in seconds, on a new group."""
    members = Members(peer.bootstrap, peer.topic, f"bench-{uuid.uuid4().hex[:8]}", strategy, session_timeout_ms)
    try:
        formed = members.settled(members.start(3))
        time.sleep(1.0)  # the group settles (the leader's first commit, heartbeats) before the fourth comes
        joined = members.settled(members.start(1))
        return formed, joined
    finally:
        members.close()


def run(rounds: int = 3, overrides: dict[str, str] | None = None, gateway_args: list[str] | None = None,
        session_timeout_ms: int = 10_000, compare_args: list[str] | None = None, log=lambda message: None) -> dict:
    load = {"start": os.getloadavg()}
    workdir = Path(tempfile.mkdtemp(prefix="rebalance-bench-"))
    peers: dict[str, Any] = {}
    try:
        spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
        peers["ours"] = Ours(spark, workdir, overrides or {}, gateway_args or [])
        if compare_args:
            peers["ours (" + " ".join(compare_args) + ")"] = OtherGateway(peers["ours"], compare_args)
        peers["tansu"] = Tansu()
        measure(peers["ours"], "range", session_timeout_ms)  # warm-up: the query's first batches, its workers
        load["measuring"] = os.getloadavg()
        figures: dict[str, dict[str, dict[str, list[float]]]] = {
            name: {s: {"formation": [], "fourth": []} for s in STRATEGIES} for name in peers}
        for r in range(rounds):
            for strategy in STRATEGIES:
                for name in (list(peers) if r % 2 == 0 else list(reversed(peers))):
                    formed, joined = measure(peers[name], strategy, session_timeout_ms)
                    figures[name][strategy]["formation"].append(round(formed, 2))
                    figures[name][strategy]["fourth"].append(round(joined, 2))
                    log(f"round {r + 1} {name} {strategy}: formation {formed:.2f} s, fourth {joined:.2f} s")
        load["end"] = os.getloadavg()
        result: dict = {"rounds": rounds, "partitions": PARTITIONS, "session_timeout_ms": session_timeout_ms,
                        "seconds": figures, "medians": {}}
        for name in peers:
            result["medians"][name] = {
                "formation": statistics.median([t for s in STRATEGIES for t in figures[name][s]["formation"]]),
                **{f"formation {s}": statistics.median(figures[name][s]["formation"]) for s in STRATEGIES},
                **{f"fourth {s}": statistics.median(figures[name][s]["fourth"]) for s in STRATEGIES}}
        tansu = result["medians"]["tansu"]
        result["ratios"] = {name: {key: figures_of[key] / tansu[key] for key in figures_of}
                            for name, figures_of in result["medians"].items() if name != "tansu"}
        result["load_average"] = load
        return result
    finally:
        for peer in peers.values():
            peer.stop()


def ratio_line(ratios: dict, name: str = "ours") -> str:
    return (f"formation: {name}/tansu = {ratios['formation']:.2f} (range {ratios['formation range']:.2f}, "
            f"cooperative-sticky {ratios['formation cooperative-sticky']:.2f}), fourth joining: ours/tansu = "
            f"range {ratios['fourth range']:.2f}, cooperative-sticky {ratios['fourth cooperative-sticky']:.2f}")



def main() -> None:
    if sys.argv[1:2] == ["steps"]:  # the step-by-step mode: classic and consumer protocol, N members, P partitions
        from bench.parts import rebalance_steps
        rebalance_steps.main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator property for our query and gateway")
    parser.add_argument("--gateway-arg", action="append", default=[], help="an extra `coordinator gateway` flag")
    parser.add_argument("--compare-gateway-arg", action="append", default=[],
                        help="also measure the same query through a second gateway with this flag (repeatable)")
    parser.add_argument("--session-timeout-ms", type=int, default=10_000,
                        help="the consumers' session timeout (kafka-python's default is 45000; tansu holds every "
                             "JoinGroup for half of it)")
    args = parser.parse_args()
    result = run(args.rounds, job_config.parse_assignments(args.set), args.gateway_arg, args.session_timeout_ms,
                 args.compare_gateway_arg,
                 log=lambda message: print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True))
    print(json.dumps(result, indent=2))
    print("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                        for when, avg in result["load_average"].items()))
    for name, ratios in reversed(result["ratios"].items()):
        print(ratio_line(ratios, name))


if __name__ == "__main__":
    main()
