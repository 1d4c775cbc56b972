"""A classic group of 5,000 members through the real query (issue 35), its members simulated clients on the control
topic (`bench.parts.member_fleet`): it forms, commits its 50,000 partitions, loses one member to its session's
expiry (the deadline of one member among 5,000, fired by the query's timers with no request of the group in flight),
rebalances and commits again under the new generation."""

from __future__ import annotations

import json
import time

from bench.parts.member_fleet import REBALANCE_IN_PROGRESS, Fleet
from tests.support.kafka import read_topic

MEMBERS = 5000
SHORT_SESSION_MS = 20_000
"""The expiring member's session: long enough that the group forms around it on a loaded machine."""


class RunTransport:
    """`Fleet`'s transport over a test's `CoordinatorRun`."""

    def __init__(self, run) -> None:
        self.run = run

    def exchange(self, requests, answered, timeout_s):
        self.run.send(*requests)
        return {rid: self.run.responses.wait_for(rid, timeout_s) for rid in answered}


def expired(run) -> int:
    return sum(p.observedMetrics["coordinator"]["members_expired"] for p in run.query.recentProgress
               if "coordinator" in p.observedMetrics)


def test_a_5000_member_group_forms_commits_expires_one_member_on_its_deadline_and_rebalances(coordinator):
    run = coordinator({"topic.metadata.refresh.interval.ms": "0", "group.max.session.timeout.ms": "1800000"})
    fleet = Fleet(RunTransport(run), "big", MEMBERS, MEMBERS * 10, session_timeout_ms=1_800_000,
                  sessions={MEMBERS - 1: SHORT_SESSION_MS})
    formed_from_ms = int(time.time() * 1000)  # the short session starts after this (at its join, sync or commit)
    fleet.form(timeout_s=600)
    assert len(fleet.ids) == MEMBERS and sorted(p for ps in fleet.assigned.values() for p in ps) == list(
        range(MEMBERS * 10))
    fleet.commit_all(1, timeout_s=600)
    short = fleet.ids[MEMBERS - 1]

    # No request of the group from now on: only its deadline can call it.
    run.wait(lambda: expired(run) >= 1, timeout_s=300)
    assert expired(run) == 1
    records = [r for r in read_topic(run.bootstrap, run.topics.records, timeout_s=60)
               if r.key == b'{"version":2,"group":"big"}' and r.value is not None]
    last = records[-1]
    assert json.loads(last.value)["directory"] == {"group_state": "PreparingRebalance", "protocol_type": "consumer",
                                                    "member_count": MEMBERS - 1}
    # not before its session could have run out (the record's time: the job's clock when it produced it)
    assert last.timestamp >= formed_from_ms + SHORT_SESSION_MS

    # The 4,999 others hear of the rebalance, join again and sync; then they commit under the new generation.
    staying = [m for m in fleet.ids if m != short]
    told = fleet._exchange([fleet.heartbeat(m) for m in staying], 600)
    assert {a["error_code"] for a in told} == {REBALANCE_IN_PROGRESS}
    generation = fleet.generation
    fleet._join_and_sync(staying, 600)
    assert fleet.generation == generation + 1 and short not in fleet.assigned
    assert sorted(p for ps in fleet.assigned.values() for p in ps) == list(range(MEMBERS * 10))
    fleet.commit_all(2, timeout_s=600)
    member = staying[1234]
    fetched = run.request({"api": "OffsetFetch", "group_id": "big", "member_id": member,
                           "topics": [{"name": "orders", "partition_indexes": list(fleet.assigned[member])}]})
    partitions = fetched["topics"][0]["partitions"]
    assert [(p["partition_index"], p["committed_offset"]) for p in partitions] == [
        (p, 2) for p in fleet.assigned[member]]
    assert expired(run) == 1  # nobody else's session ran out
