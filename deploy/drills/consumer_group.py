"""A KIP-848 consumer group under a drill: unmodified librdkafka consumers (`group.protocol=consumer`) through a
gateway in front of the job's topics, consuming a topic that a producer keeps filling, while the drill kills the
driver.

The consumers run as threads of the drill's process (one clock for every callback), commit asynchronously, one
commit at a time every 2 s (so that a coordinator that is down never stops them from consuming: commits wait,
fetches do not; and librdkafka, which completes a revocation only when no commit is in flight, can complete it) and log, with `time.monotonic()`, every partition they are given or give up and every commit the
coordinator acknowledged. `checks(killed_at)` turns that log into the drill's verdict lines:

- the members keep their partitions: after the group formed, no partition was revoked or lost, and each member owns
  at the end what it owned at the kill (Kafka's coordinator failover: the group loads with its assignments and
  every member's session restarts);
- nobody stops consuming: every member consumed after the kill, and its commits were acknowledged again after it
  (by the driver that took over or restarted);
- no partition is owned by two members at once: the members' ownership intervals of each partition, from the
  assign to the revoke or lost callbacks, never overlap.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

PARTITIONS = 6
COMMIT_INTERVAL_S = 2.0


@dataclass
class ConsumerLog:
    """What one member did, with monotonic times."""

    name: str
    events: list[tuple[float, str, frozenset[int]]] = field(default_factory=list)
    """(time, assign | revoke | lost, partitions) from its rebalance callbacks."""
    consumed: list[float] = field(default_factory=list)
    """When each poll that returned records returned."""
    committed: list[float] = field(default_factory=list)
    """When each commit the coordinator acknowledged without an error was reported."""
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def owned(self, until: float = float("inf")) -> frozenset[int]:
        owned: set[int] = set()
        with self.lock:
            for at, kind, partitions in self.events:
                if at > until:
                    break
                owned = owned | partitions if kind == "assign" else owned - partitions
        return frozenset(owned)

    def intervals(self, end: float) -> dict[int, list[tuple[float, float]]]:
        """partition -> [(from, to)] while this member owned it."""
        since: dict[int, float] = {}
        out: dict[int, list[tuple[float, float]]] = {}
        with self.lock:
            for at, kind, partitions in self.events:
                for p in partitions:
                    if kind == "assign":
                        since.setdefault(p, at)
                    elif p in since:
                        out.setdefault(p, []).append((since.pop(p), at))
        for p, start in since.items():
            out.setdefault(p, []).append((start, end))
        return out


def _consume(bootstrap: str, topic: str, group: str, log: ConsumerLog, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    in_flight = threading.Event()

    def commit_done(err, partitions) -> None:
        in_flight.clear()
        if err is None and not any(p.error for p in partitions or ()):
            with log.lock:
                log.committed.append(time.monotonic())

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "client.id": log.name, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "on_commit": commit_done})

    def callback(kind: str) -> Callable:
        def on_change(_consumer, partitions) -> None:
            with log.lock:
                log.events.append((time.monotonic(), kind, frozenset(p.partition for p in partitions)))
        return on_change

    consumer.subscribe([topic], on_assign=callback("assign"), on_revoke=callback("revoke"),
                       on_lost=callback("lost"))
    next_commit = 0.0
    try:
        while not stop.is_set():
            messages = consumer.consume(500, 0.2)
            if any(m.error() is None for m in messages):
                with log.lock:
                    log.consumed.append(time.monotonic())
            # One commit at a time, at most every COMMIT_INTERVAL_S: librdkafka finishes revoking a partition only
            # once no commit is in flight, and a commit waits for a micro-batch.
            if time.monotonic() >= next_commit and not in_flight.is_set():
                next_commit = time.monotonic() + COMMIT_INTERVAL_S
                in_flight.set()
                try:
                    consumer.commit(asynchronous=True)
                except Exception as exc:  # noqa: BLE001 - nothing to commit yet: the next one covers it
                    in_flight.clear()
                    log.errors.append(str(exc))
    finally:
        consumer.close()


class ConsumerGroupLoad:
    """A gateway in front of the job's topics, a topic being produced to, and `members` consumers in one group."""

    def __init__(self, bootstrap: str, job_props: Mapping[str, str], workdir: Path, members: int = 3) -> None:
        from kafka import KafkaProducer
        from kafka.admin import KafkaAdminClient, NewTopic

        from gateway.front.process import start_gateway

        self.topic = f"drill-cp-{uuid.uuid4().hex[:8]}"
        self.group = f"{self.topic}-group"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(self.topic, PARTITIONS, 1)])
        finally:
            admin.close()
        self.gateway = start_gateway(bootstrap, {k: v for k, v in job_props.items()
                                                 if k.startswith(("topic.", "group."))},
                                     log_path=Path(workdir) / "gateway.log")
        self._stop = threading.Event()
        self._producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
        self.logs = [ConsumerLog(f"member-{i}") for i in range(members)]
        self._threads = [threading.Thread(target=self._produce, daemon=True)]
        self._threads += [threading.Thread(target=_consume, args=(self.gateway.bootstrap_servers, self.topic,
                                                                  self.group, log, self._stop), daemon=True)
                          for log in self.logs]
        for thread in self._threads:
            thread.start()
        self.formed_at: float | None = None

    def _produce(self) -> None:
        while not self._stop.is_set():
            for p in range(PARTITIONS):
                self._producer.send(self.topic, value=b"x", partition=p)
            time.sleep(0.05)

    def balanced(self) -> bool:
        """Every member owns something, and every partition is owned exactly once."""
        owned = [log.owned() for log in self.logs]
        every = [p for o in owned for p in o]
        return all(owned) and len(every) == len(set(every)) == PARTITIONS

    def mark_formed(self) -> None:
        self.formed_at = time.monotonic()

    def checks(self, killed_at: list[float]) -> tuple[dict[str, bool], list[str]]:
        now = time.monotonic()
        formed = self.formed_at if self.formed_at is not None else now
        kill = killed_at[0] if killed_at else now
        last_kill = killed_at[-1] if killed_at else now
        moved = [f"{log.name}: {kind} {sorted(parts)} {at - formed:+.1f} s after forming"
                 for log in self.logs for at, kind, parts in log.events if at > formed]
        kept = [log.name for log in self.logs if log.owned() != log.owned(kill)]
        idle = [log.name for log in self.logs if not any(t > last_kill for t in log.consumed)]
        uncommitted = [log.name for log in self.logs if not any(t > last_kill for t in log.committed)]
        overlaps = []
        owners: dict[int, list[tuple[float, float, str]]] = {}
        for log in self.logs:
            for p, spans in log.intervals(now).items():
                owners.setdefault(p, []).extend((a, b, log.name) for a, b in spans)
        for p, spans in sorted(owners.items()):
            spans.sort()
            overlaps += [f"partition {p}: {x[2]} and {y[2]}" for x, y in zip(spans, spans[1:]) if y[0] < x[1]]
        checks = {
            "consumer group formed": self.formed_at is not None,
            "consumer group: no partition moved after forming": not moved and not kept,
            "consumer group: every member consumed after the kill": not idle,
            "consumer group: every member's commits acknowledged after the kill": not uncommitted,
            "consumer group: no partition owned by two members at once": not overlaps,
        }
        notes = moved[:10] + [f"{n}: owns another set than at the kill" for n in kept]
        notes += [f"{n}: consumed nothing after the kill" for n in idle]
        notes += [f"{n}: no commit acknowledged after the kill" for n in uncommitted] + overlaps[:10]
        notes += [f"{log.name}: owns {sorted(log.owned())}, {len(log.consumed)} polls with records, "
                  f"{len(log.committed)} commits acknowledged" for log in self.logs]
        return checks, notes

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._producer.close()
        self.gateway.stop()
