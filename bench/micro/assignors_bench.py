"""Our assignors against kafka-python 3.0.12's on the same inputs, side by side, and against Java Kafka's figures.

    .venv/bin/python -m bench.micro.assignors_bench          # full run: about 6 CPU-minutes, ~10 min on 2 quiet cores
    .venv/bin/python -m bench.micro.assignors_bench --quick  # smaller run: under 2 minutes on 2 quiet cores

Every (workload, implementation, assignor) runs in its own child process with a CPU-time limit on assign() (wall
clock is stretched by whoever else shares the machine), a wall-clock backstop and an address-space limit, so
kafka-python's sticky assignor at 1,000,000 partitions is reported as "did not finish" instead of running for
minutes; once a kafka-python assignor fails a fresh run, larger workloads are not tried for it. Our runs get at
least 180 s: the limits are there to stop runaway peers. Only the assign() call is timed (inputs are built first;
for a rebalance the previous assignment comes from the same assignor, untimed). Peak memory is the child's peak
RSS, interpreter and inputs included.

Columns: wall and CPU time of assign() (best of up to 5 runs when one run is under 0.2 s; CPU time is what other
tenants of a shared machine inflate least), peak RSS, max-min of assignment sizes, and partitions moved from
members still in the group against the minimum any balanced assignment must move. For
cooperative-sticky a rebalance is its first round: moving partitions are withheld (the "withheld" note), so
"moved" counts partitions handed straight to a new owner, which must be 0.

A second table sets our figures next to Java Kafka's for the same inputs (Java cannot run here: no Maven, so no
Kafka jars): the server-side uniform assignor on Kafka's own JMH shape (ServerSideAssignorBenchmark, homogeneous,
FULL assignment, 1,000 topics; figures from apache/kafka PR 17133), timed as JMH times it, with the GroupSpec and
its subscription type built before the clock; also through `assign(cluster, members)`, which learns the type from
the members, once with every member sharing one topics tuple and once with a tuple per member, as decoded
subscriptions come; and the workloads above as Kafka's own classes ran them on this kind of machine when these
assignors were written ("ref 3.2" in `JAVA`: those figures are quoted, not measured here).
Those rows get the best and the median of 20 runs (at least 3, as many as fit in 3 s, for the slow ones), and the
ratio of our best to Java's best.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

# (label, members, topics, partitions per topic, scenario)
WORKLOADS_FULL = [
    ("a: 100 x 10 x 100 fresh", 100, 10, 100, "fresh"),
    ("b: 1000 x 1 x 10000 fresh", 1000, 1, 10000, "fresh"),
    ("b: 1000 -> 900 leave", 1000, 1, 10000, "leave"),
    ("b: 1000 -> 1100 join", 1000, 1, 10000, "join"),
    ("c: 2000 x 100 x 10000 = 1M fresh", 2000, 100, 10000, "fresh"),
    ("c: 1M, 2000 -> 1800 leave", 2000, 100, 10000, "leave"),
    ("c: 1M, 2000 -> 2200 join", 2000, 100, 10000, "join"),
]
WORKLOADS_QUICK = [WORKLOADS_FULL[i] for i in (0, 1, 2, 4)]

# Kafka's ServerSideAssignorBenchmark shapes: (label, members, topics, partitions per member)
JMH_SHAPES = [
    ("JMH: 5,000 members x 1,000 topics, 10 per member", 5000, 1000, 10),
    ("JMH: 5,000 members x 1,000 topics, 50 per member", 5000, 1000, 50),
    ("JMH: 10,000 members x 1,000 topics, 10 per member", 10000, 1000, 10),
]
# Java Kafka's figures, ms: (workload label, kind, assignor) -> (best, worst or None, source)
JAVA = {
    (JMH_SHAPES[0][0], "server", "uniform"): (1.7, None, "JMH, PR 17133"),
    (JMH_SHAPES[1][0], "server", "uniform"): (7.5, None, "JMH, PR 17133"),
    (JMH_SHAPES[2][0], "server", "uniform"): (4.3, None, "JMH, PR 17133"),
    ("c: 2000 x 100 x 500 = 50k fresh", "server", "uniform"): (8.2, None, "ref 3.2"),
    ("b: 1000 x 1 x 10000 fresh", "client", "sticky"): (5.2, 7.1, "ref 3.2"),
    ("b: 1000 x 1 x 10000 fresh", "client", "cooperative-sticky"): (6.1, 9.7, "ref 3.2"),
    ("b: 1000 -> 900 leave", "client", "sticky"): (12.4, None, "ref 3.2"),
    ("b: 1000 -> 900 leave", "client", "cooperative-sticky"): (14.8, None, "ref 3.2"),
    ("b: 1000 -> 1100 join", "client", "sticky"): (20.2, None, "ref 3.2"),
    ("b: 1000 -> 1100 join", "client", "cooperative-sticky"): (28.2, None, "ref 3.2"),
    ("c: 2000 x 100 x 10000 = 1M fresh", "client", "sticky"): (240, 420, "ref 3.2"),
    ("c: 2000 x 100 x 10000 = 1M fresh", "client", "cooperative-sticky"): (239, 411, "ref 3.2"),
    ("c: 2000 x 100 x 10000 = 1M fresh", "server", "uniform"): (225, 290, "ref 3.2"),
    ("c: 2000 x 100 x 10000 = 1M fresh", "server", "range"): (26, None, "ref 3.2"),
    ("c: 1M, 2000 -> 1800 leave", "client", "sticky"): (1278, None, "ref 3.2"),
    ("c: 1M, 2000 -> 1800 leave", "client", "cooperative-sticky"): (1024, None, "ref 3.2"),
    ("c: 1M, 2000 -> 1800 leave", "server", "uniform"): (100, None, "ref 3.2"),
    ("c: 1M, 2000 -> 1800 leave", "server", "range"): (10, None, "ref 3.2"),
    ("c: 1M, 2000 -> 2200 join", "client", "sticky"): (1867, None, "ref 3.2"),
    ("c: 1M, 2000 -> 2200 join", "client", "cooperative-sticky"): (1228, None, "ref 3.2"),
    ("c: 1M, 2000 -> 2200 join", "server", "uniform"): (256, None, "ref 3.2"),
}
JAVA_ONLY_WORKLOADS = [("c: 2000 x 100 x 500 = 50k fresh", 2000, 100, 500, "fresh")]

ASSIGNORS = [
    ("client", "range"),
    ("client", "roundrobin"),
    ("client", "sticky"),
    ("client", "cooperative-sticky"),
    ("server", "uniform"),
    ("server", "range"),
]
KAFKA_PYTHON = {
    "range": "kafka.coordinator.assignors.range:RangePartitionAssignor",
    "roundrobin": "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
    "sticky": "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
    "cooperative-sticky": "kafka.coordinator.assignors.cooperative_sticky:CooperativeStickyAssignor",
}


# ---------------------------------------------------------------- child side


def _topics(n: int) -> list[str]:
    return [f"topic-{i:03d}" for i in range(n)]


def _members(n: int, start: int = 0) -> list[str]:
    return [f"consumer-{i:05d}" for i in range(start, start + n)]


def _as_sets(result: dict[str, Any]) -> dict[str, set[tuple[str, int]]]:
    return {m: {(t, p) for t, ps in tps for p in ps} for m, tps in result.items()}


def _timed(call: Any, runs: int = 5, budget_s: float | None = None) -> tuple[float, float, float, Any]:
    """(wall seconds, CPU seconds, median wall seconds, result) over up to `runs` runs, best first: stop once one
    run took 0.2 s, or with `budget_s`, once at least 3 runs took that long together. CPU time is what the
    machine's other tenants cannot inflate much, so both are reported. It is the thread's CPU clock: under
    RLIMIT_CPU Linux reports the process clock only in scheduler ticks. The previous run's result is freed before
    the clock starts, so a run is not charged for tearing down the one before."""
    best, best_cpu, result, walls = float("inf"), float("inf"), None, []
    for _ in range(runs):
        result = None
        start, start_cpu = time.perf_counter(), time.thread_time()
        result = call()
        wall, cpu = time.perf_counter() - start, time.thread_time() - start_cpu
        walls.append(wall)
        if wall < best:
            best, best_cpu = wall, cpu
        if (best >= 0.2) if budget_s is None else (len(walls) >= 3 and sum(walls) >= budget_s):
            break
    return best, best_cpu, statistics.median(walls), result


def minimum_moves(total: int, owned_counts: list[int]) -> int:
    """Fewest partitions that must leave their owners for max - min <= 1 with identical subscriptions."""
    min_quota, extra = divmod(total, len(owned_counts))
    max_quota = min_quota + (1 if extra else 0)
    at_max = [c for c in owned_counts if c >= max_quota]
    return sum(c - max_quota for c in at_max) + max(0, len(at_max) - extra) * (max_quota - min_quota)


class _Ours:
    """Inputs and calls for our assignors."""

    def __init__(self, kind: str, name: str, partitions: dict[str, int]) -> None:
        from assignors import registry
        from assignors.api import Cluster

        self.assignor = registry.get(name, kind=kind)
        self.name = name
        self.cluster = Cluster(partitions)

    def members(self, ids: list[str], topics: list[str], previous: dict[str, Any] | None) -> list[Any]:
        from assignors.api import MemberSubscription
        from assignors.sticky import encode_sticky_user_data

        topics_t = tuple(topics)
        out = []
        for m in ids:
            owned = tuple(previous.get(m, ())) if previous else ()
            if self.name == "sticky" and previous is not None:
                out.append(MemberSubscription(m, topics_t, user_data=encode_sticky_user_data(owned, 1)))
            else:
                out.append(MemberSubscription(m, topics_t, owned_partitions=owned, generation_id=1 if previous else -1))
        return out

    def assign(self, members: list[Any]) -> dict[str, Any]:
        return self.assignor.assign(self.cluster, members)

    def assign_group(self, members: list[Any]) -> Any:
        """As Kafka's JMH times it: the GroupSpec, with the group's subscription type, is built before the clock."""
        from assignors.api import GroupSpec, SubscriptionType

        spec = GroupSpec(members, SubscriptionType.HOMOGENEOUS)
        return lambda: self.assignor.assign_group(self.cluster, spec)


class _KafkaPython:
    """Inputs and calls for kafka-python 3.0.12's assignors, shaped as its ConsumerCoordinator passes them."""

    Member = namedtuple("Member", "member_id group_instance_id metadata")

    class Cluster:
        def __init__(self, partitions: dict[str, int]) -> None:
            self._partitions = {t: set(range(n)) for t, n in partitions.items()}

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            return self._partitions.get(topic)

        def topics(self, exclude_internal_topics: bool = True) -> set[str]:
            return set(self._partitions)

    def __init__(self, kind: str, name: str, partitions: dict[str, int]) -> None:
        module, cls = KAFKA_PYTHON[name].split(":")
        self.assignor = getattr(__import__(module, fromlist=[cls]), cls)()
        self.name = name
        self.cluster = self.Cluster(partitions)

    def members(self, ids: list[str], topics: list[str], previous: dict[str, Any] | None) -> list[Any]:
        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
        from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as Sub

        out = []
        for m in ids:
            owned = [(t, list(ps)) for t, ps in previous.get(m, ())] if previous else []
            if self.name == "sticky" and previous is not None:
                meta = Sub(version=0, topics=topics, user_data=StickyAssignorUserData(owned, 1))
            elif self.name == "cooperative-sticky":
                meta = Sub(version=2, topics=topics, user_data=b"", generation_id=1 if previous else -1,
                           owned_partitions=[Sub.TopicPartition(topic=t, partitions=ps) for t, ps in owned])
            else:
                meta = Sub(version=0, topics=topics, user_data=b"")
            out.append(self.Member(m, None, meta))
        return out

    def assign(self, members: list[Any]) -> dict[str, Any]:
        result = self.assignor.assign(self.cluster, members)
        return {m: [(t, tuple(ps)) for t, ps in a.assigned_partitions] for m, a in result.items()}


