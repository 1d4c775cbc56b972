"""A member's reconciliation towards its target (state.consumer.assignment.reconciliation), case by case as Kafka's
CurrentAssignmentBuilderTest checks it (the trunk version, with subscriptions and regular expressions: KAFKA-19431,
KAFKA-19449, KAFKA-19974). Inputs and expected members are Kafka's; each test names Kafka's case it ports.

Every member subscribes to topic1 and topic2 (10 partitions each) unless the case says otherwise.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from state.consumer.group import ConsumerGroupMember, MemberState, partitions_of
from state.consumer.assignment.reconciliation import reconcile, subscribed_topic_ids
from state.errors import CoordinatorError, Errors
from tests.state.consumer.support import assignment, epochs, image, topic_id

IMAGE = image(("topic1", 10), ("topic2", 10), ("foo", 10), ("bar", 10))
T1, T2 = topic_id("topic1"), topic_id("topic2")

STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def member(state, epoch, previous, assigned, revoking=(), topics=("topic1", "topic2"), regex=None):
    """A member with `assigned`/`revoking` given as ((topic, partitions), ...), all assigned at `previous`."""
    return ConsumerGroupMember("member", state=state, member_epoch=epoch, previous_member_epoch=previous,
                               subscribed_topic_names=tuple(sorted(topics)), subscribed_topic_regex=regex,
                               assigned_partitions=epochs(previous, *assigned),
                               partitions_pending_revocation=epochs(previous, *revoking))


def run(m, target_epoch, target, partition_epoch=lambda t, p: -1, owned=None, enforce=False, resolved=None):
    return reconcile(m, target_epoch=target_epoch, target=assignment(*target), partition_epoch=partition_epoch,
                     owned=None if owned is None else assignment(*owned),
                     subscribed=subscribed_topic_ids(m, resolved or {}, IMAGE), enforce_subscription=enforce)


def expect(actual, state, epoch, previous, assigned, revoking=()):
    """Kafka compares whole members; here every field but the assignment epochs (checked on their own below)."""
    assert (actual.state, actual.member_epoch, actual.previous_member_epoch) == (state, epoch, previous)
    assert partitions_of(actual.assigned_partitions) == assignment(*assigned)
    assert partitions_of(actual.partitions_pending_revocation) == assignment(*revoking)


def test_a_stable_member_moves_to_the_new_epoch_when_its_target_is_what_it_has():
    """Kafka: testStableToStable."""
    m = member(STABLE, 10, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])
    updated = run(m, 11, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], lambda t, p: 10)
    expect(updated, STABLE, 11, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])


def test_a_stable_member_gets_free_partitions_at_once():
    """Kafka: testStableToStableWithNewPartitions."""
    m = member(STABLE, 10, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])
    updated = run(m, 11, [("topic1", (1, 2, 3, 4)), ("topic2", (4, 5, 6, 7))])
    expect(updated, STABLE, 11, 10, [("topic1", (1, 2, 3, 4)), ("topic2", (4, 5, 6, 7))])


def test_a_member_that_loses_partitions_revokes_them_first_at_its_epoch():
    """Kafka: testStableToUnrevokedPartitions."""
    m = member(STABLE, 10, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])
    updated = run(m, 11, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))])
    expect(updated, UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (1,)), ("topic2", (4,))])


def test_a_member_waits_for_partitions_another_member_still_holds():
    """Kafka: testStableToUnreleasedPartitions."""
    m = member(STABLE, 10, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])
    updated = run(m, 11, [("topic1", (1, 2, 3, 4)), ("topic2", (4, 5, 6, 7))], lambda t, p: 10)
    expect(updated, UNRELEASED, 11, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])


def test_revoked_partitions_the_member_no_longer_owns_need_no_revocation_round():
    """Kafka: testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions."""
    m = member(STABLE, 10, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))])
    updated = run(m, 11, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 7))], lambda t, p: 10 if t == T2 else -1,
                  owned=[])
    expect(updated, UNRELEASED, 11, 10, [("topic1", (1, 2, 3)), ("topic2", (4, 5))])


def test_a_member_that_acknowledged_its_revocation_moves_to_the_target_epoch():
    """Kafka: testUnrevokedPartitionsToStable."""
    m = member(UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (1,)), ("topic2", (4,))])
    updated = run(m, 11, [("topic1", (2, 3)), ("topic2", (5, 6))], owned=[("topic1", (2, 3)), ("topic2", (5, 6))])
    expect(updated, STABLE, 11, 10, [("topic1", (2, 3)), ("topic2", (5, 6))])


@pytest.mark.parametrize("owned", [None, [("topic1", (1, 2, 3)), ("topic2", (5, 6))],
                                   [("topic1", (2, 3)), ("topic2", (4, 5, 6))]],
                         ids=["ownership-unknown", "still-owns-topic1-1", "still-owns-topic2-4"])
def test_a_member_stays_revoking_while_it_may_still_own_a_revoked_partition(owned):
    """Kafka: testRemainsInUnrevokedPartitions."""
    m = member(UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (1,)), ("topic2", (4,))])
    assert run(m, 12, [("topic1", (3,)), ("topic2", (6,))], owned=owned) is m


def test_a_second_revocation_round_stays_at_the_member_epoch():
    """Kafka: testUnrevokedPartitionsToUnrevokedPartitions (KAFKA-19974: no epoch bump when leaving
    UNREVOKED_PARTITIONS for another revocation)."""
    m = member(UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (1,)), ("topic2", (4,))])
    updated = run(m, 12, [("topic1", (3,)), ("topic2", (6,))], owned=[("topic1", (2, 3)), ("topic2", (5, 6))])
    expect(updated, UNREVOKED, 10, 10, [("topic1", (3,)), ("topic2", (6,))], [("topic1", (2,)), ("topic2", (5,))])


def test_after_revoking_a_member_waits_for_unreleased_partitions():
    """Kafka: testUnrevokedPartitionsToUnreleasedPartitions."""
    m = member(UNREVOKED, 11, 10, [("topic1", (2, 3)), ("topic2", (5, 6))])
    updated = run(m, 11, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))], lambda t, p: 10,
                  owned=[("topic1", (2, 3)), ("topic2", (5, 6))])
    expect(updated, UNRELEASED, 11, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])


def test_a_partition_the_member_itself_revokes_is_not_unreleased_for_it():
    """Kafka: testUnrevokedPartitionsToStableWithReturnedPartitionsPendingRevocation (KAFKA-19449)."""
    m = member(UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (4,))])
    held = {(T1, 2), (T1, 3), (T1, 4), (T2, 5), (T2, 6)}
    updated = run(m, 12, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))], lambda t, p: 10 if (t, p) in held else -1,
                  owned=[("topic1", (2, 3)), ("topic2", (5, 6))])
    expect(updated, STABLE, 12, 10, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))])


def test_an_unreleased_member_becomes_stable_at_the_new_epoch():
    """Kafka: testUnreleasedPartitionsToStable."""
    m = member(UNRELEASED, 11, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])
    updated = run(m, 12, [("topic1", (2, 3)), ("topic2", (5, 6))], lambda t, p: 10)
    expect(updated, STABLE, 12, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])


def test_an_unreleased_member_gets_partitions_once_released():
    """Kafka: testUnreleasedPartitionsToStableWithNewPartitions."""
    m = member(UNRELEASED, 11, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])
    updated = run(m, 11, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))])
    expect(updated, STABLE, 11, 11, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))])


def test_an_unreleased_member_keeps_waiting_while_partitions_are_held():
    """Kafka: testUnreleasedPartitionsToUnreleasedPartitions."""
    m = member(UNRELEASED, 11, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])
    assert run(m, 11, [("topic1", (2, 3, 4)), ("topic2", (5, 6, 7))], lambda t, p: 10) == m


def test_an_unreleased_member_revokes_what_a_new_target_takes_away():
    """Kafka: testUnreleasedPartitionsToUnrevokedPartitions."""
    m = member(UNRELEASED, 11, 11, [("topic1", (2, 3)), ("topic2", (5, 6))])
    updated = run(m, 12, [("topic1", (3,)), ("topic2", (6,))], lambda t, p: 10)
    expect(updated, UNREVOKED, 11, 11, [("topic1", (3,)), ("topic2", (6,))], [("topic1", (2,)), ("topic2", (5,))])


def test_a_member_in_an_unknown_state_is_fenced_unless_it_owns_nothing():
    """Kafka: testUnknownState."""
    m = member(MemberState.UNKNOWN, 11, 11, [("topic1", (3,)), ("topic2", (6,))], [("topic1", (2,)), ("topic2", (5,))])
    with pytest.raises(CoordinatorError) as fenced:
        run(m, 12, [("topic1", (3,)), ("topic2", (6,))], lambda t, p: 10)
    assert fenced.value.code == Errors.FENCED_MEMBER_EPOCH
    updated = run(m, 12, [("topic1", (3,)), ("topic2", (6,))], lambda t, p: 11, owned=[])
    expect(updated, STABLE, 12, 11, [("topic1", (3,)), ("topic2", (6,))])


@pytest.mark.parametrize("epoch, target_epoch, expected_epoch, changed",
                         [(10, 11, 11, False), (10, 11, 11, True), (10, 10, 10, True)])
def test_topics_left_out_of_the_subscription_are_dropped_when_already_revoked(epoch, target_epoch, expected_epoch,
                                                                            changed):
    """Kafka: testStableToStableWithAssignmentTopicsNoLongerInSubscription (KAFKA-19431)."""
    m = member(STABLE, epoch, epoch - 1, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], topics=("topic2",))
    updated = run(m, target_epoch, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], owned=[("topic2", (4, 5, 6))],
                  enforce=changed)
    expect(updated, STABLE, expected_epoch, epoch, [("topic2", (4, 5, 6))])


@pytest.mark.parametrize("epoch, target_epoch, expected_epoch, changed",
                         [(10, 11, 10, False), (10, 11, 10, True), (10, 10, 10, True)])
def test_topics_left_out_of_the_subscription_are_revoked(epoch, target_epoch, expected_epoch, changed):
    """Kafka: testStableToUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription (KAFKA-19431)."""
    m = member(STABLE, epoch, epoch - 1, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], topics=("topic2",))
    updated = run(m, target_epoch, [("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))],
                  owned=[("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], enforce=changed)
    expect(updated, UNREVOKED, expected_epoch, epoch, [("topic2", (4, 5, 6))], [("topic1", (1, 2, 3))])


def test_a_revoking_member_that_unsubscribes_revokes_that_topic_too():
    """Kafka: testRemainsInUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription."""
    m = member(UNREVOKED, 10, 10, [("topic1", (2, 3)), ("topic2", (5, 6))], [("topic1", (1,)), ("topic2", (4,))],
               topics=("topic2",))
    updated = run(m, 12, [("topic1", (1, 3, 4)), ("topic2", (6, 7))],
                  owned=[("topic1", (1, 2, 3)), ("topic2", (4, 5, 6))], enforce=True)
    expect(updated, UNREVOKED, 10, 10, [("topic2", (5, 6))], [("topic1", (1, 2, 3)), ("topic2", (4,))])


def test_an_unresolved_regex_matches_nothing_yet():
    """Kafka: testSubscribedTopicNameAndUnresolvedRegularExpression."""
    m = member(STABLE, 10, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], topics=("foo",), regex="bar*")
    updated = run(m, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], owned=[("foo", (1, 2, 3)), ("bar", (4, 5, 6))],
                  enforce=True)
    expect(updated, UNREVOKED, 10, 10, [("foo", (1, 2, 3))], [("bar", (4, 5, 6))])


def test_a_member_with_only_an_unresolved_regex_revokes_everything():
    """Kafka: testUnresolvedRegularExpression."""
    m = member(STABLE, 10, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], topics=(), regex="bar*")
    updated = run(m, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], owned=[("foo", (1, 2, 3)), ("bar", (4, 5, 6))],
                  enforce=True)
    expect(updated, UNREVOKED, 10, 10, [], [("foo", (1, 2, 3)), ("bar", (4, 5, 6))])


def test_topics_of_a_resolved_regex_are_subscribed():
    """Kafka: testSubscribedTopicNameAndResolvedRegularExpression."""
    m = member(STABLE, 10, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], topics=("foo",), regex="bar*")
    updated = run(m, 10, [("foo", (1, 2, 3)), ("bar", (4, 5, 6))], owned=[("foo", (1, 2, 3)), ("bar", (4, 5, 6))],
                  enforce=True, resolved={"bar*": frozenset({"bar"})})
    assert updated is m


def test_kept_partitions_keep_their_assignment_epoch_and_new_ones_take_the_target_epoch():
    """KIP-1251 (Kafka 4.3): the epoch each partition was assigned at, which offset commits are checked against."""
    m = replace(member(STABLE, 10, 10, [("topic1", (1, 2))]), assigned_partitions={T1: {1: 7, 2: 10}})
    updated = run(m, 11, [("topic1", (1, 2, 3))])
    assert updated.assigned_partitions == {T1: {1: 7, 2: 10, 3: 11}}
