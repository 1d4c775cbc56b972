"""Sustained load on the embedded default, as a new user runs it (issue 37): does it hold for the whole run?

`coordinator run` (its own tansu broker, the query and a gateway) is started as a user starts it; then, through the
gateway, with librdkafka (confluent-kafka) at client defaults:
- 100 members in 10 groups (heartbeats every 3 s, a commit every 5 s: auto-commit),
- 3 consumers committing every record synchronously (fed by a producer that keeps `AHEAD` records ahead of each:
  an unpaced producer put 1.1 M records a partition into tansu by minute 32, most of its memory, and measured the
  broker rather than the coordinator), in groups whose ids land on different requests-topic partitions (the
  gateway keys a group's requests by its id, murmur2 as Kafka's partitioner: three random ids all share one
  partition once in four runs),
- a group that rebalances every 2 minutes (a member joins, the oldest leaves).

The peer is the run itself: its last 5 minutes against its first 5 (a stack that holds keeps the same pace).
It prints, per minute, commits/s, batches and their p99, each process's cores and how long tansu's and the
gateway's threads waited for one (`waited_s`), and ends with

    soak: commits/s last 5 min / first 5 min = R, batch p99 last/first = Q, members expired = X, query restarts = W,
          idle gateway = Y cores, broker memory growth = Z MB/h

Goals: R >= 0.9, Q <= 1.5, X = 0, W = 0, Y <= 0.05. `idle gateway` is measured before the load, 20 s with no
client. Members expired is the query's own count (`members_expired` in its per-batch metrics): members that leave
close their consumers, so any expiry is one that kept heartbeating.

The machine itself is measured before the stack starts and after it stops (`machine_reference`), and R is also
printed over that ratio: three runs of one build on this shared 2-core machine began at 913, 657 and 933
commits/s, so a last/first ratio alone can be the machine's drift as well as the stack's. The stack's own broker is
measured the same way on the idle stack, before the load and after it (`produce_rate`): a broker slowed by what it
holds shows there and not on the fresh one. Both are moments; `PaceProbe` follows the machine all run (the CPU time
of a fixed piece of work every few seconds, in its own process: an earlier probe of this kind took 0.061-0.109 s for
the same work within one hour here, and the minutes it was slow committed less), and R is printed over it too.

    python -m bench.soak [--minutes 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.parts.gateway_fast import cpu_seconds
from common.generations import generations, topic_of

ROOT = Path(__file__).resolve().parent.parent
GROUPS, MEMBERS, COMMITTERS = 10, 10, 3
REBALANCE_S = 120.0
AHEAD = 1000
"""Records the producer keeps ready for each committer: its poll never waits on the producer, and the records topic
grows only as fast as the committers commit."""
FEEDS = ("chunks", "trickle")
"""How the producer keeps AHEAD records ready: `chunks` (the default since the requests topic is rotated) tops a
partition up in one batch once half of them are taken; `trickle` (every run before) tops it up every 50 ms with
what was taken since. tansu lists every record batch of a partition on each fetch below its end, so the bench's own
records topic becomes tansu's work rather than the coordinator's. While the requests topic only grew it was the
smaller part (an 8-minute run: 1,500-2,000 batches a partition against the requests topic's 44,000-75,000). With
the requests topic rotated at 50,000 offsets, a 30-minute `trickle` run ended with 11,400-11,600 batches in each of
its partitions, fetched by the three committers many times a second, against at most 45,000 in the requests
generation read about three times a second: the committers' own data topic had become what grew
(docs/operations-streaming.md, "Rotating the requests topic")."""
REQUESTS_TOPIC = "group-coordinator-requests"  # conf/coordinator.properties topic.requests
COUNTED_TOPICS = ("group-coordinator-records", "group-coordinator-views", "group-coordinator-timers")
"""The other topics the job reads below their end while it runs (the console's group watch, the gateway's view
follower, the timer schedule), whose record batches are counted at the end beside the requests topic's."""


def top_up(feed: str, consumed: int, produced: int) -> int:
    """How many records the producer adds to a committer's partition now (`FEEDS`): up to AHEAD beyond what the
    committer took, at once (`trickle`) or once half of them are taken (`chunks`)."""
    taken = consumed + AHEAD - produced
    if feed == "chunks" and taken < AHEAD // 2:
        return 0
    return max(0, taken)


def spread_group_ids(prefix: str, count: int, partitions: int) -> list[str]:
    """`count` group ids `prefix-i[-k]`, the i-th on requests partition i mod `partitions` (murmur2 of the id, as the
    gateway's appender keys a group's requests): the first k that lands there."""
    from kafka.partitioner.default import murmur2

    ids = []
    for i in range(count):
        k = 0
        while (murmur2((name := f"{prefix}-{i}" + (f"-{k}" if k else "")).encode()) & 0x7FFFFFFF) % partitions \
                != i % partitions:
            k += 1
        ids.append(name)
    return ids


def start_stack(workdir: Path, settings: Sequence[str] = ()) -> tuple[subprocess.Popen, str, str, Path]:
    """`coordinator run` on the embedded default, with `settings` (KEY=VALUE, its `--set`); (process, broker,
    gateway, its output file)."""
    out = workdir / "run.out"
    process = subprocess.Popen([str(ROOT / ".venv" / "bin" / "coordinator"), "run", "--metrics-log",
                                str(workdir / "metrics.log"), "--metrics-port", "0",
                                *(x for setting in settings for x in ("--set", setting))],
                               cwd=ROOT, stdout=out.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        text = out.read_text()
        broker = re.search(r"group coordinator running: bootstrap.servers=(\S+)", text)
        gateway = re.search(r"kafka clients: bootstrap.servers=(\S+)", text)
        if broker and gateway:
            return process, broker.group(1), gateway.group(1), out
        if process.poll() is not None:
            break
        time.sleep(1)
    stop_stack(process)
    raise RuntimeError(f"coordinator run did not start:\n{out.read_text()[-3000:]}")


def stop_stack(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def child(process: subprocess.Popen, marker: str) -> int:
    """The pid of the run's child process whose command line holds `marker`."""
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if int(stat[1]) == process.pid and marker in cmdline:
            return pid
    raise RuntimeError(f"no child of {process.pid} runs {marker!r}")


def rss_mb(pid: int) -> float:
    """The process's resident memory; 0 once it is gone (a broker that stopped with its run: the run's end is then
    reported, and the figures of the minutes before it still are)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def waited_s(pid: int) -> float:
    """Seconds the process's live threads have spent runnable but waiting for a core (`/proc/<pid>/task/*/schedstat`,
    its second field). A commit crosses the committer, the gateway and tansu and back, each a wake-up: on a machine
    with more runnable threads than cores each waits its turn, and the wait, not the work, sets the commit's time."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            total += int((task / "schedstat").read_text().split()[1])
        except (OSError, IndexError, ValueError):  # a thread or the process gone meanwhile
            continue
    return total / 1e9


class Load:
    """The clients, each on a thread of its own; counts what they saw."""

    def __init__(self, gateway: str, broker: str, feed: str = "chunks") -> None:
        self.gateway, self.broker = gateway, broker
        self.feed = feed
        """How the producer tops the records topic up (`FEEDS`)."""
        self.stop = threading.Event()
        self.commits: list[float] = []
        """When each synchronous commit was answered."""
        self.commit_waits: list[tuple[float, float]] = []
        """(answered at, seconds the synchronous commit took), to tell a slow answer from a starved committer."""
        self.empty_polls: list[float] = []
        """When a committer's poll (0.5 s) came back with no record: the committer waited on its fetch."""
        self.commit_errors: dict[str, int] = {}
        self.consumed = [0] * COMMITTERS
        """Per records-topic partition, the next offset a committer took (the producer keeps AHEAD beyond it)."""
        self.lost = 0
        self.lock = threading.Lock()
        tag = uuid.uuid4().hex[:6]
        self.members_topic, self.records_topic = f"soak-members-{tag}", f"soak-records-{tag}"
        admin = AdminClient({"bootstrap.servers": broker})
        for future in admin.create_topics([NewTopic(self.members_topic, 10, 1),
                                           NewTopic(self.records_topic, COMMITTERS, 1)]).values():
            future.result()
        self.tag = tag
        requests = AdminClient({"bootstrap.servers": broker}).list_topics(timeout=30).topics.get(REQUESTS_TOPIC)
        self.committer_groups = spread_group_ids(f"soak-{tag}-committer", COMMITTERS,
                                                 len(requests.partitions) if requests else 1)
        self.threads: list[threading.Thread] = []

    def consumer(self, group: str, **settings: object) -> Consumer:
        # librdkafka's own fetch wait (500 ms): at 10 ms the committers' fetches of the records topic came back
        # empty once its partitions held ~20,000 batches (tansu lists them all per fetch and stops at the wait)
        return Consumer({"bootstrap.servers": self.gateway, "group.id": group, "auto.offset.reset": "earliest",
                         **settings})

    def _on_lost(self, _consumer: Consumer, partitions: list) -> None:
        with self.lock:
            self.lost += 1

    def start(self) -> None:
        self.threads = [threading.Thread(target=self._members, args=(g,), daemon=True) for g in range(GROUPS)]
        self.threads += [threading.Thread(target=self._committer, args=(c,), daemon=True) for c in range(COMMITTERS)]
        self.threads += [threading.Thread(target=self._producer, daemon=True),
                         threading.Thread(target=self._rebalancer, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _members(self, g: int) -> None:
        consumers = [self.consumer(f"soak-{self.tag}-group-{g}") for _ in range(MEMBERS)]
        for c in consumers:
            c.subscribe([self.members_topic], on_lost=self._on_lost)
        while not self.stop.is_set():
            for c in consumers:
                c.poll(0.05)
        for c in consumers:
            c.close()

    def _producer(self) -> None:
        producer = Producer({"bootstrap.servers": self.broker, "linger.ms": 5})
        produced = [0] * COMMITTERS
        while not self.stop.is_set():
            for p in range(COMMITTERS):
                for _ in range(top_up(self.feed, self.consumed[p], produced[p])):
                    producer.produce(self.records_topic, f"record-{produced[p]}".encode(), partition=p)
                    produced[p] += 1
            producer.flush()
            time.sleep(0.05)
        producer.flush()

    def _committer(self, index: int) -> None:
        c = self.consumer(self.committer_groups[index], **{"enable.auto.commit": False})
        c.subscribe([self.records_topic], on_lost=self._on_lost)
        while not self.stop.is_set():
            message = c.poll(0.5)
            if message is None or message.error():
                with self.lock:
                    self.empty_polls.append(time.monotonic())
                continue
            self.consumed[message.partition()] = max(self.consumed[message.partition()], message.offset() + 1)
            try:
                asked = time.monotonic()
                c.commit(message, asynchronous=False)
                answered = time.monotonic()
                with self.lock:
                    self.commits.append(answered)
                    self.commit_waits.append((answered, answered - asked))
            except KafkaException as exc:
                name = exc.args[0].name() if exc.args and isinstance(exc.args[0], KafkaError) else str(exc)
                with self.lock:
                    self.commit_errors[name] = self.commit_errors.get(name, 0) + 1
        c.close()

    def _rebalancer(self) -> None:
        group = f"soak-{self.tag}-rebalancing"
        members = [self.consumer(group), self.consumer(group)]
        for c in members:
            c.subscribe([self.members_topic], on_lost=self._on_lost)
        next_change = time.monotonic() + REBALANCE_S
        while not self.stop.is_set():
            for c in members:
                c.poll(0.05)
            if time.monotonic() >= next_change:
                joining = self.consumer(group)
                joining.subscribe([self.members_topic], on_lost=self._on_lost)
                members.append(joining)
                members.pop(0).close()
                next_change += REBALANCE_S
        for c in members:
            c.close()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def batches(metrics: Path) -> list[dict]:
    rows = []
    for line in metrics.read_text().splitlines() if metrics.exists() else ():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def p99(values: list[float]) -> float:
    return _quantile(values, 0.99)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def window_stats(rows: list[dict], commits: list[float], since: float, until: float, clock_offset: float) -> dict:
    """Commits/s and batch p99 (ms) in [since, until) (monotonic seconds); batch timestamps are wall-clock."""
    n = sum(1 for t in commits if since <= t < until)
    durations = [r["batch_duration_ms"] for r in rows
                 if since <= _ts(r["timestamp"]) - clock_offset < until]
    return {"commits_per_s": n / max(until - since, 1e-9), "batch_p99_ms": p99(durations), "batches": len(durations)}


def _ts(stamp: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def idle_gateway_cores(process: subprocess.Popen, seconds: float = 20.0) -> float:
    gateway = child(process, "-m gateway")
    before = cpu_seconds({"gateway": gateway})["gateway"]
    time.sleep(seconds)
    return (cpu_seconds({"gateway": gateway})["gateway"] - before) / seconds


REFERENCE_S = 15.0
SETTLE_S = 15.0
"""The pause between stopping the stack and the second reference: its JVM and broker take seconds to go (the first
run's reference right after the stop: 4,438/s at load average 4.5)."""


def machine_reference(seconds: float = REFERENCE_S) -> float:
    """The machine's pace, with nothing of ours running: `produce_rate` on a fresh embedded tansu (the floor of
    anything durable here, which every commit through the gateway pays)."""
    from streaming.kafka_io.embedded import start_broker

    broker = start_broker()
    try:
        return produce_rate(broker.bootstrap_servers, "soak-reference", seconds)
    finally:
        broker.stop()


def produce_rate(bootstrap: str, topic: str, seconds: float = REFERENCE_S) -> float:
    """Synchronous idempotent acks=all produces a second of one 100-byte record to a new one-partition `topic`: as
    the gateway's appender writes a commit. On the stack's own broker, before the load and after it, it tells a
    broker slowed by what it holds from a machine that slowed."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True})
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    n, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        producer.produce(topic, b"x" * 100)
        producer.flush(30)
        n += 1
    rate = n / (time.monotonic() - started)
    del producer, admin  # closed before their broker goes, rather than logging its disconnection
    return rate


PROBE_EVERY_S = 5.0
PROBE = """
import random, sys, time
data = [random.Random(7).random() for _ in range(100_000)]
while True:
    started = time.process_time()
    for _ in range(10):
        {x: i for i, x in enumerate(sorted(data))}
    print(time.process_time() - started, flush=True)
    time.sleep(float(sys.argv[1]))
"""
"""The fixed work: sorting and indexing 100,000 floats (about 10 MB, beyond the caches) ten times, about 50 ms of CPU
here: the probe takes about 1% of a core."""


class PaceProbe:
    """The machine's pace all run: a process that times a fixed piece of work in CPU seconds (`process_time`) every
    PROBE_EVERY_S. Our processes taking the cores do not change it (it waits for a core, not in its CPU time); a
    host that runs slower, or memory traffic that makes every CPU second do less, do. The figure is the machine's
    as this stack finds it: it cannot tell the host's share from ours."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        """(monotonic time, CPU seconds of the fixed work)."""
        self._process = subprocess.Popen([sys.executable, "-c", PROBE, str(PROBE_EVERY_S)], stdout=subprocess.PIPE,
                                         text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._process.stdout:
            self.samples.append((time.monotonic(), float(line)))

    def mean(self, since: float, until: float) -> float:
        """The mean CPU seconds of the samples taken in [since, until); 0 when there is none."""
        window = [cpu for at, cpu in list(self.samples) if since <= at < until]
        return sum(window) / len(window) if window else 0.0

    def close(self) -> None:
        self._process.kill()
        self._process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long the load runs (default 30)")
    parser.add_argument("--feed", choices=FEEDS, default="chunks",
                        help="how the committers' records are produced (default chunks; see FEEDS)")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a coordinator.properties key for `coordinator run` (repeatable), e.g. "
                             "topic.requests.rotate.records=10000")
    args = parser.parse_args(argv)
    workdir = ROOT / "var" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}"
    workdir.mkdir(parents=True)
    reference_before = machine_reference()
    print(f"machine reference before: {reference_before:.0f} synchronous produces/s; {_uptime()}", flush=True)
    process, broker, gateway, out = start_stack(workdir, args.settings)
    if args.settings:
        print(f"settings: {' '.join(args.settings)}", flush=True)
    load = probe = None
    try:
        time.sleep(10)
        idle = idle_gateway_cores(process)
        print(f"idle gateway: {idle:.3f} cores over 20 s; {_uptime()}", flush=True)
        broker_before = produce_rate(broker, f"soak-broker-reference-{uuid.uuid4().hex[:6]}")
        print(f"broker reference before: {broker_before:.0f} synchronous produces/s on the idle stack's broker; "
              f"{_uptime()}", flush=True)
        tansu = child(process, "tansu")
        load = Load(gateway, broker, args.feed)
        probe = PaceProbe()
        print(f"feed: {args.feed}", flush=True)
        started = time.monotonic()
        clock_offset = time.time() - started
        rss_start = rss_last = rss_mb(tansu)
        roots = {"tansu": tansu, "gateway": child(process, "-m gateway")}
        cpu_before = cpu_seconds(roots)
        waited_before = {name: waited_s(pid) for name, pid in roots.items()}
        load.start()
        total = args.minutes * 60
        minute = 0
        while time.monotonic() - started < total:
            if process.poll() is not None:
                print("the coordinator run exited", flush=True)
                break
            time.sleep(max(0.0, started + 60 * (minute + 1) - time.monotonic()))
            minute += 1
            s = window_stats(batches(workdir / "metrics.log"), list(load.commits), started + 60 * (minute - 1),
                             started + 60 * minute, clock_offset)
            rss_last = rss_mb(tansu) or rss_last
            cpu_after = cpu_seconds(roots)
            cores = " ".join(f"{name} {(cpu_after[name] - cpu_before.get(name, 0.0)) / 60:.2f}"
                             for name in ("tansu", "gateway", "spark", "bench"))
            cpu_before = cpu_after
            waited_after = {name: waited_s(pid) for name, pid in roots.items()}
            waits_for_a_core = " ".join(f"{name} {(waited_after[name] - waited_before[name]) / 60:.2f}"
                                        for name in roots)
            waited_before = waited_after
            lo, hi = started + 60 * (minute - 1), started + 60 * minute
            waits = [w for t, w in list(load.commit_waits) if lo <= t < hi]
            empty = sum(1 for t in list(load.empty_polls) if lo <= t < hi)
            print(f"minute {minute}: {s['commits_per_s']:.1f} commits/s, {s['batches']} batches, batch p99 "
                  f"{s['batch_p99_ms'] / 1000:.2f} s, commit wait mean {sum(waits) / max(len(waits), 1) * 1000:.0f} ms "
                  f"p50 {_quantile(waits, 0.5) * 1000:.0f} ms "
                  f"p99 {_quantile(waits, 0.99) * 1000:.0f} ms, empty polls {empty}, cores {cores}, "
                  f"waiting for a core {waits_for_a_core}, "
                  f"commit errors {load.commit_errors}, lost {load.lost}, tansu {rss_last:.0f} MB, "
                  f"gateway {rss_mb(roots['gateway']):.0f} MB, probe {probe.mean(lo, hi) * 1000:.0f} ms; {_uptime()}",
                  flush=True)
        ended = time.monotonic()
        rss_end = rss_mb(tansu) or rss_last
        load.close()
        time.sleep(SETTLE_S)
        broker_after = produce_rate(broker, f"soak-broker-reference-{uuid.uuid4().hex[:6]}")
        print(f"broker reference after: {broker_after:.0f} synchronous produces/s on the idle stack's broker; "
              f"{_uptime()}", flush=True)
        rows = batches(workdir / "metrics.log")
        span = min(300.0, (ended - started) / 2)
        first = window_stats(rows, load.commits, started, started + span, clock_offset)
        last = window_stats(rows, load.commits, ended - span, ended, clock_offset)
        expired = sum(r.get("members_expired", 0) for r in rows if _ts(r["timestamp"]) - clock_offset >= started)
        restarts = out.read_text().count("the coordinator query stopped") + (process.poll() is not None)
        growth = (rss_end - rss_start) / max((ended - started) / 3600, 1e-9)
        r = last["commits_per_s"] / first["commits_per_s"] if first["commits_per_s"] else 0.0
        q = last["batch_p99_ms"] / first["batch_p99_ms"] if first["batch_p99_ms"] else 0.0
        probed_first, probed_last = probe.mean(started, started + span), probe.mean(ended - span, ended)
        pace = probed_first / probed_last if probed_last else 0.0
        sizes = _topic_sizes(broker)
        requests_topics = [topic_of(REQUESTS_TOPIC, g) for g in generations(REQUESTS_TOPIC, sizes)]
        print(f"records a partition at the end: {sizes}", flush=True)
        print(f"generations of the requests topic: {len(requests_topics)}", flush=True)
        print(f"record batches a partition at the end: "
              f"{_batch_counts(broker, [*requests_topics, *COUNTED_TOPICS, load.records_topic])}", flush=True)
        print(f"windows of {span / 60:.1f} min: first {first}, last {last}; commit errors {load.commit_errors}, "
              f"assignments lost {load.lost}; tansu {rss_start:.0f} -> {rss_end:.0f} MB; {_uptime()}")
        summary = (f"soak: commits/s last 5 min / first 5 min = {r:.2f}, batch p99 last/first = {q:.2f}, "
                   f"members expired = {expired}, query restarts = {restarts}, idle gateway = {idle:.3f} cores, "
                   f"broker memory growth = {growth:.0f} MB/h")
    finally:
        if load is not None:
            load.close()
        if probe is not None:
            probe.close()
        stop_stack(process)
    time.sleep(SETTLE_S)
    reference_after = machine_reference()
    machine = reference_after / reference_before if reference_before else 0.0
    print(f"machine reference after: {reference_after:.0f} synchronous produces/s; {_uptime()}", flush=True)
    print(summary)
    print(f"machine after/before = {machine:.2f}, R on the machine's pace = R / (after/before) = "
          f"{r / machine if machine else 0.0:.2f}")
    held = broker_after / broker_before if broker_before else 0.0
    print(f"stack's broker after/before = {held:.2f}, over the machine's = {held / machine if machine else 0.0:.2f}")
    print(f"machine's pace all run (probe, last/first) = {pace:.2f} ({probed_first * 1000:.0f} -> "
          f"{probed_last * 1000:.0f} ms a probe), R on it = {r / pace if pace else 0.0:.2f}")
    return 0


def _topic_sizes(broker: str) -> dict[str, list[int]]:
    """Each topic's high watermark per partition: on tansu a fetch below a partition's end costs about 1 us per
    record batch in it (docs/operations-streaming.md), and every request the gateway appends is one batch."""
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "soak-sizes"})
    try:
        sizes = {}
        for name, topic in sorted(consumer.list_topics(timeout=10).topics.items()):
            sizes[name] = [consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1]
                           for p in sorted(topic.partitions)]
        return sizes
    except KafkaException as exc:  # a broker gone with its run
        return {f"unreadable: {exc}": []}
    finally:
        consumer.close()


def _batch_counts(broker: str, topics: list[str]) -> dict[str, list[int]]:
    """Each partition's record batches, read raw: what tansu lists on every fetch below the partition's end."""
    import socket

    from kafka.record import MemoryRecords

    from common.markers import fetch_raw

    host, _, port = broker.split(",")[0].rpartition(":")
    consumer = Consumer({"bootstrap.servers": broker, "group.id": "soak-sizes"})
    counts: dict[str, list[int]] = {}
    try:
        with socket.create_connection((host, int(port)), timeout=120) as sock:
            correlation = 0
            for topic in topics:
                counts[topic] = []
                for partition in sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions):
                    end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
                    position, n = 0, 0
                    while position < end:
                        correlation += 1
                        batches = MemoryRecords(fetch_raw(sock, topic, partition, position, correlation, 1 << 22,
                                                          max_wait_ms=30_000)
                                                or b"")
                        last = position - 1
                        while (batch := batches.next_batch()) is not None:
                            if batch.base_offset + batch.last_offset_delta >= position:
                                n += 1
                            last = max(last, batch.base_offset + batch.last_offset_delta)
                        if last < position:
                            break
                        position = last + 1
                    counts[topic].append(n)
    except (OSError, RuntimeError, KafkaException) as exc:  # a broker gone with its run
        counts[f"unreadable: {exc}"] = []
    finally:
        consumer.close()
    return counts


def _uptime() -> str:
    return "load average " + ", ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    sys.exit(main())
