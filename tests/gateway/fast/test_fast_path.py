"""Heartbeats and commits answered by the gateway from the group's view, against the real query (docs/gateway.md,
"Fast answers"): a stale view's answer is counted and changes no offset, the same requests leave the same offsets
with the fast path and without it, a stopped query turns the fast path off until it is back, and a gateway killed
between appending a commit and answering it loses nothing. The consumers that commit every record, on one gateway
and on two, are in test_consumers.py; ListGroups and DescribeGroups right after a rebalance, a LeaveGroup and a
DeleteGroups in the admin tests of test_kafka_python.py and test_confluent.py."""

from __future__ import annotations

import io
import json
import os
import signal
import time
import uuid

import pytest
from kafka.admin import KafkaAdminClient

from common.generations import generations, topic_of
from gateway.front.process import start_gateway
from state.batch import decode_state
from state.config import CoordinatorConfig
from state.errors import Errors
from state.replay import Replayer
from tests.gateway.conftest import GatewayEnv, wait_for
from tests.gateway.held import HeldGateway
from tests.gateway.raw import RawMember

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def control_records(env: GatewayEnv, group: str) -> list:
    """The group's records on the requests topic, in order: they share a partition number, read generation after
    generation where the query rotated the topic (`common.generations`)."""
    base = env.run.topics.requests
    admin = KafkaAdminClient(bootstrap_servers=env.broker)
    try:
        names = admin.list_topics()
    finally:
        admin.close()
    return [r for g in generations(base, names) for r in env.run.read(topic_of(base, g)) if r.key == group.encode()]