def run_jmh_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Kafka's ServerSideAssignorBenchmark, homogeneous FULL: every member on every topic, members * ratio
    partitions spread evenly over the topics, nobody owning anything; named as the JMH names them."""
    topics = [f"topic-{i}" for i in range(spec["topics"])]
    impl = _Ours(spec["kind"], spec["name"], {t: spec["members"] * spec["ratio"] // spec["topics"] for t in topics})
    members = impl.members([f"member{i}" for i in range(spec["members"])], topics, None)
    seconds, cpu_seconds, median, result = _timed(impl.assign_group(members), spec["runs"])
    via_members, _, _, _ = _timed(lambda: impl.assign(members), spec["runs"])
    own_tuples = [type(m)(m.member_id, tuple(list(m.topics))) for m in members]  # as decoded one by one
    via_own_tuples, _, _, _ = _timed(lambda: impl.assign(own_tuples), spec["runs"])
    sizes = [sum(len(ps) for _, ps in tps) for tps in result.values()]
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "median": median, "via_members": via_members,
            "via_own_tuples": via_own_tuples, "balance": max(sizes) - min(sizes),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """One (workload, implementation, assignor) measurement, in this (child) process."""
    if spec["scenario"] == "jmh":
        return run_jmh_case(spec)
    topics = _topics(spec["topics"])
    partitions = {t: spec["partitions"] for t in topics}
    total = spec["topics"] * spec["partitions"]
    impl = (_Ours if spec["impl"] == "ours" else _KafkaPython)(spec["kind"], spec["name"], partitions)
    ids = _members(spec["members"])
    scenario = spec["scenario"]
    out: dict[str, Any] = {}
    if scenario == "fresh":
        members = impl.members(ids, topics, None)
        previous = None
    else:
        previous = impl.assign(impl.members(ids, topics, None))
        if scenario == "leave":
            ids = [m for i, m in enumerate(ids) if i % 10]
        else:
            ids = ids + _members(spec["members"] // 10, start=spec["members"])
        members = impl.members(ids, topics, previous)
    if "cpu_limit" in spec:  # the limit is for assign() itself, not for building inputs or the previous round
        usage = resource.getrusage(resource.RUSAGE_SELF)
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = int(usage.ru_utime + usage.ru_stime) + spec["cpu_limit"] + 1
        resource.setrlimit(resource.RLIMIT_CPU, (min(soft, hard), hard))
    runs, budget_s = spec.get("runs", 5), spec.get("budget_s")
    seconds, cpu_seconds, median, result = _timed(lambda: impl.assign(members), runs, budget_s)
    sets = _as_sets(result)
    sizes = [len(s) for s in sets.values()]
    out.update(seconds=seconds, cpu_seconds=cpu_seconds, median=median, balance=max(sizes) - min(sizes),
               assigned=sum(sizes), total=total)
    if previous is not None:
        before = _as_sets(previous)
        out["minimum"] = minimum_moves(total, [len(before.get(m, ())) for m in ids])
        taken = {tp for m in ids if m in before for tp in before[m] - sets[m]}
        out["moved"] = len(taken & {tp for s in sets.values() for tp in s})
        out["withheld"] = total - sum(sizes)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


# ---------------------------------------------------------------- parent side


@dataclass(frozen=True)
class Limits:
    """Per child: CPU seconds for assign() (what a shared machine's other tenants cannot stretch), the same again
    twice over for building inputs and a rebalance's previous round, a wall-clock backstop, an address-space cap."""

    cpu_seconds: int
    memory_bytes: int

    @property
    def child_cpu_seconds(self) -> int:
        return 3 * self.cpu_seconds + 30

    @property
    def wall_seconds(self) -> float:
        return 4.0 * self.child_cpu_seconds


def measure(spec: dict[str, Any], limits: Limits) -> dict[str, Any]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.child_cpu_seconds, limits.child_cpu_seconds + 5))

    spec = {**spec, "cpu_limit": limits.cpu_seconds}
    cmd = [sys.executable, "-m", "bench.micro.assignors_bench", "--child", json.dumps(spec)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=limits.wall_seconds, preexec_fn=cap,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish within {limits.wall_seconds:.0f} s wall"}
    if done.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {"error": f"did not finish within {limits.cpu_seconds} s CPU"}
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        if "MemoryError" in tail[0]:
            return {"error": f"MemoryError (limit {limits.memory_bytes / 2**30:.0f} GiB)"}
        return {"error": tail[0][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def cell(r: dict[str, Any]) -> list[str]:
    if "error" in r:
        return [r["error"], "", "", "", ""]
    moved = f"{r['moved']} / {r['minimum']}" if "moved" in r else "-"
    if r.get("withheld"):
        moved += f" ({r['withheld']} withheld)"
    return [_duration(r["seconds"]), _duration(r["cpu_seconds"]), f"{r['peak_rss_mb']:.0f} MB", str(r["balance"]),
            moved]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer workloads and a 10 s CPU limit per case")
    parser.add_argument("--cpu", type=int, help="CPU-seconds limit per kafka-python case (default 40, quick 10)")
    parser.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit per case (default 6)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(json.loads(args.child))))
        return

    limits = Limits(args.cpu or (10 if args.quick else 40), int(args.memory_gb * 2**30))
    workloads = WORKLOADS_QUICK if args.quick else WORKLOADS_FULL
    ours_limits = Limits(max(limits.cpu_seconds, 180), limits.memory_bytes)  # the limit is for runaway peers
    header = ["workload", "assignor", "ours: time", "cpu", "peak", "max-min", "moved / min",
              "kafka-python: time", "cpu", "peak", "max-min", "moved / min"]
    load_before = os.getloadavg()[0]
    rows = []
    gave_up_at: dict[str, int] = {}  # kafka-python assignor -> smallest partition count whose fresh run failed
    started = time.monotonic()
    for label, members, topics, partitions, scenario in workloads:
        for kind, name in ASSIGNORS:
            base = {"members": members, "topics": topics, "partitions": partitions, "scenario": scenario,
                    "kind": kind, "name": name}
            ours = measure({**base, "impl": "ours"}, ours_limits)
            total = topics * partitions
            if kind == "server":
                theirs = {"error": "n/a (no server-side assignors)"}
            elif total >= gave_up_at.get(name, total + 1):
                theirs = {"error": f"not run: a fresh run at {gave_up_at[name]:,} partitions did not finish"}
            else:
                theirs = measure({**base, "impl": "kafka-python"}, limits)
                if "error" in theirs and scenario == "fresh":
                    gave_up_at[name] = total
            name_col = name if kind == "client" else f"{name} (server)"
            rows.append([label, name_col, *cell(ours), *cell(theirs)])
            print(f"  {label:36} {name_col:20} {' | '.join(rows[-1][2:])}", file=sys.stderr, flush=True)
    print(f"\nkafka-python 3.0.12 vs ours; limits per kafka-python case: {limits.cpu_seconds} s CPU, "
          f"{limits.memory_bytes / 2**30:.0f} GiB address space; total {time.monotonic() - started:.0f} s; "
          f"1-minute load average {load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end "
          f"on {os.cpu_count()} CPUs\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    java_table(workloads, ours_limits)


def java_figure(best: float, worst: float | None) -> str:
    return f"{best:g}-{worst:g} ms" if worst else f"{best:g} ms"


def java_table(workloads: list[tuple[str, int, int, int, str]], limits: Limits) -> None:
    """Our figures next to Java Kafka's for the same inputs (best and median of 20 runs for ours)."""
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    shapes = {w[0]: w for w in workloads + JAVA_ONLY_WORKLOADS}
    jmh = {label: (members, topics, ratio) for label, members, topics, ratio in JMH_SHAPES}
    header = ["workload", "assignor", "ours: best", "median", "assign(members): one topics tuple",
              "a tuple per member", "Java Kafka", "source", "ours / Java"]
    rows = []
    for (label, kind, name), (best, worst, source) in JAVA.items():
        if label in jmh:
            members, topics, ratio = jmh[label]
            spec = {"members": members, "topics": topics, "ratio": ratio, "scenario": "jmh"}
        elif label in shapes:
            _, members, topics, partitions, scenario = shapes[label]
            spec = {"members": members, "topics": topics, "partitions": partitions, "scenario": scenario}
        else:
            continue  # a workload of the full run only
        r = measure({**spec, "kind": kind, "name": name, "impl": "ours", "runs": 20, "budget_s": 3.0}, limits)
        name_col = name if kind == "client" else f"{name} (server)"
        if "error" in r:
            rows.append([label, name_col, r["error"], "", "", "", java_figure(best, worst), source, ""])
        else:
            via = [_duration(r[k]) if k in r else "-" for k in ("via_members", "via_own_tuples")]
            rows.append([label, name_col, _duration(r["seconds"]), _duration(r["median"]), *via,
                         java_figure(best, worst), source, f"{r['seconds'] * 1000 / best:.2g}"])
        print(f"  {label:50} {name_col:20} {' | '.join(rows[-1][2:])}", file=sys.stderr, flush=True)
    print(f"\nours vs Java Kafka's figures for the same inputs (Java not run here); total "
          f"{time.monotonic() - started:.0f} s; 1-minute load average {load_before:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end on {os.cpu_count()} CPUs\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
