"""Our extension: `server:<assignor>` protocols, assigned by the coordinator at join completion."""

from __future__ import annotations

import base64

from assignors.consumer_protocol import decode_assignment
from state.config import CoordinatorConfig
from state.errors import Errors
from state.classic.group import GroupState
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
    assert all(r["skip_assignment"] and r["error_code"] == Errors.NONE and r["members"] == [] for r in responses)
    assert ctx.group.state == GroupState.STABLE
    assert ctx.record_values[-1]["directory"]["group_state"] == "Stable"
    assigned = []
    for member_id in (a, b):
        (sync,) = ctx.sync(member_id, 1, protocol_name="server:uniform")
        assert sync["error_code"] == Errors.NONE
        assigned += partitions(sync["assignment"])
    assert sorted(assigned) == [("t", 0), ("t", 1), ("t", 2), ("t", 3)]


def test_unknown_server_assignor_fails_the_join_with_a_clear_error():
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:nope", subscription("t"))], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    assert response["error_code"] == Errors.UNSUPPORTED_ASSIGNOR and "nope" in response["error_message"]
    assert ctx.group.state == GroupState.EMPTY and not ctx.group.members


def test_undecodable_subscription_fails_the_join_instead_of_raising():
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:range", "AAE=")], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    assert response["error_code"] == Errors.UNSUPPORTED_ASSIGNOR


def join_with_an_assignor_that_raises(monkeypatch, error: Exception) -> tuple[GroupContext, dict]:
    """One member joins a `server:uniform` group whose assignor raises `error`; returns the JoinGroup response."""
    from assignors import registry

    class Raising:
        def assign_group(self, cluster, group):
            raise error

    monkeypatch.setattr(registry, "get", lambda name, kind=None: Raising())
    ctx = GroupContext(NO_DELAY)
    a = ctx.new_member()
    ctx.join(a, protocols=[("server:uniform", subscription("t"))], topic_partitions=TOPICS)
    (response,) = ctx.sleep(0)
    return ctx, response


def test_a_failing_assignor_fails_the_join_instead_of_raising(monkeypatch):
    _, response = join_with_an_assignor_that_raises(monkeypatch, ValueError("no partitions for you"))
    assert response["error_code"] == Errors.UNSUPPORTED_ASSIGNOR
    assert "no partitions for you" in response["error_message"]


def _assigned(ctx: GroupContext, member_id: str, protocol: str) -> list[tuple[str, int]]:
    (sync,) = ctx.sync(member_id, 1, protocol_name=protocol)
    assert sync["error_code"] == Errors.NONE
    return partitions(sync["assignment"])


def test_a_topic_nobody_reported_is_left_out_as_kafka_leaves_out_names_it_has_no_id_for():
    """Kafka resolves subscribed names against its topics image and skips a name without an id, so subscribing
    to a topic that does not exist (yet) is no error: the member gets the partitions of the topics that do."""
    ctx = GroupContext(NO_DELAY)
    a, b = sorted((ctx.new_member(), ctx.new_member()))
    ctx.step(
        ctx.join_request(a, protocols=[("server:uniform", subscription("t", "ghost"))], topic_partitions=TOPICS),
        ctx.join_request(b, protocols=[("server:uniform", subscription("t"))], topic_partitions=TOPICS),
    )
    responses = ctx.sleep(0)
    assert [r["error_code"] for r in responses] == [Errors.NONE, Errors.NONE]
    assert ctx.group.state == GroupState.STABLE
    assert sorted(_assigned(ctx, a, "server:uniform") + _assigned(ctx, b, "server:uniform")) == [
        ("t", 0), ("t", 1), ("t", 2), ("t", 3)
    ]


def test_the_subscription_type_counts_topic_names_before_they_are_resolved():
    """As Kafka's ModernGroup.subscriptionType: A's subscription to a topic that does not exist still makes the
    group heterogeneous, so uniform deals t's 3 partitions A, B, A (the heterogeneous builder), not 2 to A and 1
    to B in one block (the homogeneous one, which two members on "t" alone get)."""
    three = [{"name": "t", "partitions": 3}]
    results = {}
    for extra in (("ghost",), ()):
        ctx = GroupContext(NO_DELAY)
        a, b = sorted((ctx.new_member(), ctx.new_member()))
        ctx.step(
            ctx.join_request(a, protocols=[("server:uniform", subscription("t", *extra))], topic_partitions=three),
            ctx.join_request(b, protocols=[("server:uniform", subscription("t"))], topic_partitions=three),
        )
        ctx.sleep(0)
        results[extra] = (_assigned(ctx, a, "server:uniform"), _assigned(ctx, b, "server:uniform"))
    assert results[("ghost",)] == ([("t", 0), ("t", 2)], [("t", 1)])
    assert results[()] == ([("t", 0), ("t", 1)], [("t", 2)])


def test_a_partition_assignor_error_is_answered_unknown_server_error_as_kafka_does(monkeypatch):
    """Kafka's GroupMetadataManager turns the assignor's PartitionAssignorException into UnknownServerException
    ("Failed to compute a new target assignment for epoch N: ..."), which the JoinGroup gets as
    UNKNOWN_SERVER_ERROR. Our coordinator leaves unknown topics out before the assignor runs (see above), so an
    assignor that refuses the group stands in for the cases that reach it."""
    from assignors.api import PartitionAssignorError

    ctx, response = join_with_an_assignor_that_raises(
        monkeypatch, PartitionAssignorError("Partitions were left unassigned")
    )
    assert response["error_code"] == Errors.UNKNOWN_SERVER_ERROR
    assert response["error_message"] == (
        "Failed to compute a new target assignment for epoch 1: Partitions were left unassigned"
    )
    assert ctx.group.state == GroupState.EMPTY and not ctx.group.members
