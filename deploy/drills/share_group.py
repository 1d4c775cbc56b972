"""Drill: share consumers (KIP-932) through a gateway while the driver or the gateway holding the share-partitions
is killed -9; at the end every record is settled once, none lost, none delivered past the delivery-count limit.

    python -m deploy.drills.share_group [--kill driver,gateway] [--members 3] [--partitions 2] [--records 600]
        [--lease-ms 10000] [--standby] [--rebuild] [--workdir DIR] [--bootstrap-servers HOST:PORT]

The job (`coordinator run`, its own process group) and one gateway in front of its topics (a process of its own, on
a fixed port so that it can come back where the consumers look for it) serve a share group of `--members`
unmodified confluent-kafka ShareConsumers in explicit mode, threads of this process. A producer fills a topic
while they consume, at most `AHEAD` records ahead of them (so records are in flight at every step); each member
accepts every record but those whose value ends in `!` (rejected on purpose) and those ending in `~` at their first
delivery (released on purpose: they come again with a higher delivery count, and are accepted then), and
acknowledges them with `commit_sync` after each poll. The kills (and the rebuild) come in turn as the members have
settled an equal share of the records:

- `driver`: the job's process group gets SIGKILL and the job is started again on its checkpoint (with `--standby`: a
  second driver on the same checkpoint, waiting warm, takes over when the killed one's lease lapses, as in
  `kill_driver --standby`): the gateway keeps serving the share-partitions it holds under their leases; the new
  driver restarts every lease at its first batch;
- `gateway`: the gateway gets SIGKILL and a new one is started on the same port (a new holder): the killed one's
  share-partitions are free once their lease (`--lease-ms`) ends, and the new gateway starts from every transition
  the old one appended before it answered; records it had acquired and not settled come back AVAILABLE.

With `--rebuild`, after the kills and once the members have settled some more, the members close (their acquired
records are released, durably), `BURST` records are produced at once, and one more member polls some, acknowledges
the last and closes with the others unacknowledged (released, durably, with their delivery counts: the state
then has batches of its own). The drill reads each share-partition's durable state (start offset, state epoch,
and the state batches: offset ranges with their state and delivery count) from the query that survived the kills,
by taking the free share-partition with an internal ShareGrant as a gateway would, and releasing it at once. It then
stops that query and starts `coordinator run --rebuild-from-records` on a new, empty checkpoint, reads the state the
same way from the rebuilt query, and the members start again against it. (Acquisitions are never stored, here as in
Kafka, so records acquired and not settled are not part of the durable state.)

Then production stops and the drill waits until every record produced is settled. Checks:
- none lost: every record produced was accepted, or rejected on purpose;
- none settled twice: no record delivered again after an acknowledgement of it was answered without an error;
- the delivery-count limit held: no record delivered more than `share.delivery.count.limit` times, and no
  delivery's count below the one before (a record acquired, not settled, by a holder that died comes back with its
  durable count, as on a Kafka leader change: an acquisition is never stored);
- with `--rebuild`: the rebuilt query holds the same share-partition state as the one that survived the kills.
A record whose acknowledgement was answered with an error (the gateway died meanwhile) counts as settled when its
share-partition's durable start offset is past it (the transition may have been made durable: the safe direction).
"""

from __future__ import annotations

import argparse
import signal
import os
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from deploy.drills.harness import Environment, JobProcess, log

DELIVERY_LIMIT = 5
AHEAD = 60
"""The producer keeps at most this many records produced and not yet settled."""
DURABLE_EVERY_S = 5.0
"""How often the wait for every record to settle asks the coordinator for the durable start offsets."""
BURST = 40
"""With `--rebuild`: records produced at once, for a member that closes with them in hand."""
PROBE = "drill-probe"
"""The holder id of the drill's own takes, which read a share-partition's durable state from the query."""


