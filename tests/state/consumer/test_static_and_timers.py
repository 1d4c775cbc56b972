"""Static membership and the consumer-group timers (state.consumer.heartbeat), as Kafka's GroupMetadataManagerTest
checks them: a static member's temporary leave, its return under a new member id, the errors of a taken or
unknown instance id, the session timeout and the revocation (rebalance) timeout. Each test names Kafka's case."""

from __future__ import annotations

from dataclasses import replace

import pytest

from state.consumer import records
from state.consumer.heartbeat import Env, on_loaded
from state.consumer.group import MemberState
from state.topics.image import metadata_hash
from state.errors import Errors
from state.handling.timers import Schedule, consumer_rebalance_timeout_key, consumer_session_timeout_key
from tests.state.consumer.context import ConsumerContext, build_group, error, fields, ok
from tests.state.consumer.support import assignment, epochs, image
from tests.state.consumer.test_heartbeat import G, IMAGE, M1, M2, M3, member, two_members

STATIC = ("instance-1", "instance-2")
REJOIN = "member-2-rejoin"


def static_group(ctx, topics=("foo", "bar"), assigned1=(("foo", (0, 1, 2)), ("bar", (0, 1))),
                 assigned2=(("foo", (3, 4, 5)), ("bar", (2,)))):
    m1 = member(M1, assigned=list(assigned1), instance_id=STATIC[0], topics=topics)
    m2 = member(M2, assigned=list(assigned2), instance_id=STATIC[1], topics=topics)
    build_group(ctx, 10, [m1, m2])
    return m1, m2


def temporary_leave(ctx, m2):
    result = ctx.heartbeat(M2, -2, instance_id=STATIC[1], subscribed_topic_names=("foo", "bar"), owned=())
    assert fields(result.response) == ok(M2, -2, interval=0)
    left = replace(m2, member_epoch=-2,
                   assigned_partitions={t: dict.fromkeys(p, 0) for t, p in m2.assigned_partitions.items()})
    assert tuple(result.records) == (records.current_assignment(G, left),)
    return left


def test_a_new_static_member_bumps_the_group_epoch():
    """Kafka: testGroupEpochBumpWhenNewStaticMemberJoins."""
    ctx = ConsumerContext(image=IMAGE)
    static_group(ctx)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1)), ("bar", (0,))), M2: assignment(("foo", (2, 3)), ("bar", (1,))),
                          M3: assignment(("foo", (4, 5)), ("bar", (2,)))})
    result = ctx.join(M3, instance_id="instance-3")
    assert fields(result.response) == {**ok(M3, 11), "assignment": {"topic_partitions": []}}
    expected = member(M3, 11, 0, instance_id="instance-3", state=MemberState.UNRELEASED_PARTITIONS)
    assert tuple(result.records[:2]) == (records.member_subscription(G, expected),
                                  records.group_epoch(G, 11, metadata_hash(["foo", "bar"], IMAGE)))
    assert result.records[-1] == records.current_assignment(G, expected)


def test_a_static_member_that_temporarily_leaves_does_not_bump_the_epoch():
    """Kafka: testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves (KIP-1251: its partitions count from epoch 0)."""
    ctx = ConsumerContext(image=IMAGE)
    _, m2 = static_group(ctx)
    temporary_leave(ctx, m2)
    assert ctx.group.group_epoch == 10 and ctx.member(M2).member_epoch == -2


def test_a_static_member_gets_its_assignment_back_when_it_rejoins():
    """Kafka: testStaticMemberGetsBackAssignmentUponRejoin."""
    ctx = ConsumerContext(image=IMAGE)
    _, m2 = static_group(ctx)
    left = temporary_leave(ctx, m2)
    rejoin = ctx.join(REJOIN, instance_id=STATIC[1])
    assert fields(rejoin.response) == ok(REJOIN, 10, assigned=[("foo", (3, 4, 5)), ("bar", (2,))])
    copied = replace(left, member_id=REJOIN, member_epoch=0, previous_member_epoch=0)
    rejoined = replace(copied, member_epoch=10, previous_member_epoch=0)
    assert tuple(rejoin.records) == (
        records.current_assignment_tombstone(G, M2),
        records.target_assignment_tombstone(G, M2),
        records.member_subscription_tombstone(G, M2),
        records.member_subscription(G, copied),
        records.target_assignment(G, REJOIN, assignment(("foo", (3, 4, 5)), ("bar", (2,)))),
        records.current_assignment(G, copied),
        records.current_assignment(G, rejoined),
    )
    assert M2 not in ctx.group.members and ctx.group.static_members[STATIC[1]] == REJOIN


