"""Our extension: `server:<assignor>` protocols, assigned by the coordinator at join completion."""

from __future__ import annotations

import base64

from assignors.consumer_protocol import decode_assignment
from state.config import CoordinatorConfig
from state.group import GroupState
from tests.state.context import GroupContext, subscription

NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
TOPICS = [{"name": "t", "partitions": 4}]


def partitions(b64: str) -> list[tuple[str, int]]:
    return decode_assignment(base64.b64decode(b64)).partitions()


def test_server_assignment_goes_straight_to_stable_and_sync_returns_the_assignment():
    ctx = GroupContext(NO_DELAY)
    a, b = ctx.new_member(), ctx.new_member()
    protocols = [("server:uniform", subscription("t"))]
    ctx.join_all(a, b, protocols=protocols, topic_partitions=TOPICS)
    responses = ctx.sleep(0)
    assert len(responses) == 2
    assert all(r["skip_assignment"] and r["error_code"] == 0 and r["members"] == [] for r in responses)
    assert ctx.group.state == GroupState.STABLE
    assert ctx.record_values[-1]["directory"]["group_state"] == "Stable"
    assigned = []
    for member_id in (a, b):
        (sync,) = ctx.sync(member_id, 1, protocol_name="server:uniform")
        assert sync["error_code"] == 0
        assigned += partitions(sync["assignment"])
    assert sorted(assigned) == [("t", 0), ("t", 1), ("t", 2), ("t", 3)]


def test_unknown_server_assignor_fails_the_join_with_a_clear_error():
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:nope", subscription("t"))], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    assert response["error_code"] == 112 and "nope" in response["error_message"]
    assert ctx.group.state == GroupState.EMPTY and not ctx.group.members


def test_undecodable_subscription_fails_the_join_instead_of_raising():
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:range", "AAE=")], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    assert response["error_code"] == 112


def test_a_failing_assignor_fails_the_join_instead_of_raising(monkeypatch):
    from assignors import registry

    class Broken:
        def assign(self, cluster, members):
            raise ValueError("no partitions for you")

    monkeypatch.setattr(registry, "get", lambda name, kind=None: Broken())
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:uniform", subscription("t"))], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    assert response["error_code"] == 112 and "no partitions for you" in response["error_message"]
