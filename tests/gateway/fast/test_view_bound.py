"""The view bound follows the query's pace (docs/gateway.md, "Fresh or not"; issue 37), against the real query.

A request written at t is covered by the mark the query writes once the batch that applied it has committed, so the
views are up to two batch times old before a mark is read. Here the query plans a batch every 3 s (its trigger
interval, as a loaded machine's batches), longer than the 2 s `--view-bound-ms`: a gateway whose bound may follow
the query's pace answers a member's commits (one every 100 ms) from the views, and a gateway whose bound is
fixed at 2 s, in front of the same query, sends some of them to the coordinator. Side by side: on a loaded
machine a batch slower than the recent ones may pass the followed bound too, so the two are compared.
"""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from gateway.front.process import start_gateway
from tests.gateway.conftest import GATEWAY_PROPERTIES
from tests.gateway.raw import RawMember
from tests.support.coordinator import new_run

pytestmark = [pytest.mark.spark, pytest.mark.broker]

TRIGGER_MS = 3000
COMMITTING_S = 8.0
"""Commits for this long: past two trigger intervals, so a fixed 2 s bound passes at least once (for at least the
time between two triggers less 2 s, longer than `COMMIT_EVERY_S`)."""
COMMIT_EVERY_S = 0.1
"""A committer's pace (back to back, a gateway answering from the views writes thousands, slow to read back)."""


def commits_answered_from_views(run, group: str) -> list[bool]:
    """For each of the group's OffsetCommits on the requests topic, in order: whether the gateway answered it
    from the view (the record carries the answer it gave)."""
    return [("answered" in body) for body in (json.loads(r.value) for r in run.read(run.topics.requests)
                                               if r.key == group.encode())
            if body["api"] == "OffsetCommit"]


def commit_for_a_while(member: RawMember) -> int:
    """Commits offsets 1, 2, ... for `COMMITTING_S`, each acknowledged; the last one is what the group has."""
    offset, until = 0, time.monotonic() + COMMITTING_S
    while time.monotonic() < until:
        offset += 1
        assert member.commit({("t", 0): offset}) == {("t", 0): 0}
        time.sleep(COMMIT_EVERY_S)
    assert member.committed("t", [0]) == {0: offset}
    return offset


def test_a_query_slower_than_the_bound_has_commits_answered_from_the_views(spark, broker, tmp_path):
    run = new_run(spark, broker, tmp_path, {**GATEWAY_PROPERTIES, "trigger.interval.ms": str(TRIGGER_MS)})
    props = {k: v for k, v in run.props.items() if k.startswith(("topic.", "group."))}
    gateways = {}
    try:
        gateways["following"] = start_gateway(broker, props, args=["--view-bound-max-ms", "20000"])
        gateways["fixed"] = start_gateway(broker, props, args=["--view-bound-max-ms", "2000"])
        groups = {name: f"pace-{name}-{uuid.uuid4().hex[:8]}" for name in gateways}
        members = {name: RawMember(gateway.bootstrap_servers, groups[name]) for name, gateway in gateways.items()}
        try:
            for member in members.values():
                member.join_and_sync()  # a few batches: the follower has read the query's marks meanwhile
            # Side by side, so that both gateways see the same batches: a loaded machine's slow batch may pass
            # even the followed bound, and then both send commits to the coordinator.
            with ThreadPoolExecutor(len(members)) as pool:
                offsets = dict(zip(members, pool.map(commit_for_a_while, members.values())))
        finally:
            for member in members.values():
                member.close()
        answered = {name: commits_answered_from_views(run, group) for name, group in groups.items()}
        assert {name: len(answers) for name, answers in answered.items()} == offsets, answered
        sent = {name: answers.count(False) / len(answers) for name, answers in answered.items()}  # to the coordinator
        assert sent["fixed"] > 0, answered["fixed"]
        # The fixed bound passes for the time between two triggers less 2 s, every trigger; the followed one only
        # where a batch outlasts 2.5 recent paces.
        assert sent["following"] * 4 <= sent["fixed"], (sent, answered)
    finally:
        for gateway in gateways.values():
            gateway.stop()
        run.close()
