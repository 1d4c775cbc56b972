"""A commit that arrives before the gateway has read the view that accepts it (docs/gateway.md, "Fast answers"):
@platformatic/kafka commits at once after its SyncGroup, with no OffsetFetch first, and the view the coordinator
wrote before answering the SyncGroup may not be read yet. Against the real query, through a gateway whose view
follower moves only when the test steps it (`tests.gateway.held`)."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from kafka.protocol.consumer.group import OffsetCommitResponse

from state.errors import Errors
from tests.gateway.conftest import GatewayEnv
from tests.gateway.fast.test_fast_path import control_records, stored_offsets
from tests.gateway.held import HeldGateway
from tests.gateway.raw import RawMember

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_commits_right_after_the_sync_are_answered_from_the_next_view_in_order(gateway_env: GatewayEnv):
    """The follower still holds the group in CompletingRebalance, where no commit is answered from a view. Two
    commits sent at once wait for the follower's next round instead of the coordinator's micro-batch, are answered
    from the Stable view it reads, and reach the requests topic in the order they came; the coordinator stores
    them."""
    name = f"after-sync-{uuid.uuid4().hex[:8]}"
    held = HeldGateway(gateway_env.broker, gateway_env.topics)
    member = RawMember(held.bootstrap, name)
    try:
        member.join()
        held.catch_up(lambda: (view := held.follower.view(name)) is not None and view.state == "CompletingRebalance")
        member.sync()
        assert held.follower.view(name).state == "CompletingRebalance"  # the Stable view is not read yet
        for offset in (1, 2):
            member.connection.send(member.commit_request({("t", 0): offset}), 8)
        answers: list = []
        receiving = threading.Thread(target=lambda: answers.extend(
            member.connection.receive(OffsetCommitResponse, 8) for _ in range(2)))
        receiving.start()
        held.catch_up(lambda: not receiving.is_alive())
        assert [[p.error_code for t in a.topics for p in t.partitions] for a in answers] == [[Errors.NONE]] * 2
        commits = [json.loads(r.value) for r in control_records(gateway_env, name)]
        commits = [c for c in commits if c["api"] == "OffsetCommit"]
        assert [c["topics"][0]["partitions"][0]["committed_offset"] for c in commits] == [1, 2]
        assert all(c["answered"] == {"error_code": 0, "partition_errors": []} for c in commits)
        assert member.committed("t", [0]) == {0: 2}
    finally:
        member.close()
        held.close()
    assert stored_offsets(gateway_env, name) == {("t", 0): 2}