@dataclass
class Ledger:
    """Every delivery and every acknowledgement the members saw, by record value."""

    deliveries: dict[bytes, list[int]] = field(default_factory=lambda: defaultdict(list))
    """value -> the delivery counts it came with, in order."""
    settled: dict[bytes, str] = field(default_factory=dict)
    """value -> accepted | rejected, once an acknowledgement of it was answered without an error."""
    redelivered_after_settling: list[bytes] = field(default_factory=list)
    where: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    """value -> (partition, offset)."""
    failed_acks: int = 0
    released: int = 0
    """Releases on purpose answered without an error."""
    unanswered: set[bytes] = field(default_factory=set)
    """Values whose last acknowledgement was answered with an error and that were not delivered since."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _member(bootstrap: str, group: str, topic: str, ledger: Ledger, stop: threading.Event) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 20,
                              "log_level": 2})  # the gateway's restart is expected: its connection errors are not news
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            try:
                messages = [m for m in consumer.poll(0.5) if m.error() is None]
            except Exception:  # noqa: BLE001 - a gateway or driver away: poll again, as an application does
                time.sleep(0.5)
                continue
            if not messages:
                continue
            outcome = {}
            for m in messages:
                _delivered(ledger, m)
                outcome[m.value()] = _outcome(m.value(), m.delivery_count())
            _acknowledge(consumer, ledger, messages, outcome)
    finally:
        consumer.close()


def _acknowledge(consumer, ledger: Ledger, messages: list, outcome: dict[bytes, str]) -> None:
    """Acknowledge each message as `outcome` says, `commit_sync`, and book what was answered without an error."""
    from confluent_kafka import AcknowledgeType

    kinds = {"accepted": AcknowledgeType.ACCEPT, "rejected": AcknowledgeType.REJECT,
             "released": AcknowledgeType.RELEASE}
    for m in messages:
        consumer.acknowledge(m, kinds[outcome[m.value()]])
    try:
        results = consumer.commit_sync()
        failed = {(tp.topic, tp.partition) for tp, error in (results or {}).items() if error is not None}
    except Exception:  # noqa: BLE001 - not answered: not counted as settled (it may still be applied)
        failed = {(m.topic(), m.partition()) for m in messages}
    with ledger.lock:
        for m in messages:
            if (m.topic(), m.partition()) in failed:
                ledger.failed_acks += 1
                ledger.unanswered.add(m.value())
            elif outcome[m.value()] == "released":
                ledger.released += 1
            else:
                ledger.settled[m.value()] = outcome[m.value()]


def _closing_member(bootstrap: str, group: str, topic: str, ledger: Ledger, timeout_s: float) -> int:
    """A member that closes with records in hand: it polls until it gets some, acknowledges the last one as every
    member would, and closes without acknowledging the others (they come back AVAILABLE with their delivery count,
    durably: state batches below an acknowledged record). Returns how many it left unacknowledged."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 2,
                              "share.acknowledgement.mode": "explicit", "max.poll.records": 50})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout_s
        messages = []
        while not messages and time.monotonic() < deadline:
            messages = [m for m in consumer.poll(0.5) if m.error() is None]
        if not messages:
            raise TimeoutError("the closing member got no records to close with")
        for m in messages:
            _delivered(ledger, m)
        last = messages[-1]
        _acknowledge(consumer, ledger, [last], {last.value(): _outcome(last.value(), last.delivery_count())})
        return len(messages) - 1
    finally:
        consumer.close()


def _delivered(ledger: Ledger, m) -> None:
    """Book a delivery (and one after the record was settled: what must never happen)."""
    with ledger.lock:
        value = m.value()
        if value in ledger.settled:
            ledger.redelivered_after_settling.append(value)
        ledger.deliveries[value].append(m.delivery_count())
        ledger.where[value] = (m.partition(), m.offset())
        ledger.unanswered.discard(value)


def _outcome(value: bytes, delivery_count: int) -> str:
    if value.endswith(b"!"):
        return "rejected"
    return "released" if value.endswith(b"~") and delivery_count == 1 else "accepted"


