"""The coordinator job end to end: requests in through the control topic, responses and records out through theirs,
with a real tansu broker and a real local Spark query (fixtures in tests/conftest.py), for each state operator. No
timing assertions: waits are generous upper bounds, never expectations."""

from __future__ import annotations

import json
import time

import pytest

from state.api import MARK_KEY
from state.errors import Errors
from streaming.query import OPERATORS
from tests.support import protocol as p
from tests.support.coordinator import files_not_sparks

pytestmark = [pytest.mark.spark, pytest.mark.broker]


@pytest.fixture(params=OPERATORS)
def coordinator(request, coordinator):
    """The shared fixture, with `state.operator` set to each operator in turn."""

    def start(props: dict[str, str] | None = None, **kw):
        return coordinator({"state.operator": request.param, **(props or {})}, **kw)

    return start


def form_group(run, group_id: str, session_timeout_ms: int = 120000) -> tuple[str, int]:
    """One member through the member-id handshake, join and sync; returns (member_id, generation).

    Session timeouts default to 120 s: a pending member expires after its session timeout, and a batch of a
    query on a loaded 2-core machine (the first one above all) can take longer than 6 s."""
    first = run.request(p.join(group_id, session_timeout_ms=session_timeout_ms))
    assert first["error_code"] == Errors.MEMBER_ID_REQUIRED
    member_id = first["member_id"]
    joined = run.request(p.join(group_id, member_id, session_timeout_ms=session_timeout_ms))
    assert joined["error_code"] == Errors.NONE and joined["leader"] == member_id
    generation = joined["generation_id"]
    synced = run.request(p.sync(group_id, member_id, generation, {member_id: p.ASSIGNMENT}))
    assert synced["error_code"] == Errors.NONE and synced["assignment"] == p.ASSIGNMENT
    return member_id, generation


def group_records(run, group_id: str) -> list[tuple[dict, dict | None]]:
    out = []
    for record in run.read(run.topics.records):
        key = json.loads(record.key)
        if key.get("group") == group_id:
            out.append((key, None if record.value is None else json.loads(record.value)))
    return out


def emptied_after_membership(run, group_id: str):
    """A probe for `run.wait`: the group's records show a member and, later, none."""

    def probe() -> bool:
        counts = [v["directory"]["member_count"] for k, v in group_records(run, group_id)
                  if "topic" not in k and v is not None]
        first_member = next((i for i, n in enumerate(counts) if n), None)
        return first_member is not None and 0 in counts[first_member:]

    return probe


def test_join_sync_heartbeat_commit_fetch_leave(coordinator):
    run = coordinator()
    member_id, generation = form_group(run, "flow")
    assert run.request(p.heartbeat("flow", member_id, generation))["error_code"] == Errors.NONE
    committed = run.request(p.commit("flow", member_id, generation, {("orders", 0): 42, ("orders", 1): 7}))
    assert [q["error_code"] for t in committed["topics"] for q in t["partitions"]] == [Errors.NONE, Errors.NONE]
    assert p.committed(run.request(p.fetch("flow", {"orders": [0, 1]}))) == {("orders", 0): 42, ("orders", 1): 7}
    assert run.request(p.leave("flow", member_id))["error_code"] == Errors.NONE
    assert run.request(p.heartbeat("flow", member_id, generation))["error_code"] == Errors.UNKNOWN_MEMBER_ID

    records = group_records(run, "flow")
    assert any("topic" in key for key, _ in records), "offset commit records on the records topic"
    metadata = [value for key, value in records if "topic" not in key and value is not None]
    assert metadata and metadata[-1]["members"] == []

    # The views topic: the group's view at each change (not at the heartbeat or the commit), and after the last one
    # a mark covering every request sent, written once the batch that applied them had committed.
    requests_end = {str(r.partition): r.offset + 1 for r in run.read(run.topics.requests)}
    covering = lambda: [json.loads(r.value) for r in run.read(run.topics.views) if r.key == MARK_KEY  # noqa: E731
                        and all(json.loads(r.value)["positions"].get(p, 0) >= end for p, end in requests_end.items())]
    run.wait(covering)
    views = run.read(run.topics.views)
    states = [json.loads(r.value)["group_state"] for r in views if r.key == b"flow"]
    assert states == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Empty"]
    last_view = max(r.offset for r in views if r.key == b"flow")
    first_covering = min(r.offset for r in views if r.key == MARK_KEY and json.loads(r.value) in covering())
    assert first_covering > last_view


