"""What the client and admin end-to-end tests share: one coordinator query, consumer workers, waits.

Starting Spark and its first micro-batch dominates the cost of an end-to-end test, so every test of
tests/client/test_e2e.py and tests/admin/test_cli_e2e.py runs against one coordinator query (the `run` fixture;
each test uses its own groups and topics). Session timeouts are 10 s: shorter ones get members expired when a
micro-batch runs late on a loaded machine (the core fires timers at batch time, before the batch's heartbeats).
No timing assertions: every wait is "until the condition holds", with a generous ceiling,
because micro-batches take seconds on a loaded 2-core machine.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Callable

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from client import protocol
from client.consumer import GroupConsumer
from client.transport import KafkaTransport
from tests.support.listener import Recorder

SESSION_MS = 10_000
CONSUMER_OPTS = dict(
    session_timeout_ms=SESSION_MS,
    heartbeat_interval_ms=1000,
    max_poll_interval_ms=20_000,
    auto_offset_reset="earliest",
    auto_commit_interval_ms=300,
    metadata_max_age_ms=500,
    request_timeout_ms=30_000,
)
WAIT_S = 180.0

_shared: dict[str, object] = {}


@pytest.fixture(scope="session")
def run(spark, broker, tmp_path_factory):
    """The coordinator query, started once per session whichever module asks first, and warmed up with one
    answered request so Spark's first micro-batch is not charged to any test's waits."""
    from tests.support.coordinator import new_run

    if "run" not in _shared:
        r = new_run(spark, broker, tmp_path_factory.mktemp("groups-e2e"), {"group.min.session.timeout.ms": "1000"})
        transport = KafkaTransport(r.bootstrap, r.topics.requests, r.topics.responses)
        try:
            transport.request("warm-up", protocol.describe_group("warm-up"), timeout_s=300)
        finally:
            transport.close()
        _shared["run"] = r
    yield _shared["run"]
    r = _shared.pop("run", None)
    if r is not None:
        r.close()  # type: ignore[attr-defined]


def wait_until(predicate: Callable[[], bool], timeout_s: float = WAIT_S, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout_s} s")
        time.sleep(0.1)


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"data-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()
    return name


def produce(bootstrap: str, topic: str, partitions: int, count: int, tag: str) -> set[str]:
    """`count` records spread round-robin over the partitions; returns their values."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    values = set()
    for i in range(count):
        value = f"{tag}-{i}"
        producer.send(topic, value=value.encode(), partition=i % partitions)
        values.add(value)
    producer.flush()
    producer.close()
    return values


class Worker(Recorder):
    """One application: a GroupConsumer polled in a thread, remembering (generation, value) of each record
    and every rebalance callback (it is its own listener)."""

    def __init__(self, run, topic: str, group: str, name: str, **opts) -> None:
        self.name = name
        super().__init__()
        self.seen: list[tuple[int, str]] = []
        self.error: BaseException | None = None
        self.consumer = GroupConsumer(
            bootstrap_servers=run.bootstrap, group_id=group, client_id=name,
            control_topic=run.topics.requests, response_topic=run.topics.responses, **{**CONSUMER_OPTS, **opts},
        )
        self.consumer.subscribe([topic], listener=self)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self.consumer.poll(timeout_ms=200)
                generation = self.consumer.member.generation.generation_id
                for records in batch.values():
                    self.seen.extend((generation, r.value.decode()) for r in records)
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    @property
    def generation(self) -> int:
        return self.consumer.member.generation.generation_id

    def assignment(self) -> set:
        return self.consumer.assignment()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.consumer.close()


def consumed(workers) -> list[tuple[int, str]]:
    return [s for w in workers for s in w.seen]


def settled(workers, partitions: int) -> bool:
    """Every partition owned by exactly one worker, all at one generation, nobody about to re-join."""
    owned = [tp.partition for w in workers for tp in w.assignment()]
    gens = {w.generation for w in workers}
    return sorted(owned) == list(range(partitions)) and len(gens) == 1 and not any(
        w.consumer.member.rejoin_needed for w in workers
    )


def assert_no_duplicates_within_a_generation(workers) -> None:
    twice = [k for k, n in Counter(consumed(workers)).items() if n > 1]
    assert not twice, f"consumed twice within a generation: {twice[:5]}"
