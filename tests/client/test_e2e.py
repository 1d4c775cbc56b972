"""Real consumers consuming through the real coordinator: the tansu broker, the Spark job, kafka-python fetching.

Fixtures and helpers are in tests/client/e2e_support.py (one coordinator query for all end-to-end tests).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from state.api import PENDING_MEMBER, pending_member_id
from tests.client.e2e_support import (  # noqa: F401 - `run` is a fixture
    CONSUMER_OPTS,
    WAIT_S,
    Worker,
    assert_no_duplicates_within_a_generation,
    consumed,
    new_topic,
    produce,
    run,
    settled,
    wait_until,
)

pytestmark = [pytest.mark.spark, pytest.mark.broker]


@pytest.mark.parametrize(
    "n, strategy, churn",
    [(1, "range", False), (3, "range", True), (10, "cooperative-sticky", True)],
    ids=["1-range", "3-range-join-leave", "10-cooperative-sticky-join"],
)
def test_n_consumers_consume_every_message_once_per_generation(run, n, strategy, churn):
    """M = 12 partitions. With churn, one consumer joins (and, for eager range, then the first one leaves);
    after each rebalance consumption continues from the committed offsets, so every message is still consumed
    and none twice within a generation."""
    partitions = 12
    topic = new_topic(run.bootstrap, partitions)
    group = f"g-{n}-{uuid.uuid4().hex[:6]}"
    opts = dict(partition_assignment_strategy=(strategy,))
    expected = produce(run.bootstrap, topic, partitions, 240, "a")
    workers = [Worker(run, topic, group, f"c{i}", **opts) for i in range(n)]
    everyone = list(workers)
    try:
        wait_until(lambda: settled(workers, partitions), what=f"{n} consumers settled")
        # Each member's id is the one its member-id round derived from the PendingMember request it appended.
        named = {pending_member_id(r["group_id"], r["client_id"], r["request_id"])
                 for r in map(json.loads, (record.value for record in run.read(run.topics.requests)))
                 if r.get("api") == PENDING_MEMBER and r.get("group_id") == group}
        assert {w.consumer.member.generation.member_id for w in workers} <= named
        wait_until(lambda: {v for _, v in consumed(everyone)} >= expected, what="first batch consumed")
        if churn:
            joiner = Worker(run, topic, group, f"c{n}", **opts)
            workers.append(joiner)
            everyone.append(joiner)
            wait_until(lambda: settled(workers, partitions) and joiner.assignment(), what="joiner assigned")
            expected |= produce(run.bootstrap, topic, partitions, 120, "b")
            if strategy == "range":
                workers.pop(0).close()
                wait_until(lambda: settled(workers, partitions), what="rebalanced after a leave")
                expected |= produce(run.bootstrap, topic, partitions, 120, "c")
            wait_until(lambda: {v for _, v in consumed(everyone)} >= expected, what="every message consumed")

        assert all(w.error is None for w in everyone), [w.error for w in everyone]
        assert {v for _, v in consumed(everyone)} == expected
        assert_no_duplicates_within_a_generation(everyone)
        if strategy == "cooperative-sticky":
            # A partition a member keeps across a rebalance is never revoked, so its fetching never stops;
            # and nobody loses partitions in a clean join or leave.
            for w in everyone:
                owned: set = set()
                for kind, parts in w.events:
                    assert kind != "lost", f"{w.name} lost partitions in a clean rebalance"
                    if kind == "revoked":
                        assert parts <= owned
                        owned -= parts
                    else:
                        assert not (parts & owned), f"{w.name} was given partitions it already had"
                        owned |= parts
    finally:
        for w in workers:
            w.close()


VICTIM = """
import json, sys
from client.consumer import GroupConsumer
topic, group, bootstrap, requests, responses = sys.argv[1:6]
c = GroupConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id="victim",
                  control_topic=requests, response_topic=responses, **json.loads(sys.argv[6]))
while True:
    c.poll(timeout_ms=200)
    print(json.dumps(sorted(tp.partition for tp in c.assignment())), flush=True)
"""


def test_a_killed_consumer_loses_its_partitions_after_its_session_timeout(run):
    partitions = 6
    topic = new_topic(run.bootstrap, partitions)
    group = f"g-kill-{uuid.uuid4().hex[:6]}"
    workers = [Worker(run, topic, group, f"c{i}") for i in range(2)]
    victim = subprocess.Popen(
        [sys.executable, "-c", VICTIM, topic, group, run.bootstrap, run.topics.requests, run.topics.responses,
         json.dumps(CONSUMER_OPTS)],
        stdout=subprocess.PIPE, text=True, cwd=os.getcwd(),
    )
    try:
        owned: list[int] = []
        deadline = time.monotonic() + WAIT_S
        while not owned or len(owned) + sum(len(w.assignment()) for w in workers) != partitions:
            line = victim.stdout.readline()
            assert line and time.monotonic() < deadline, "victim never got partitions"
            owned = json.loads(line)
        os.kill(victim.pid, signal.SIGKILL)  # no LeaveGroup: only the session timeout can tell
        victim.wait()
        wait_until(lambda: settled(workers, partitions), what="survivors took the victim's partitions")
        taken = {tp.partition for w in workers for tp in w.assignment()}
        assert set(owned) <= taken
    finally:
        if victim.poll() is None:
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait()
        for w in workers:
            w.close()


def test_a_static_member_restarted_within_its_session_gets_its_partitions_back_without_a_rebalance(run):
    partitions = 6
    topic = new_topic(run.bootstrap, partitions)
    group = f"g-static-{uuid.uuid4().hex[:6]}"
    a = Worker(run, topic, group, "a", group_instance_id="inst-a", session_timeout_ms=30_000)
    b = Worker(run, topic, group, "b", group_instance_id="inst-b", session_timeout_ms=30_000)
    b2 = None
    try:
        def callbacks_done(w: Worker) -> bool:  # the assignment is visible just before its callback runs
            return bool(w.events) and w.events[-1] == ("assigned", frozenset(w.assignment()))

        wait_until(lambda: settled([a, b], partitions) and callbacks_done(a) and callbacks_done(b), what="static pair")
        generation = a.consumer.member.generation.generation_id
        before = b.assignment()
        events_a = list(a.events)
        b.close()  # a static member does not send LeaveGroup
        b2 = Worker(run, topic, group, "b", group_instance_id="inst-b", session_timeout_ms=30_000)
        wait_until(lambda: b2.assignment() == before, what="restarted member got its partitions back")
        assert b2.consumer.member.generation.generation_id == generation
        time.sleep(1.0)  # a few heartbeats of `a`: a rebalance would show up as REBALANCE_IN_PROGRESS
        assert a.events == events_a and a.consumer.member.generation.generation_id == generation
    finally:
        for w in (a, b2):
            if w is not None:
                w.close()