class ShareLoad:
    def __init__(self, env: Environment, members: int, partitions: int, workdir: Path) -> None:
        from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
        from kafka.admin import KafkaAdminClient, NewTopic

        self.env, self.workdir = env, workdir
        self.topic = f"drill-share-{uuid.uuid4().hex[:8]}"
        self.group = f"{self.topic}-group"
        admin = KafkaAdminClient(bootstrap_servers=env.bootstrap)
        try:
            admin.create_topics([NewTopic(self.topic, partitions, 1)])
        finally:
            admin.close()
        for attempt in range(5):  # the port after the one picked is the broker's listener: both must be free
            self.port = _free_port()
            try:
                self.gateway = self.start_gateway()
                break
            except RuntimeError:
                if attempt == 4:
                    raise
        self.bootstrap = self.gateway.bootstrap_servers
        entries = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
                   ConfigEntry("share.delivery.count.limit", str(DELIVERY_LIMIT),
                               incremental_operation=AlterConfigOpType.SET)]
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for attempt in range(5):  # a fresh query's first batches may outlast the gateway's request timeout
            try:
                for future in admin.incremental_alter_configs(
                        [ConfigResource(ResourceType.GROUP, self.group, incremental_configs=entries)]).values():
                    future.result(timeout=120)
                break
            except Exception as exc:  # noqa: BLE001 - retried, then raised
                if attempt == 4:
                    raise
                log(f"setting the group's configs: {exc}; again")
        self.ledger = Ledger()
        self._starts: dict[int, int] = {}
        self._starts_at = float("-inf")
        """The durable start offsets `all_settled` last asked for, and when."""
        self.produced: list[bytes] = []
        self.members = members
        self._stop_members, self._stop_producing = threading.Event(), threading.Event()
        self._threads: list[threading.Thread] = []
        self.start_members()
        self._producer = threading.Thread(target=self._produce, daemon=True)
        self._producer.start()

    def start_members(self) -> None:
        self._stop_members = threading.Event()
        self._threads = [threading.Thread(target=_member, args=(self.bootstrap, self.group, self.topic, self.ledger,
                                                                 self._stop_members), daemon=True)
                         for _ in range(self.members)]
        for thread in self._threads:
            thread.start()

    def stop_members(self) -> None:
        """Every member closes its consumer: its share session ends and its acquired records are released."""
        self._stop_members.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def start_gateway(self):
        from gateway.front.process import start_gateway

        props = {k: v for k, v in self.env.props.items() if k.startswith(("topic.", "group."))}
        return start_gateway(self.env.bootstrap, props, listen=f"127.0.0.1:{self.port}",
                             log_path=self.workdir / "gateway.log", timeout_s=120)

    def kill_gateway(self) -> None:
        os.kill(self.gateway.process.pid, signal.SIGKILL)
        self.gateway.process.wait(timeout=30)
        for attempt in range(10):  # on the same port, where the consumers look for it
            try:
                self.gateway = self.start_gateway()
                return
            except RuntimeError:
                if attempt == 9:
                    raise
                time.sleep(1)

    def _produce(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.env.bootstrap, "linger.ms": 5})
        i = 0
        while not self._stop_producing.is_set() and i < self.limit:
            with self.ledger.lock:
                ahead = i - len(self.ledger.settled) - len(self.ledger.unanswered)
            if ahead >= AHEAD:  # paced to the members: records are in flight at every kill, however slow they are
                time.sleep(0.05)
                continue
            value = b"r%06d%s" % (i, b"!" if i % 17 == 0 else b"~" if i % 13 == 0 else b"")
            producer.produce(self.topic, value)
            self.produced.append(value)
            i += 1
            producer.poll(0)
            time.sleep(0.02)
        producer.flush(60)
        self._stop_producing.set()

    def burst(self, count: int) -> None:
        """`count` records at once (one producer flush), beside the paced producer."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.env.bootstrap, "linger.ms": 50})
        for i in range(count):
            value = b"b%06d%s" % (i, b"!" if i % 17 == 0 else b"~" if i % 13 == 0 else b"")
            producer.produce(self.topic, value, partition=0)
            self.produced.append(value)
        producer.flush(60)

    limit = 600

    def settled_count(self) -> int:
        with self.ledger.lock:
            return len(self.ledger.settled)

    def all_settled(self) -> bool:
        """Whether every record produced is settled as `checks` counts it: as answered, or unanswered, or below its
        share-partition's durable start offset (asked of the coordinator at most every `DURABLE_EVERY_S`). A record
        settled durably whose answer the member never saw is not delivered again, so the ledger alone would wait for
        it until the deadline (310 s in a suite run under load, whose checks then passed)."""
        if not self._stop_producing.is_set():
            return False
        with self.ledger.lock:
            waiting = self._waiting()
            where = [self.ledger.where.get(v) for v in waiting]
        if not waiting:
            return True
        if None in where:
            return False  # never delivered: not settled
        now = time.monotonic()
        if now - self._starts_at >= DURABLE_EVERY_S:
            self._starts_at = now
            try:
                self._starts = self.start_offsets()
            except Exception as exc:  # noqa: BLE001 - the query not answering yet: asked again later
                log(f"durable start offsets not read: {exc}")
        return all(offset < self._starts.get(partition, -1) for partition, offset in where)

    def _waiting(self) -> list[bytes]:
        """The records produced that the ledger has neither as settled nor as unanswered (its lock held)."""
        return [v for v in self.produced if v not in self.ledger.settled and v not in self.ledger.unanswered]

    def unsettled(self) -> str:
        """The records `all_settled` still waits for, a few of them with their deliveries (for the drill's log)."""
        with self.ledger.lock:
            waiting = self._waiting()
            return f"{len(waiting)} of {len(self.produced)} produced; " + ", ".join(
                f"{v!r} at {self.ledger.where.get(v)} delivered {self.ledger.deliveries.get(v, [])}"
                for v in waiting[:8])

    def close(self) -> None:
        self._stop_producing.set()
        self.stop_members()
        self.gateway.stop()

    def share_state(self, timeout_s: float) -> dict[int, tuple]:
        """partition -> (start offset, state epoch, state batches) as the query holds them durably: each
        share-partition taken, once free, with an internal ShareGrant under the drill's own holder id (the take's
        answer carries the durable state a new holder starts from), then released at once."""
        from client.transport import KafkaTransport

        topics = self.env.topics
        transport = KafkaTransport(self.env.bootstrap, topics.requests, topics.responses)
        try:
            described = transport.request(self.group, {"api": "DescribeShareGroupOffsets", "group_id": self.group,
                                                       "topics": None}, 60, attempts=3)
            (topic_id,) = {t["topic_id"] for t in described.get("topics") or [] if t["topic_name"] == self.topic}
            partitions = sorted(p["partition_index"] for t in described["topics"] if t["topic_id"] == topic_id
                                for p in t["partitions"])
            return {p: self._take_and_release(transport, topic_id, p, timeout_s) for p in partitions}
        finally:
            transport.close()

    def _take_and_release(self, transport, topic_id: str, partition: int, timeout_s: float) -> tuple:
        def grant(operation: str, epoch: int) -> dict:
            answer = transport.request(self.group, {
                "api": "ShareGrant", "group_id": self.group, "holder": PROBE,
                "partitions": [{"topic_id": topic_id, "partition": partition, "operation": operation,
                                "epoch": epoch}]}, 60, attempts=3)
            (part,) = answer["partitions"]
            return part

        deadline = time.monotonic() + timeout_s
        epoch = -1
        while True:
            taken = grant("take", epoch)
            if taken["error_code"] == 0 and taken["holder"] == PROBE:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"share-partition {partition} still held: {taken}")
            if taken["holder"] is not None or taken["epoch"] == epoch:
                time.sleep(0.5)  # held (by a gateway whose sessions are closing, or under a lease running out)
            epoch = taken["epoch"]
        released = grant("release", taken["epoch"])
        if released["error_code"] != 0:
            raise RuntimeError(f"the drill's take of share-partition {partition} not released: {released}")
        return (taken["start_offset"], taken["state_epoch"],
                tuple((b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                      for b in taken.get("state_batches") or ()))

    def start_offsets(self) -> dict[int, int]:
        """partition -> its share-partition's durable start offset (below it every record is settled), as the
        coordinator answers DescribeShareGroupOffsets."""
        from admin.share_groups import ShareAdmin
        from client.transport import KafkaTransport

        topics = self.env.topics
        transport = KafkaTransport(self.env.bootstrap, topics.requests, topics.responses)
        try:
            return {p: start for (t, p), (start, _) in ShareAdmin(transport, 60).offsets(self.group).items()
                    if t == self.topic}
        finally:
            transport.close()

    def checks(self) -> tuple[dict[str, bool], list[str]]:
        ledger = self.ledger
        starts = self.start_offsets()
        with ledger.lock:
            # an acknowledgement answered with an error may still have been made durable (the safe direction): a
            # record below its share-partition's start offset is settled, whatever its member was told
            durable = {v for v in self.produced if v not in ledger.settled and v in ledger.where
                       and ledger.where[v][1] < starts.get(ledger.where[v][0], -1)}
            lost = [v for v in self.produced if v not in ledger.settled and v not in durable]
            wrong = [v for v in self.produced if v in ledger.settled
                     and ledger.settled[v] != ("rejected" if v.endswith(b"!") else "accepted")]
            over = [v for v, counts in ledger.deliveries.items() if len(counts) > DELIVERY_LIMIT]
            # a record acquired and not settled by a holder that died comes back with its durable count (Kafka's
            # leader change: an acquisition is never stored), so counts may repeat, but never go down
            unordered = [v for v, counts in ledger.deliveries.items()
                         if any(b < a for a, b in zip(counts, counts[1:]))]
            again = list(ledger.redelivered_after_settling)
            redelivered = sum(1 for counts in ledger.deliveries.values() if len(counts) > 1)
        checks = {"none lost: every record accepted, or rejected on purpose": not lost and not wrong,
                  "none delivered again after its acknowledgement was answered": not again,
                  f"none delivered more than {DELIVERY_LIMIT} times, counts never falling": not over and not unordered}
        notes = [f"{len(self.produced)} produced, {len(ledger.settled)} settled as answered, {len(durable)} settled "
                 f"durably though their acknowledgement was answered with an error ({ledger.failed_acks} such "
                 f"answers), {ledger.released} released on purpose, {redelivered} delivered more than once; start "
                 f"offsets {starts}"]
        notes += [f"lost: {v!r}" for v in lost[:5]] + [f"settled wrongly: {v!r}" for v in wrong[:5]]
        notes += [f"delivered again after settling: {v!r}" for v in again[:5]]
        notes += [f"over the limit or out of order: {v!r} {ledger.deliveries[v]}" for v in (over + unordered)[:5]]
        return checks, notes


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(kills: list[str], members: int, partitions: int, records: int, lease_ms: int, workdir: Path,
        bootstrap: str | None = None, timeout_s: float = 300.0, standby: bool = False,
        rebuild: bool = False) -> tuple[dict[str, bool], list[str]]:
    """The checks (name -> passed) and the notes behind them."""
    env = Environment(workdir, bootstrap, props={"share.partition.lease.ms": str(lease_ms)})
    # With a standby, a second driver on the same checkpoint waits, warm, and takes over at each driver kill; the
    # killed one comes back as the next standby (kill_driver's --standby).
    spare = JobProcess(env.props, env.workdir / "standby", env.job.spark_conf) if standby else None
    load = None
    try:
        env.job.start()
        env.job.wait_running(timeout_s)
        log(f"job running on {env.bootstrap}")
        if spare is not None:
            spare.start().wait_standby(timeout_s)
            log("standby ready")
        ShareLoad.limit = records
        load = ShareLoad(env, members, partitions, workdir)
        log(f"{members} share consumers on {load.topic} through {load.bootstrap}")
        steps = len(kills) + (1 if rebuild else 0)
        takeovers: list[bool] = []
        """Per driver kill with a standby: whether the standby said it took the lease."""
        for i, kill in enumerate(kills):
            target = (i + 1) * records // (steps + 1)
            _until(lambda: load.settled_count() >= target, timeout_s)
            log(f"kill {i + 1}/{len(kills)}: the {kill}, {load.settled_count()} records settled")
            killed_at = time.monotonic()
            if kill == "driver":
                env.job.kill()
                if spare is None:
                    env.job.start()
                else:
                    env.job, spare = spare, env.job
            else:
                load.kill_gateway()
            before = load.settled_count()
            if _until(lambda: load.settled_count() > before or load.all_settled(), timeout_s + lease_ms / 1000):
                log(f"settling again {time.monotonic() - killed_at:.1f} s after the kill")
            if kill == "driver":
                # the next step only once the new driver runs the query: each kill recovered from on its own
                env.job.wait_running(timeout_s + lease_ms / 1000)
                log(f"the query runs again {time.monotonic() - killed_at:.1f} s after the kill")
                if spare is not None:
                    takeovers.append("took the lease" in env.job.log_text())
                    if "driver" in kills[i + 1:]:
                        spare.start().wait_standby(timeout_s)
        rebuilt_checks: dict[str, bool] = {}
        notes: list[str] = []
        if rebuild:
            target = steps * records // (steps + 1)
            _until(lambda: load.settled_count() >= target, timeout_s)
            load.stop_members()
            load.burst(BURST)
            left = _closing_member(load.bootstrap, load.group, load.topic, load.ledger, timeout_s)
            before = load.share_state(timeout_s + lease_ms / 1000)
            log(f"members closed, {load.settled_count()} records settled, {left} left unacknowledged by a member "
                f"that closed; share-partition state: {before}")
            env.job.stop()
            if spare is not None:
                spare.stop()
                spare = None
            env.job = JobProcess({**env.props, "checkpoint.location": str(env.workdir / "rebuilt-checkpoint")},
                                 env.workdir / "rebuilt", env.job.spark_conf, extra_args=["--rebuild-from-records"])
            env.job.start()
            env.job.wait_running(timeout_s)
            after = load.share_state(timeout_s + lease_ms / 1000)
            log(f"rebuilt from the records topic: {after}")
            rebuilt_checks["a rebuild from the records topic holds the same share-partition state"] = before == after
            # the closing member's records were released durably at its close: AVAILABLE, their count kept
            rebuilt_checks["a closed member's unacknowledged records are in the durable state, available again"] = \
                left == 0 or any(state == 0 and count >= 1 for _, _, batches in before.values()
                                 for _, _, state, count in batches)
            notes.append(f"share-partition state (start offset, state epoch, batches (first, last, state, count)) "
                         f"before the rebuild {before}, after {after}")
            load.start_members()
        settled = _until(load.all_settled, timeout_s + lease_ms / 1000)
        time.sleep(5)  # a record whose unanswered acknowledgement was not made durable comes again meanwhile
        if not (settled and _until(load.all_settled, timeout_s)):
            log(f"warning: not every record settled before the deadline: {load.unsettled()}")
        checks, more = load.checks()
        checks.update(rebuilt_checks)
        if takeovers:
            checks["the standby, not a restart, took over at each driver kill"] = all(takeovers)
        notes += more
        for note in notes:
            log(note)
        for name, ok in checks.items():
            log(f"{'PASS' if ok else 'FAIL'} {name}")
        return checks, notes
    finally:
        if load is not None:
            load.close()
        if spare is not None:
            spare.stop()
        env.close()


def _until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.drills.share_group", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kill", default="driver,gateway", help="what to kill -9, in order: driver, gateway")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--records", type=int, default=600)
    parser.add_argument("--lease-ms", type=int, default=10_000, help="share.partition.lease.ms of the job")
    parser.add_argument("--standby", action="store_true",
                        help="run a standby driver on the same checkpoint, which takes over at each driver kill")
    parser.add_argument("--rebuild", action="store_true",
                        help="after the kills, rebuild the query from the records topic on a new checkpoint and "
                             "compare its share-partition state with the state before")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--bootstrap-servers", help="an existing broker (default: an embedded tansu)")
    args = parser.parse_args(argv)
    kills = [k for k in args.kill.split(",") if k]
    if any(k not in ("driver", "gateway") for k in kills):
        parser.error("--kill takes driver and gateway")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="drill-share-"))
    checks, _ = run(kills, args.members, args.partitions, args.records, args.lease_ms, workdir,
                    args.bootstrap_servers, standby=args.standby, rebuild=args.rebuild)
    ok = all(checks.values())
    print("share group drill: " + ("PASS" if ok else "FAIL"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
