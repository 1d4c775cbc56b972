"""A short soak (issue 37): minutes' worth of heartbeats and commits at a high rate, against the session's shared
coordinator query. What a stall under sustained load broke (members expired while heartbeating, commits left
unanswered, the query stopped) must not happen; how fast it went is `bench.soak`'s to say, not asserted here.

Members heartbeat every 100 ms and auto-commit every 50 ms (client defaults: 3 s and 5 s, so 30x the rate of
ordinary members) while two consumers commit synchronously back to back."""

from __future__ import annotations

import threading
import time
import uuid

from client.consumer import GroupConsumer
from client.errors import GroupError, RequestTimeoutError
from tests.client.e2e_support import (  # noqa: F401 - `run` is a fixture
    CONSUMER_OPTS,
    Worker,
    new_topic,
    produce,
    run,
    settled,
    wait_until,
)

GROUPS, MEMBERS, PARTITIONS = 3, 3, 4
LOAD_S = 15.0
FAST = dict(heartbeat_interval_ms=100, auto_commit_interval_ms=50)


class Committer:
    """A consumer committing its position synchronously, over and over; counts commits asked and answered."""

    def __init__(self, run, topic: str, name: str) -> None:
        self.consumer = GroupConsumer(
            bootstrap_servers=run.bootstrap, group_id=f"{name}-{uuid.uuid4().hex[:6]}", client_id=name,
            control_topic=run.topics.requests, response_topic=run.topics.responses,
            **{**CONSUMER_OPTS, "enable_auto_commit": False})
        self.consumer.subscribe([topic])
        self.asked = self.answered = 0
        self.failures: list[BaseException] = []

    def commit_until(self, stop: threading.Event) -> None:
        while not self.consumer.assignment():
            self.consumer.poll(timeout_ms=200)
        while not stop.is_set():
            self.consumer.poll(timeout_ms=0)
            self.asked += 1
            try:
                self.consumer.commit()
                self.answered += 1
            except (GroupError, RequestTimeoutError) as exc:
                self.failures.append(exc)


def test_a_short_soak_expires_no_heartbeating_member_answers_every_commit_and_leaves_the_query_running(run):
    topic = new_topic(run.bootstrap, PARTITIONS)
    produce(run.bootstrap, topic, PARTITIONS, 400, "soak")
    names = [f"soak-{g}-{uuid.uuid4().hex[:6]}" for g in range(GROUPS)]
    groups = [[Worker(run, topic, name, f"{name}-{i}", **FAST) for i in range(MEMBERS)] for name in names]
    committers = [Committer(run, topic, f"soak-committer-{i}") for i in range(2)]
    stop = threading.Event()
    threads = [threading.Thread(target=c.commit_until, args=(stop,), daemon=True) for c in committers]
    try:
        wait_until(lambda: all(settled(workers, PARTITIONS) for workers in groups), what="every group settled")
        formed = {w.name: (w.consumer.member.generation.member_id, w.generation) for ws in groups for w in ws}
        for thread in threads:
            thread.start()
        time.sleep(LOAD_S)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)

        workers = [w for ws in groups for w in ws]
        assert [w.error for w in workers if w.error] == []
        # A member that expired re-joins with a new member id (or, losing its partitions, a new generation).
        assert {w.name: (w.consumer.member.generation.member_id, w.generation) for w in workers} == formed
        assert [w.name for w in workers if w.of("lost")] == []
        assert all(not t.is_alive() for t in threads)
        assert [(c.asked, c.failures) for c in committers] == [(c.answered, []) for c in committers]
        assert all(c.answered > 0 for c in committers)
        assert run.query.isActive and run.query.exception() is None
    finally:
        stop.set()
        for workers in groups:
            for w in workers:
                w.close()
        for c in committers:
            c.consumer.close()