def test_session_expires_by_timer_with_no_traffic(coordinator):
    run = coordinator({"group.min.session.timeout.ms": "1000"})
    # JoinGroup v3 has no member-id round trip, so the member's only deadline is its 1.5 s session.
    joined = run.request({**p.join("quiet", session_timeout_ms=1500), "api_version": 3})
    assert joined["error_code"] == Errors.NONE
    # Nothing is sent from here on: only a deadline can remove the member, and it comes back through Kafka.
    assert run.wait(emptied_after_membership(run, "quiet"))
    answer = run.request(p.heartbeat("quiet", joined["member_id"], joined["generation_id"]))
    assert answer["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert files_not_sparks(run.props["checkpoint.location"]) == []


def test_initial_rebalance_delay_lets_late_joiners_into_the_first_generation(coordinator):
    run = coordinator({"group.initial.rebalance.delay.ms": "3000"})
    a = run.request(p.join("delayed", session_timeout_ms=120000))["member_id"]
    b = run.request(p.join("delayed", session_timeout_ms=120000))["member_id"]
    run.send({**p.join("delayed", a, session_timeout_ms=120000), "request_id": "join-a"})
    run.send({**p.join("delayed", b, session_timeout_ms=120000), "request_id": "join-b"})
    join_a = run.responses.wait_for("join-a")
    join_b = run.responses.wait_for("join-b")
    assert join_a["error_code"] == join_b["error_code"] == Errors.NONE
    assert join_a["generation_id"] == join_b["generation_id"] == 1
    leader = join_a if join_a["leader"] == a else join_b
    assert sorted(m["member_id"] for m in leader["members"]) == sorted([a, b])


def test_poison_records_go_to_dead_letters_and_the_query_continues(coordinator):
    run = coordinator()
    run.send_raw(b"\xff\xfe not json", key=b"poison")
    unknown = run.request({"api": "NoSuchApi", "group_id": "poison"})
    assert unknown["error_code"] != Errors.NONE
    member_id, generation = form_group(run, "after-poison")
    assert run.request(p.heartbeat("after-poison", member_id, generation))["error_code"] == Errors.NONE

    dead = run.wait(lambda: run.read(run.topics.dead_letters) if len(run.read(run.topics.dead_letters)) >= 2
                    else None)
    values = [record.value for record in dead]
    assert b"\xff\xfe not json" in values
    reasons = [dict(record.headers)["reason"] for record in dead]
    assert all(reasons)
    assert run.query.isActive


def test_restart_keeps_state_and_repeats_only_identical_responses(coordinator):
    run = coordinator()
    member_id, generation = form_group(run, "durable")
    run.request(p.commit("durable", member_id, generation, {("orders", 0): 5}))
    last = run.request(p.heartbeat("durable", member_id, generation))
    assert last["error_code"] == Errors.NONE
    run.stop()
    # Simulate a crash after the last batch's output was written but before Spark committed it: the batch is
    # replayed on restart with the same input, state and timestamp.
    run.forget_last_commit()
    run.start()
    assert run.request(p.heartbeat("durable", member_id, generation))["error_code"] == Errors.NONE
    assert p.committed(run.request(p.fetch("durable", {"orders": [0]}))) == {("orders", 0): 5}
    run.responses.poll(timeout_ms=1000)
    copies = run.responses.copies
    assert any(len(c) > 1 for c in copies.values()), "the replayed batch wrote its responses again"
    assert all(len(set(c)) == 1 for c in copies.values()), "every repeated response is byte-identical"


def test_list_groups_is_answered_from_the_directory(coordinator):
    run = coordinator()
    form_group(run, "listed-a")
    form_group(run, "listed-b")

    def listed():
        # The directory follows the records topic, which trails the groups by up to a batch.
        response = run.request(p.list_groups())
        groups = {g["group_id"]: g["group_state"] for g in response["groups"]}
        return groups if {"listed-a", "listed-b"} <= set(groups) else None

    assert run.wait(listed) == {"listed-a": "Stable", "listed-b": "Stable"}


def test_an_idle_query_runs_no_batch(coordinator):
    """No request and no deadline due: no micro-batch at all (Spark's no-data batches are off; deadlines come back
    as timer rows only when due)."""
    run = coordinator()
    form_group(run, "idle")  # its next deadline: the 120 s session
    run.wait(lambda: not run.query.status["isTriggerActive"])
    progress = len(run.query.recentProgress)
    time.sleep(3)  # 30 triggers of 100 ms
    assert len(run.query.recentProgress) == progress