def stored_offsets(env: GatewayEnv, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as the records topic holds them (the latest record per partition)."""
    out: dict[tuple[str, int], int] = {}
    for record in env.run.read(env.run.topics.records):
        key = json.loads(record.key)
        if key.get("group") == group and "topic" in key:
            if record.value is None:
                out.pop((key["topic"], key["partition"]), None)
            else:
                out[(key["topic"], key["partition"])] = json.loads(record.value)["offset"]
    return out


def replayed_offsets(env: GatewayEnv, group: str, fast_path: bool) -> dict[tuple[str, int], int]:
    """The committed offsets the core alone leaves after the group's control records, as they were written (the
    fast path on), or as they would have been without it: commits without the answer given, each member heard in
    a Liveness request as its own Heartbeat."""
    events = []
    for record in control_records(env, group):
        body = json.loads(record.value)
        if not fast_path and body["api"] == "Liveness":
            events += [(m["heard_ms"], {"api": "Heartbeat", "request_id": f"{body['request_id']}-{i}",
                                        "group_id": group, "generation_id": m["generation_id"],
                                        "member_id": m["member_id"], "group_instance_id": m["group_instance_id"]})
                       for i, m in enumerate(body["members"])]
            continue
        if not fast_path:
            body.pop("answered", None)
        events.append((record.timestamp, body))
    replayer = Replayer(CoordinatorConfig.from_properties(env.run.props), False, io.StringIO())
    for at_ms, body in sorted(events, key=lambda e: e[0]):
        replayer.advance(max(at_ms, replayer.now_ms or at_ms))
        replayer.arrive(group.encode(), json.dumps(body).encode())
    state = decode_state(replayer.states.get(group))
    return {} if state is None else {tp: o.offset for tp, o in state.offsets.items()}


def observed(env: GatewayEnv, counter: str) -> int:
    """A counter of the query's observed metrics (streaming.kafka_io.sink.SUMMARY_COUNTS), summed over its recent
    batches."""
    return sum(p.observedMetrics["coordinator"][counter] for p in env.run.query.recentProgress
               if "coordinator" in p.observedMetrics)


def test_a_commit_answered_from_a_stale_view_is_counted_and_leaves_the_offsets_as_the_coordinator_decided(
        gateway_env: GatewayEnv):
    name = f"stale-{uuid.uuid4().hex[:8]}"
    held = HeldGateway(gateway_env.broker, gateway_env.topics)
    member = RawMember(held.bootstrap, name)
    try:
        member.join_and_sync()
        held.catch_up(lambda: (view := held.follower.view(name)) is not None and view.state == "Stable")
        assert member.commit({("t", 0): 5}) == {("t", 0): Errors.NONE}
        assert member.heartbeat() == Errors.NONE
        # The member leaves (the coordinator answers); the follower is held back: the view still has it, Stable.
        assert member.leave() == Errors.NONE
        assert held.follower.view(name).members.keys() == {member.member_id}
        mispredicted = observed(gateway_env, "mispredicted_commits")
        # Its zombie's commit is acknowledged from that view, and the coordinator refuses it.
        assert member.commit({("t", 0): 99}) == {("t", 0): Errors.NONE}
        answered = [json.loads(r.value) for r in control_records(gateway_env, name)][-1]
        assert answered["api"] == "OffsetCommit" and answered["answered"] == {"error_code": 0, "partition_errors": []}
        wait_for(lambda: observed(gateway_env, "mispredicted_commits") > mispredicted, what="a misprediction counted")
        held.catch_up(lambda: held.follower.view(name).state == "Empty")
        assert member.committed("t", [0]) == {0: 5}
    finally:
        member.close()
        held.close()
    # The same requests without the fast path leave the same offsets, which are the ones the job stored.
    assert replayed_offsets(gateway_env, name, fast_path=True) == replayed_offsets(gateway_env, name, fast_path=False)
    assert replayed_offsets(gateway_env, name, fast_path=True) == stored_offsets(gateway_env, name) == {("t", 0): 5}


def test_a_stopped_query_stops_the_fast_path_and_what_waits_is_answered_when_it_is_back(gateway_env: GatewayEnv):
    name = f"stopped-{uuid.uuid4().hex[:8]}"
    member = RawMember(gateway_env.bootstrap, name)
    try:
        member.join_and_sync()
        wait_for(lambda: member.heartbeat() == Errors.NONE and any(
            json.loads(r.value)["api"] == "Liveness" for r in control_records(gateway_env, name)),
                 what="a heartbeat answered from the view")
        gateway_env.run.stop()
        # The gateway's bound at its longest (--view-bound-max-ms, 10 s: it follows the query's recent batch times),
        # and its sampling, with room to spare.
        time.sleep(11)
        written = len(control_records(gateway_env, name))
        member.connection.send(member.heartbeat_request(), 4)
        member.connection.send(member.commit_request({("t", 0): 7}), 8)
        # Both go to the coordinator (after the heartbeats answered from the view before them, if any were pending).
        waiting = lambda: [(r["api"], "answered" in r) for r in  # noqa: E731
                           map(json.loads, (r.value for r in control_records(gateway_env, name)[written:]))
                           if r["api"] != "Liveness"]
        wait_for(lambda: len(waiting()) >= 2, what="both requests written for the coordinator")
        assert waiting() == [("Heartbeat", False), ("OffsetCommit", False)]
    finally:
        if gateway_env.run.query is None:
            gateway_env.run.start()
    try:
        from kafka.protocol.consumer.group import HeartbeatResponse, OffsetCommitResponse

        assert member.connection.receive(HeartbeatResponse, 4).error_code == Errors.NONE
        committed = member.connection.receive(OffsetCommitResponse, 8)
        assert [p.error_code for t in committed.topics for p in t.partitions] == [Errors.NONE]
        assert member.committed("t", [0]) == {0: 7}
    finally:
        member.close()


def test_a_gateway_killed_between_appending_a_commit_and_answering_it_loses_nothing(gateway_env: GatewayEnv):
    name = f"killed-{uuid.uuid4().hex[:8]}"
    doomed = start_gateway(gateway_env.broker, gateway_env.topics, log_path=gateway_env.logs / "doomed-gateway.log")
    member = RawMember(doomed.bootstrap_servers, name)
    try:
        member.join_and_sync()
        assert member.commit({("t", 0): 5}) == {("t", 0): Errors.NONE}
        member.connection.send(member.commit_request({("t", 0): 10}), 8)  # its answer is never read
        wait_for(lambda: any(json.loads(r.value)["api"] == "OffsetCommit" and
                             json.loads(r.value)["topics"][0]["partitions"][0]["committed_offset"] == 10
                             for r in control_records(gateway_env, name)), what="the commit appended")
        os.kill(doomed.process.pid, signal.SIGKILL)
        doomed.process.wait(timeout=10)
    finally:
        member.close()
        doomed.stop()
    # The client retries through another gateway, with the same member id and generation.
    retry = RawMember(gateway_env.bootstrap, name)
    retry.member_id, retry.generation = member.member_id, member.generation
    try:
        assert retry.commit({("t", 0): 10}) == {("t", 0): Errors.NONE}
        assert retry.commit({("t", 0): 11}) == {("t", 0): Errors.NONE}
        assert retry.committed("t", [0]) == {0: 11}
    finally:
        retry.close()
    history = [json.loads(r.value)["offset"] for r in gateway_env.run.read(gateway_env.run.topics.records)
               if json.loads(r.key).get("group") == name and r.value is not None and "topic" in json.loads(r.key)]
    assert history in ([5, 10, 10, 11], [5, 10, 11])  # applied once or twice, in order, nothing lost
