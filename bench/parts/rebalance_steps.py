"""Benchmark (`python -m bench.rebalance_bench steps`): a group's rebalances step by step, the classic protocol
(eager `range`, `cooperative-sticky`) beside the consumer protocol (KIP-848, `group.protocol=consumer`), same run.

One embedded broker, the coordinator query and a gateway in front of it (as `coordinator run` runs them); a topic of
P partitions (`--partitions`, 900 by default, as Karafka's figure) that a producer process keeps writing to, one
record per partition every `--produce-interval-ms`. Every member is an unmodified librdkafka consumer
(confluent-kafka) in a process of its own, connected to the gateway, created before the clock starts; they consume
from the end (`auto.offset.reset=latest`) and commit nothing. Per protocol, on a new group, the steps:

- `join k` (k = 1..N, `--members`, 10 by default): member k subscribes to the group of k - 1;
- `leave`: the newest member closes (LeaveGroup / a heartbeat with epoch -1);
- `kill`: the oldest member is SIGKILLed (its partitions move after the session timeout).

Per step: **seconds** from the step's start until every partition is consumed again: the partitions are owned,
disjoint, covering the topic, balanced over the members (P/n, rounded either way: what every assignor here gives
one topic), and each partition's owner has fetched a record written after the step started and after it got the
partition (and, beside it, the seconds until every partition was owned so); **records** consumed by the members that stayed (were in the group before and after the step) while
the step ran, and their **longest stop**: the longest time one of them consumed nothing during the step (the
consumer protocol must never stop them; a stop shorter than about 0.5 s is the member's fetch cadence).

Session timeouts (`--session-timeout-ms`, 10 s by default: the kill step waits for it): the classic consumers'
`session.timeout.ms`, and the coordinator's `group.consumer.session.timeout.ms` (with its minimum) for the consumer
protocol, whose heartbeat interval stays Kafka's 5 s (`group.consumer.heartbeat.interval.ms`: librdkafka gives a
heartbeat its interval to be answered, and an answer waits for a micro-batch). Prints one JSON document, a table,
the load average, and the ratio lines
`consumer protocol 10-member join: classic eager / consumer = X (goal >= 5)` and
`consumer / fastest classic per step = Y (goal <= 2)` (Y: the worst of join, leave and kill; medians over
`--rounds`; the protocols run in `--protocols`' order, reversed every other round). `--quick` is N=3, P=30, one round: a smoke test of about a minute or two.

`--compare-set KEY=VALUE` (repeatable) pairs a coordinator setting against the current behaviour in the same run:
once the protocols ran, their coordinator stops and one with these settings on top of `--set` starts (its own
broker, query and gateway), on which the consumer protocol runs again as `consumer (compared)`; the line
`consumer (compared) (...): N-member join, compared / consumer = X, classic eager / compared = Y` follows. For
example a 1 s heartbeat interval (below Kafka's 5 s minimum, so with the minimum lowered):
`--compare-set group.consumer.heartbeat.interval.ms=1000 --compare-set group.consumer.min.heartbeat.interval.ms=1000`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.parts.rebalance_peers import Ours, create_topic
from common import config as job_config

PROTOCOLS = {
    "classic eager": {"partition.assignment.strategy": "range"},
    "classic cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "consumer": {"group.protocol": "consumer"},
}
COUNT_EVERY_S = 0.25


# --- the member and the producer (child processes) -------------------------------------------------------------

def _emit(**fields) -> None:
    print(json.dumps(fields), flush=True)


def member(spec: dict) -> None:
    """A consumer that subscribes on `subscribe` and closes on `close` (stdin). It prints JSON lines: `owned` (the
    partitions it owns, when they change), `fetched` (a partition's first record written at or after its threshold:
    the time it got the partition or the last `mark T`, whichever is later), `consumed` (records per interval)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
                         "client.id": spec["client_id"], "enable.auto.commit": False,
                         "auto.offset.reset": "latest", **spec["config"]})
    commands: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [commands.put(line.strip()) for line in sys.stdin], daemon=True).start()
    _emit(event="ready")
    while commands.get() != "subscribe":
        pass
    consumer.subscribe([spec["topic"]])
    owned: set[int] = set()
    threshold: dict[int, float] = {}  # partition -> the write time its next reported record must reach
    count, counted_at = 0, time.time()
    while True:
        for message in consumer.consume(10_000, 0.1):
            if message.error() is not None:
                continue
            count += 1
            partition = message.partition()
            since = threshold.get(partition)
            if since is not None and message.timestamp()[1] / 1000 >= since:
                del threshold[partition]
                _emit(event="fetched", partition=partition, at=time.time(), threshold=since)
        now = time.time()
        if now - counted_at >= COUNT_EVERY_S:
            if count:
                _emit(event="consumed", at=now, count=count)
            count, counted_at = 0, now
        assignment = {p.partition for p in consumer.assignment()}
        if assignment != owned:
            for partition in assignment - owned:
                threshold[partition] = now
            for partition in owned - assignment:
                threshold.pop(partition, None)
            owned = assignment
            _emit(event="owned", at=now, partitions=sorted(owned))
        try:
            command = commands.get_nowait()
        except queue.Empty:
            continue
        if command.startswith("mark "):
            mark = float(command.split()[1])
            for partition in owned:
                threshold[partition] = max(threshold.get(partition, 0.0), mark)
        elif command == "close":
            consumer.close()
            _emit(event="closed", at=time.time())
            return


