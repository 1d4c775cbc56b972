"""Drill: share consumers (KIP-932) through a gateway while the driver or the gateway holding the share-partitions
is killed -9; at the end every record is settled once, none lost, none delivered past the delivery-count limit.

    python -m deploy.drills.share_group [--kill driver,gateway] [--members 3] [--partitions 2] [--records 600]
        [--lease-ms 10000] [--workdir DIR] [--bootstrap-servers HOST:PORT]

The job (`coordinator run`, its own process group) and one gateway in front of its topics (a process of its own, on
a fixed port so that it can come back where the consumers look for it) serve a share group of `--members`
unmodified confluent-kafka ShareConsumers in explicit mode, threads of this process. A producer fills a topic
while they consume; each member accepts every record but those whose value ends in `!` (rejected on purpose), and
acknowledges them with `commit_sync` after each poll. For each kill in `--kill`, once the members have settled some
records:

- `driver`: the job's process group gets SIGKILL and the job is started again on its checkpoint: the gateway keeps
  serving the share-partitions it holds under their leases; the new driver restarts every lease at its first batch;
- `gateway`: the gateway gets SIGKILL and a new one is started on the same port (a new holder): the killed one's
  share-partitions are free once their lease (`--lease-ms`) ends, and the new gateway starts from every transition
  the old one appended before it answered; records it had acquired and not settled come back AVAILABLE.

Then production stops and the drill waits until every record produced is settled. Checks:
- none lost: every record produced was accepted, or rejected on purpose;
- none settled twice: no record delivered again after an acknowledgement of it was answered without an error;
- the delivery-count limit held: no record delivered more than `share.delivery.count.limit` times, and no
  delivery's count below the one before (a record acquired, not settled, by a holder that died comes back with its
  durable count, as on a Kafka leader change: an acquisition is never stored).
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

from deploy.drills.harness import Environment, log

DELIVERY_LIMIT = 5


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
    unanswered: set[bytes] = field(default_factory=set)
    """Values whose last acknowledgement was answered with an error and that were not delivered since."""
    lock: threading.Lock = field(default_factory=threading.Lock)


def _member(bootstrap: str, group: str, topic: str, ledger: Ledger, stop: threading.Event) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

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
            with ledger.lock:
                for m in messages:
                    value = m.value()
                    if value in ledger.settled:
                        ledger.redelivered_after_settling.append(value)
                    ledger.deliveries[value].append(m.delivery_count())
                    ledger.where[value] = (m.partition(), m.offset())
                    ledger.unanswered.discard(value)
                    outcome[value] = "rejected" if value.endswith(b"!") else "accepted"
            for m in messages:
                consumer.acknowledge(m, AcknowledgeType.REJECT if m.value().endswith(b"!") else AcknowledgeType.ACCEPT)
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
                    else:
                        ledger.settled[m.value()] = outcome[m.value()]
    finally:
        consumer.close()


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
        self.produced: list[bytes] = []
        self._stop_members, self._stop_producing = threading.Event(), threading.Event()
        self._threads = [threading.Thread(target=_member, args=(self.bootstrap, self.group, self.topic, self.ledger,
                                                                 self._stop_members), daemon=True)
                         for _ in range(members)]
        self._producer = threading.Thread(target=self._produce, daemon=True)
        for thread in self._threads + [self._producer]:
            thread.start()

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
            value = b"r%06d%s" % (i, b"!" if i % 17 == 0 else b"")
            producer.produce(self.topic, value)
            self.produced.append(value)
            i += 1
            producer.poll(0)
            time.sleep(0.02)
        producer.flush(60)
        self._stop_producing.set()

    limit = 600

    def settled_count(self) -> int:
        with self.ledger.lock:
            return len(self.ledger.settled)

    def all_settled(self) -> bool:
        with self.ledger.lock:
            # records whose acknowledgement's answer was lost may be settled durably: `checks` asks the coordinator
            return self._stop_producing.is_set() and \
                set(self.produced) <= set(self.ledger.settled) | self.ledger.unanswered

    def close(self) -> None:
        self._stop_producing.set()
        self._stop_members.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self.gateway.stop()

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
                 f"answers), {redelivered} delivered more than once; start offsets {starts}"]
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
        bootstrap: str | None = None, timeout_s: float = 300.0) -> bool:
    env = Environment(workdir, bootstrap, props={"share.partition.lease.ms": str(lease_ms)})
    load = None
    try:
        env.job.start()
        env.job.wait_running(timeout_s)
        log(f"job running on {env.bootstrap}")
        ShareLoad.limit = records
        load = ShareLoad(env, members, partitions, workdir)
        log(f"{members} share consumers on {load.topic} through {load.bootstrap}")
        for i, kill in enumerate(kills):
            target = load.settled_count() + max(records // (len(kills) + 2), 1)
            _until(lambda: load.settled_count() >= target, timeout_s)
            log(f"kill {i + 1}/{len(kills)}: the {kill}, {load.settled_count()} records settled")
            killed_at = time.monotonic()
            if kill == "driver":
                env.job.kill()
                env.job.start()
            else:
                load.kill_gateway()
            before = load.settled_count()
            if _until(lambda: load.settled_count() > before or load.all_settled(), timeout_s + lease_ms / 1000):
                log(f"settling again {time.monotonic() - killed_at:.1f} s after the kill")
        settled = _until(load.all_settled, timeout_s + lease_ms / 1000)
        time.sleep(5)  # a record whose unanswered acknowledgement was not made durable comes again meanwhile
        if not (settled and _until(load.all_settled, timeout_s)):
            log("warning: not every record settled before the deadline")
        checks, notes = load.checks()
        for note in notes:
            log(note)
        for name, ok in checks.items():
            log(f"{'PASS' if ok else 'FAIL'} {name}")
        return all(checks.values())
    finally:
        if load is not None:
            load.close()
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
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--bootstrap-servers", help="an existing broker (default: an embedded tansu)")
    args = parser.parse_args(argv)
    kills = [k for k in args.kill.split(",") if k]
    if any(k not in ("driver", "gateway") for k in kills):
        parser.error("--kill takes driver and gateway")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="drill-share-"))
    ok = run(kills, args.members, args.partitions, args.records, args.lease_ms, workdir, args.bootstrap_servers)
    print("share group drill: " + ("PASS" if ok else "FAIL"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