def test_a_static_member_rejoining_with_new_topics_triggers_a_rebalance():
    """Kafka: testStaticMemberRejoinsWithNewSubscribedTopics."""
    ctx = ConsumerContext(image=IMAGE)
    _, m2 = static_group(ctx, topics=("foo",), assigned1=(("foo", (0, 1, 2)),), assigned2=(("foo", (3, 4, 5)),))
    left = temporary_leave(ctx, m2)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2))),
                          REJOIN: assignment(("foo", (3, 4, 5)), ("bar", (0, 1, 2)))})
    rejoin = ctx.join(REJOIN, instance_id=STATIC[1], topics=("foo", "bar"))
    assert fields(rejoin.response) == ok(REJOIN, 11, assigned=[("foo", (3, 4, 5)), ("bar", (0, 1, 2))])
    copied = replace(left, member_id=REJOIN, member_epoch=0, previous_member_epoch=0)
    resubscribed = replace(copied, subscribed_topic_names=("bar", "foo"))
    assert tuple(rejoin.records[:8]) == (
        records.current_assignment_tombstone(G, M2),
        records.target_assignment_tombstone(G, M2),
        records.member_subscription_tombstone(G, M2),
        records.member_subscription(G, copied),
        records.target_assignment(G, REJOIN, assignment(("foo", (3, 4, 5)))),
        records.current_assignment(G, copied),
        records.member_subscription(G, resubscribed),
        records.group_epoch(G, 11, metadata_hash(["foo", "bar"], IMAGE)),
    )
    assert tuple(rejoin.records[-2:]) == (records.target_assignment_epoch(G, 11, 0), records.current_assignment(
        G, replace(resubscribed, member_epoch=11, previous_member_epoch=0,
                   assigned_partitions={**epochs(0, ("foo", (3, 4, 5))), **epochs(11, ("bar", (0, 1, 2)))})))


def test_a_static_member_leaving_for_good_bumps_the_epoch():
    """Kafka: testLeavingStaticMemberBumpsGroupEpoch."""
    ctx = ConsumerContext(image=image(("foo", 6), ("bar", 3), ("zar", 1)))
    static_group(ctx)
    result = ctx.heartbeat(M2, -1, instance_id=STATIC[1], subscribed_topic_names=("foo", "bar"), owned=())
    assert fields(result.response) == ok(M2, -1, interval=0)
    assert tuple(result.records) == (records.current_assignment_tombstone(G, M2), records.target_assignment_tombstone(G, M2),
                              records.member_subscription_tombstone(G, M2),
                              records.group_epoch(G, 11, metadata_hash(["foo", "bar"], ctx.image)))


def test_an_instance_id_in_use_cannot_join_again():
    """Kafka: testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId."""
    ctx = ConsumerContext(image=IMAGE)
    static_group(ctx)
    assert error(ctx.join(REJOIN, instance_id=STATIC[1])) == (
        Errors.UNRELEASED_INSTANCE_ID, f"Static member {REJOIN} with instance id {STATIC[1]} cannot join the group "
        f"because the instance id is owned by {M2} member.")


@pytest.mark.parametrize("epoch", [1, -1, -2], ids=["heartbeat", "leave", "temporary-leave"])
def test_an_unknown_instance_id_is_an_unknown_member(epoch):
    """Kafka: testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins and ...Leaves."""
    ctx = ConsumerContext(image=IMAGE)
    static_group(ctx)
    result = ctx.heartbeat(M3, epoch, instance_id="unknown", rebalance_timeout_ms=5000,
                           subscribed_topic_names=("foo",), owned=())
    assert error(result) == (Errors.UNKNOWN_MEMBER_ID, "Instance id unknown is unknown.")


@pytest.mark.parametrize("epoch", [10, -1, -2], ids=["heartbeat", "leave", "temporary-leave"])
def test_an_instance_id_owned_by_another_member_id_is_fenced(epoch):
    """Kafka: testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins and ...Leaves."""
    ctx = ConsumerContext(image=IMAGE)
    static_group(ctx)
    result = ctx.heartbeat("other", epoch, instance_id=STATIC[0])
    assert error(result) == (Errors.FENCED_INSTANCE_ID,
                             f"Static member other with instance id {STATIC[0]} was fenced by member {M1}.")


def test_a_static_member_with_a_wrong_epoch_is_fenced():
    """Kafka: testConsumerGroupMemberEpochValidationForStaticMember."""
    ctx = ConsumerContext(image=IMAGE)
    build_group(ctx, 100, [member(M1, 100, 99, [("foo", (1, 2, 3))], instance_id="i")])
    for epoch in (200, 50, 99):
        assert error(ctx.heartbeat(M1, epoch, instance_id="i"))[0] == Errors.FENCED_MEMBER_EPOCH
    accepted = ctx.heartbeat(M1, 99, instance_id="i", owned=[("foo", (1, 2))])
    assert accepted.response.member_epoch == 100


# -- timers --------------------------------------------------------------------------------------------------------