def producer(spec: dict) -> None:
    """One record to every partition each `interval` seconds, until stdin closes."""
    from confluent_kafka import Producer

    out = Producer({"bootstrap.servers": spec["bootstrap"], "linger.ms": 5, "acks": 1})
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while not stop.is_set():
        started = time.monotonic()
        for partition in range(spec["partitions"]):
            while True:
                try:
                    out.produce(spec["topic"], b"x", partition=partition)
                    break
                except BufferError:
                    out.poll(0.05)
        out.poll(0)
        stop.wait(max(0.0, spec["interval"] - (time.monotonic() - started)))
    out.flush(10)


# --- the driver ------------------------------------------------------------------------------------------------

class Member:
    """A member process and what it reported."""

    def __init__(self, index: int, spec: dict, events: queue.Queue, log_dir: Path) -> None:
        self.index = index
        self.process = subprocess.Popen([sys.executable, "-m", "bench.parts.rebalance_steps", "--member",
                                         json.dumps(spec)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        stderr=open(log_dir / f"{spec['client_id']}.log", "w"))
        self.owned: dict[int, float] = {}  # partition -> when it was got
        self.fetched: dict[int, tuple[float, float]] = {}  # partition -> (at, threshold) of its last report
        self.consumed: list[tuple[float, int]] = []
        self.ready = False
        threading.Thread(target=self._read, args=(events,), daemon=True).start()

    def _read(self, events: queue.Queue) -> None:
        for line in self.process.stdout:
            try:
                events.put((self, json.loads(line)))
            except ValueError:
                pass

    def apply(self, event: dict) -> None:
        kind = event["event"]
        if kind == "ready":
            self.ready = True
        elif kind == "owned":
            now = set(event["partitions"])
            self.owned = {p: self.owned.get(p, event["at"]) for p in now}
        elif kind == "fetched":
            self.fetched[event["partition"]] = (event["at"], event["threshold"])
        elif kind == "consumed":
            self.consumed.append((event["at"], event["count"]))

    def send(self, command: str) -> None:
        try:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


class Group:
    """The members of one group and the events they report."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, config: dict, count: int, log_dir: Path,
                 step_timeout_s: float) -> None:
        self.events: queue.Queue = queue.Queue()
        self.step_timeout_s = step_timeout_s
        self.partitions = partitions
        name = f"steps-{uuid.uuid4().hex[:8]}"
        self.members = [Member(i, {"bootstrap": bootstrap, "topic": topic, "group": name, "config": config,
                                   "client_id": f"{name}-{i}"}, self.events, log_dir) for i in range(count)]
        self.present: list[Member] = []
        self.drain(lambda: all(m.ready for m in self.members), 60.0, "members ready")

    def drain(self, done, timeout_s: float, what: str) -> None:
        deadline = time.time() + timeout_s
        while not done():
            if time.time() > deadline:
                raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")
            try:
                source, event = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            source.apply(event)

    def consumed_again(self, started: float) -> tuple[float, float] | None:
        """(when every partition was owned, when every partition was consumed again), or None (not yet): balanced,
        disjoint, covering ownership by the present members, each partition fetched by its owner past the step's
        start and past when it got it."""
        n = len(self.present)
        low, high = self.partitions // n, math.ceil(self.partitions / n)
        seen: set[int] = set()
        owned = consumed = started
        for m in self.present:
            if not low <= len(m.owned) <= high or seen & m.owned.keys():
                return None
            seen |= m.owned.keys()
            for partition, got in m.owned.items():
                fetched = m.fetched.get(partition)
                if fetched is None or fetched[1] < max(started, got) - 1e-6:
                    return None
                owned, consumed = max(owned, got), max(consumed, fetched[0])
        return (owned, consumed) if len(seen) == self.partitions else None

    def step(self, name: str, action) -> dict:
        """Run `action` (which changes `present`) at the step's start; figures once every partition is consumed."""
        before = set(self.present)
        started = time.time()
        action()
        for m in self.present:
            m.send(f"mark {started}")
        ended: list[tuple[float, float]] = []

        def done() -> bool:
            at = self.consumed_again(started)
            if at is not None:
                ended.append(at)
            return bool(ended)

        try:
            self.drain(done, self.step_timeout_s, name)
        except TimeoutError:
            return {"step": name, "seconds": None, "owned_s": None, "stayed": len(before & set(self.present)),
                    "records": None, "longest_stop_s": None}
        owned, end = ended[0]
        self.drain(lambda: time.time() >= end + 2 * COUNT_EVERY_S, 5.0, name)  # the counts reported late
        stayed = before & set(self.present)
        records, stop = 0, 0.0
        for m in stayed:
            times = [at for at, _ in m.consumed if started <= at <= end]
            records += sum(count for at, count in m.consumed if started <= at <= end)
            marks = [started, *times, end]
            stop = max(stop, max(b - a for a, b in zip(marks, marks[1:])))
        return {"step": name, "seconds": round(end - started, 2), "owned_s": round(owned - started, 2),
                "stayed": len(stayed), "records": records,
                "longest_stop_s": round(stop, 2) if stayed else None}

    def close(self) -> None:
        for m in self.members:
            m.send("close")
        deadline = time.time() + 20
        for m in self.members:
            try:
                m.process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
            m.kill()


def run_protocol(bootstrap: str, topic: str, partitions: int, config: dict, count: int, settle_s: float,
                 log_dir: Path, log, step_timeout_s: float = 180.0) -> list[dict]:
    """The steps on a new group; a step that does not end within `step_timeout_s` ends the protocol's steps
    (its seconds are None)."""
    group = Group(bootstrap, topic, partitions, config, count, log_dir, step_timeout_s)
    steps: list[dict] = []
    try:
        for m in group.members:
            def join(m=m):
                group.present.append(m)
                m.send("subscribe")
            steps.append(group.step(f"join {m.index + 1}", join))
            log(f"  {steps[-1]}")
            if steps[-1]["seconds"] is None:
                return steps
            time.sleep(settle_s)
        if count >= 3:
            newest, oldest = group.present[-1], group.present[0]

            def leave():
                group.present.remove(newest)
                newest.send("close")
            steps.append(group.step("leave", leave))
            log(f"  {steps[-1]}")
            if steps[-1]["seconds"] is None:
                return steps
            time.sleep(settle_s)

            def kill():
                group.present.remove(oldest)
                os.kill(oldest.process.pid, signal.SIGKILL)
            steps.append(group.step("kill", kill))
            log(f"  {steps[-1]}")
        return steps
    finally:
        group.close()


def summarize(rounds: list[dict[str, list[dict]]], count: int) -> dict:
    """Medians over the rounds per protocol: each step, `join` (the N joins' sum), and the ratios."""
    medians: dict[str, dict[str, float]] = {}
    for protocol in (*PROTOCOLS, COMPARED):
        runs = [r[protocol] for r in rounds if protocol in r]
        if not runs:
            continue
        by_step: dict[str, list[float]] = {}
        for steps in runs:
            joins = [s["seconds"] for s in steps if s["step"].startswith("join")]
            if None not in joins and len(joins) == count:
                by_step.setdefault("join", []).append(sum(joins))
            for s in steps:
                if s["seconds"] is not None:
                    by_step.setdefault(s["step"], []).append(s["seconds"])
        medians[protocol] = {step: round(statistics.median(v), 2) for step, v in by_step.items()}
    compared = {}
    if "join" in medians.get(COMPARED, {}) and "join" in medians.get("consumer", {}):
        compared["compared_over_consumer_join"] = round(medians[COMPARED]["join"] / medians["consumer"]["join"], 2)
    if "join" in medians.get(COMPARED, {}) and "join" in medians.get("classic eager", {}):
        compared["join_eager_over_compared"] = round(medians["classic eager"]["join"] / medians[COMPARED]["join"], 2)
    if not set(PROTOCOLS) <= set(medians):
        return {"medians": medians, "members": count, **compared}  # a subset of the protocols: no ratios
    consumer, eager = medians["consumer"], medians["classic eager"]
    per_step = {}
    for step in ("join", "leave", "kill"):
        classic = [medians[p][step] for p in ("classic eager", "classic cooperative") if step in medians[p]]
        if step in consumer and classic:
            per_step[step] = round(consumer[step] / min(classic), 2)
    if "join" not in consumer or "join" not in eager or not per_step:
        return {"medians": medians, "members": count, **compared}  # a step did not end in time
    worst = max(per_step, key=per_step.get)
    return {"medians": medians, "join_eager_over_consumer": round(eager["join"] / consumer["join"], 2),
            "consumer_over_fastest_classic": per_step, "worst_step": worst, "members": count, **compared}


def table(rounds: list[dict[str, list[dict]]]) -> str:
    lines = ["| round | protocol | step | seconds (all owned) | records by the members that stayed | their longest "
             "stop (s) |", "|---|---|---|---|---|---|"]
    for r, by_protocol in enumerate(rounds, 1):
        for protocol, steps in by_protocol.items():
            for s in steps:
                if s["seconds"] is None:
                    lines.append(f"| {r} | {protocol} | {s['step']} | did not end in time | - | - |")
                    continue
                lines.append(f"| {r} | {protocol} | {s['step']} | {s['seconds']:.2f} ({s['owned_s']:.2f}) | "
                             f"{s['records']} | "
                             f"{'-' if s['longest_stop_s'] is None else s['longest_stop_s']} |")
    return "\n".join(lines)


COMPARED = "consumer (compared)"
"""The consumer protocol on a coordinator of its own with `--compare-set`'s settings, in the same run."""


class Coordinator:
    """A broker, the coordinator query and a gateway (`bench.parts.rebalance_peers.Ours`), a topic of P partitions and a
    producer process writing to it."""

    def __init__(self, spark, workdir: Path, props: dict[str, str], partitions: int, produce_interval_ms: int) -> None:
        self.ours = Ours(spark, workdir, props, [])
        self.bootstrap = self.ours.bootstrap
        self.topic = create_topic(self.ours.broker.bootstrap_servers, partitions)
        self.writer = subprocess.Popen([sys.executable, "-m", "bench.parts.rebalance_steps", "--producer", json.dumps(
            {"bootstrap": self.ours.broker.bootstrap_servers, "topic": self.topic, "partitions": partitions,
             "interval": produce_interval_ms / 1000})], stdin=subprocess.PIPE, text=True)
        time.sleep(3.0)  # the topic in the coordinator's metadata (refreshed every second), records flowing

    def stop(self) -> None:
        self.writer.stdin.close()
        try:
            self.writer.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.writer.kill()
            self.writer.wait()
        self.ours.stop()


def run(members: int, partitions: int, rounds: int, session_timeout_ms: int, produce_interval_ms: int,
        settle_s: float, overrides: dict[str, str], log, protocols: tuple[str, ...] = tuple(PROTOCOLS),
        step_timeout_s: float = 180.0, compare: dict[str, str] | None = None) -> dict:
    """`compare`: settings on top of `overrides` for a second coordinator, started after the first is stopped, on
    which the consumer protocol runs again (`COMPARED`): an A/B of a coordinator setting in one run."""
    from streaming.query import spark_session

    load = {"start": os.getloadavg()}
    workdir = Path(tempfile.mkdtemp(prefix="rebalance-steps-"))
    props = {"group.consumer.session.timeout.ms": str(session_timeout_ms),
             "group.consumer.min.session.timeout.ms": str(min(session_timeout_ms, 45_000)),
             "group.min.session.timeout.ms": str(min(session_timeout_ms, 6_000)),
             "topic.metadata.refresh.interval.ms": "1000", **overrides}
    classic = {"session.timeout.ms": str(session_timeout_ms),
               "heartbeat.interval.ms": str(min(3000, session_timeout_ms // 3))}
    spark = spark_session(job_config.read_spark_defaults(job_config.DEFAULT_SPARK_DEFAULTS))
    sessions = [(list(protocols), props)] + ([([COMPARED], {**props, **compare})] if compare else [])
    results: list[dict[str, list[dict]]] = [{} for _ in range(rounds)]
    for number, (names, settings) in enumerate(sessions):
        coordinator = Coordinator(spark, workdir / f"coordinator-{number}", settings, partitions,
                                  produce_interval_ms)
        try:
            for protocol in ("classic eager", "consumer", COMPARED):
                if protocol in names:
                    log(f"warm-up {protocol}")  # the query's first batches, its workers; a consumer group's topic ids
                    run_protocol(coordinator.bootstrap, coordinator.topic, partitions,
                                 {**_config(protocol), **(classic if _classic(protocol) else {})}, 1, 0.0, workdir,
                                 log)
            load.setdefault("measuring", os.getloadavg())
            for r in range(rounds):
                for protocol in (names if r % 2 == 0 else list(reversed(names))):
                    log(f"round {r + 1} {protocol}")
                    config = {**_config(protocol), **(classic if _classic(protocol) else {})}
                    results[r][protocol] = run_protocol(coordinator.bootstrap, coordinator.topic, partitions, config,
                                                        members, settle_s, workdir, log, step_timeout_s)
        finally:
            coordinator.stop()
    load["end"] = os.getloadavg()
    return {"members": members, "partitions": partitions, "rounds": rounds,
            "session_timeout_ms": session_timeout_ms, "produce_interval_ms": produce_interval_ms,
            "coordinator": props, "compared_coordinator": compare or {}, "classic_consumer": classic,
            "steps": results, "summary": summarize(results, members), "load_average": load}


def _config(protocol: str) -> dict[str, str]:
    return PROTOCOLS["consumer" if protocol == COMPARED else protocol]


def _classic(protocol: str) -> bool:
    return protocol.startswith("classic")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rebalance_bench steps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=900)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--session-timeout-ms", type=int, default=10_000,
                        help="classic session.timeout.ms and the coordinator's group.consumer.session.timeout.ms")
    parser.add_argument("--produce-interval-ms", type=int, default=250,
                        help="the producer writes one record to every partition this often")
    parser.add_argument("--settle-s", type=float, default=1.0, help="pause between steps")
    parser.add_argument("--step-timeout-s", type=float, default=180.0,
                        help="a step not ended by then ends its protocol's steps (reported as not ended in time)")
    parser.add_argument("--quick", action="store_true", help="N=3, P=30, one round: a smoke test")
    parser.add_argument("--protocols", default=",".join(PROTOCOLS),
                        help="a comma-separated subset of: " + ", ".join(PROTOCOLS) + " (ratios need all three)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator property for the query and the gateway")
    parser.add_argument("--compare-set", action="append", default=[], metavar="KEY=VALUE",
                        help=f"run the consumer protocol again as '{COMPARED}' on a coordinator with this property "
                             "on top of --set (started after the first one stops)")
    args = parser.parse_args(argv)
    if args.quick:
        args.members, args.partitions, args.rounds = 3, 30, 1
    log = lambda message: print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)  # noqa: E731
    protocols = tuple(p.strip() for p in args.protocols.split(","))
    if unknown := set(protocols) - set(PROTOCOLS):
        parser.error(f"unknown protocols: {', '.join(sorted(unknown))}")
    result = run(args.members, args.partitions, args.rounds, args.session_timeout_ms, args.produce_interval_ms,
                 args.settle_s, job_config.parse_assignments(args.set), log, protocols, args.step_timeout_s,
                 job_config.parse_assignments(args.compare_set))
    print(json.dumps(result, indent=2))
    print(table(result["steps"]))
    print("load average: " + " / ".join(f"{when} " + ", ".join(f"{v:.2f}" for v in avg)
                                        for when, avg in result["load_average"].items()))
    summary = result["summary"]
    for protocol, figures in summary["medians"].items():
        print(f"{protocol}: " + ", ".join(f"{step} {s:.2f} s" for step, s in figures.items()))
    if "compared_over_consumer_join" in summary:
        print(f"{COMPARED} ({', '.join(args.compare_set)}): {args.members}-member join, compared / consumer = "
              f"{summary['compared_over_consumer_join']:.2f}"
              + (f", classic eager / compared = {summary['join_eager_over_compared']:.2f} (goal >= 5)"
                 if "join_eager_over_compared" in summary else ""))
    if "worst_step" not in summary:
        print("no ratio lines: not every protocol ran, or a step did not end in time")
        return
    print(f"consumer protocol {args.members}-member join: classic eager / consumer = "
          f"{summary['join_eager_over_consumer']:.2f} (goal >= 5)")
    print(f"consumer / fastest classic per step = {summary['consumer_over_fastest_classic'][summary['worst_step']]:.2f}"
          f" (goal <= 2; worst step {summary['worst_step']}; "
          + ", ".join(f"{k} {v:.2f}" for k, v in summary["consumer_over_fastest_classic"].items()) + ")")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--member"]:
        member(json.loads(sys.argv[2]))
    elif sys.argv[1:2] == ["--producer"]:
        producer(json.loads(sys.argv[2]))
    else:
        main()