def test_every_heartbeat_pushes_the_session_deadline():
    """Kafka: testSessionTimeoutLifecycle."""
    ctx = ConsumerContext(image=image(("foo", 6)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)))})
    ctx.join(M1, topics=("foo",))
    assert ctx.session_deadline(M1) == 45_000
    assert ctx.sleep(5000) == []
    ctx.heartbeat(M1, 1)
    assert ctx.session_deadline(M1) == 50_000
    assert ctx.sleep(44_999) == []
    ctx.heartbeat(M1, 1)
    assert ctx.session_deadline(M1) == 94_999


def test_a_member_whose_session_expires_is_fenced():
    """Kafka: testSessionTimeoutExpiration."""
    ctx = ConsumerContext(image=image(("foo", 6)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)))})
    ctx.join(M1, topics=("foo",))
    ((key, result),) = ctx.sleep(45_000 + 1)
    assert key == consumer_session_timeout_key(M1)
    assert tuple(result.records) == (records.current_assignment_tombstone(G, M1), records.target_assignment_tombstone(G, M1),
                              records.member_subscription_tombstone(G, M1),
                              records.group_epoch(G, 2, 0))
    assert ctx.timers == {}


def test_a_static_member_that_left_temporarily_is_fenced_when_its_session_expires():
    """Kafka: testSessionTimeoutExpirationStaticMember."""
    ctx = ConsumerContext(image=image(("foo", 6)))
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2, 3, 4, 5)))})
    ctx.join(M1, topics=("foo",), instance_id="i")
    ctx.sleep(5000)
    ctx.heartbeat(M1, -2, instance_id="i")
    assert ctx.session_deadline(M1) == 45_000  # a temporary leave keeps the session running
    ((_, result),) = ctx.sleep(40_000 + 1)
    assert result.records[-1] == records.group_epoch(G, 2, 0)
    assert ctx.group.members == {} and ctx.group.static_members == {}


def revoking_pair(ctx, rebalance_timeout_ms):
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1, 2)))})
    ctx.join(M1, topics=("foo",), rebalance_timeout_ms=180_000)
    ctx.sleep(5000)
    ctx.assignor.prepare({M1: assignment(("foo", (0, 1))), M2: assignment(("foo", (2,)))})
    assert ctx.join(M2, topics=("foo",), rebalance_timeout_ms=90_000).response.member_epoch == 2
    ctx.sleep(5000)
    result = ctx.heartbeat(M1, 1, rebalance_timeout_ms=rebalance_timeout_ms)
    assert fields(result.response) == ok(M1, 1, assigned=[("foo", (0, 1))])
    assert ctx.member(M1).state is MemberState.UNREVOKED_PARTITIONS


def test_a_member_asked_to_revoke_gets_a_deadline_cancelled_by_its_ack():
    """Kafka: testRebalanceTimeoutLifecycle (a stale revocation timer does nothing)."""
    ctx = ConsumerContext(image=image(("foo", 3)))
    revoking_pair(ctx, 12_000)
    assert ctx.rebalance_deadline(M1, 1) == 10_000 + 12_000
    stale_key = consumer_rebalance_timeout_key(M1, 1)
    ack = ctx.heartbeat(M1, 1, owned=[("foo", (0, 1))])
    assert fields(ack.response) == ok(M1, 2)
    assert ctx.rebalance_deadline(M1, 1) is None
    from state.consumer.heartbeat import on_timer

    assert on_timer(ctx.group, stale_key, ctx.env()).records == []


def test_a_member_that_does_not_revoke_in_time_is_fenced():
    """Kafka: testRebalanceTimeoutExpiration."""
    ctx = ConsumerContext(image=image(("foo", 3)))
    revoking_pair(ctx, 10_000)
    ((key, result),) = ctx.sleep(10_000 + 1)
    assert key == consumer_rebalance_timeout_key(M1, 1)
    assert tuple(result.records) == (records.current_assignment_tombstone(G, M1), records.target_assignment_tombstone(G, M1),
                              records.member_subscription_tombstone(G, M1),
                              records.group_epoch(G, 3, metadata_hash(["foo"], ctx.image)))
    assert ctx.session_deadline(M1) is None and ctx.rebalance_deadline(M1, 1) is None


def test_a_loaded_group_restarts_sessions_and_revocation_deadlines():
    """Kafka: testOnLoaded."""
    ctx = ConsumerContext(image=IMAGE)
    m1, m2 = two_members(ctx)
    revoking = replace(m2, state=MemberState.UNREVOKED_PARTITIONS, assigned_partitions=epochs(10, ("foo", (3, 4))),
                       partitions_pending_revocation=epochs(10, ("foo", (5,))), rebalance_timeout_ms=60_000)
    ctx.replay(records.member_subscription(G, revoking), records.current_assignment(G, revoking))
    assert on_loaded(ctx.group, Env(1000)) == (
        Schedule(consumer_session_timeout_key(M1), 46_000), Schedule(consumer_session_timeout_key(M2), 46_000),
        Schedule(consumer_rebalance_timeout_key(M2, 10), 61_000))
