"""ShareGroupHeartbeat, as Kafka's GroupMetadataManagerTest specifies it for share groups (in our words): joining,
rejoining at epoch 0, leaving, the session timeout, the group's size limit, partitions shared by more members than
there are partitions, new partitions joining the assignment, the assignment interval, and the request checks."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from state.errors import Errors
from state.share.group import ShareGroupState
from tests.state.share.support import BAR, FOO, T, Share, image


def assigned(response) -> dict[str, tuple[int, ...]]:
    return {tp.topic_id: tp.partitions for tp in response.assignment.topic_partitions}


def test_first_member_joins_and_gets_every_partition_at_once():
    """Initialisation is synchronous: the answer that subscribes already assigns."""
    s = Share()
    r = s.heartbeat("m1", 0, ("foo",))
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (0, "m1", 1, 5000)
    assert assigned(r) == {FOO: (0,)}
    assert s.group.state is ShareGroupState.STABLE
    assert s.group.initialized[FOO].partitions == frozenset({0})
    assert s.timers["share-session-timeout:m1"] == T + 45000


def test_three_members_share_one_partition():
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    s.heartbeat("m2", 0, ("foo",))
    r3 = s.heartbeat("m3", 0, ("foo",))
    assert assigned(r3) == {FOO: (0,)} and r3.member_epoch == 3
    for member in ("m1", "m2"):  # each learns the new epoch at its next heartbeat, with the same partition
        r = s.heartbeat(member, s.group.members[member].member_epoch)
        assert r.member_epoch == 3 and r.assignment is None


def test_member_can_rejoin_with_epoch_zero():
    """testShareGroupMemberCanRejoinWithEpochZero."""
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    r = s.heartbeat("m1", 0, ("foo",))
    assert r.error_code == 0 and r.member_epoch == 1 and assigned(r) == {FOO: (0,)}


def test_leaving_member_bumps_group_epoch():
    """testShareGroupLeavingMemberBumpsGroupEpoch: its records are tombstoned, the epoch goes up, -1 answered."""
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    s.heartbeat("m2", 0, ("foo",))
    r = s.heartbeat("m2", -1)
    assert (r.error_code, r.member_epoch) == (0, -1)
    assert set(s.group.members) == {"m1"} and s.group.group_epoch == 3
    assert "share-session-timeout:m2" not in s.timers


def test_session_timeout_fences_the_member():
    """testSessionTimeoutExpirationForShareMember."""
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    s.fire(T + 44_999)
    assert "m1" in s.group.members
    s.fire(T + 45_000)
    assert not s.group.members and s.group.state is ShareGroupState.EMPTY
    s.now = T + 45_001
    assert s.heartbeat("m1", 1).error_code == Errors.UNKNOWN_MEMBER_ID


def test_new_member_rejected_at_maximum_size():
    """testShareGroupNewMemberIsRejectedWithMaximumMembersIsReached; an existing member still heartbeats."""
    s = Share(config=CoordinatorConfig(group_share_max_size=1, group_share_assignment_interval_ms=0))
    s.heartbeat("m1", 0, ("foo",))
    assert s.heartbeat("m2", 0, ("foo",)).error_code == Errors.GROUP_MAX_SIZE_REACHED
    assert s.heartbeat("m1", 1).error_code == 0


def test_new_partitions_join_the_assignment():
    """testShareGroupHeartbeatInitializeOnPartitionUpdate: a topic that grows is initialised again and its new
    partitions are assigned at the next heartbeat."""
    s = Share()
    s.heartbeat("m1", 0, ("foo",))
    s.image = image(foo=(FOO, 3))
    r = s.heartbeat("m1", 1)
    assert assigned(r) == {FOO: (0, 1, 2)} and r.member_epoch == 2
    assert s.group.initialized[FOO].partitions == frozenset({0, 1, 2})


def test_subscription_change_reassigns():
    s = Share(image=image(foo=(FOO, 1), bar=(BAR, 2)))
    s.heartbeat("m1", 0, ("foo",))
    r = s.heartbeat("m1", 1, ("foo", "bar"))
    assert assigned(r) == {BAR: (0, 1), FOO: (0,)}
    r = s.heartbeat("m1", r.member_epoch, ("bar",))
    assert assigned(r) == {BAR: (0, 1)}


def test_assignment_interval_puts_the_target_off():
    """KIP-1263: at most one target computation per interval; the timer computes it, members learn of it at
    their next heartbeat."""
    s = Share(config=CoordinatorConfig(group_share_assignment_interval_ms=1000))
    s.heartbeat("m1", 0, ("foo",))
    s.now = T + 10
    r2 = s.heartbeat("m2", 0, ("foo",))
    assert r2.member_epoch == 1 and assigned(r2) == {}
    assert s.timers["share-assignment"] == T + 1000
    s.fire(T + 1000)
    s.now = T + 1001
    r2 = s.heartbeat("m2", 1)
    assert r2.member_epoch == 2 and assigned(r2) == {FOO: (0,)}


@pytest.mark.parametrize("member, epoch, topics, rack, message", [
    ("", 0, ("foo",), None, "MemberId can't be empty."),
    ("m1", 0, ("foo",), "", "RackId can't be empty."),
    ("m1", 0, None, None, "SubscribedTopicNames must be set in first request."),
    ("m1", 0, (), None, "SubscribedTopicNames must be set in first request."),
    ("m1", -2, None, None, "MemberEpoch is invalid."),
])
def test_invalid_requests(member, epoch, topics, rack, message):
    r = Share().heartbeat(member, epoch, topics, rack=rack)
    assert (r.error_code, r.error_message) == (Errors.INVALID_REQUEST, message)


def test_unknown_group_member_and_fenced_epochs():
    s = Share()
    assert s.heartbeat("m1", 1).error_code == Errors.GROUP_ID_NOT_FOUND
    assert s.heartbeat("m1", -1).error_code == Errors.GROUP_ID_NOT_FOUND
    s.heartbeat("m1", 0, ("foo",))
    assert s.heartbeat("m2", 1).error_code == Errors.UNKNOWN_MEMBER_ID
    assert s.heartbeat("m1", 2).error_code == Errors.FENCED_MEMBER_EPOCH
    s.heartbeat("m2", 0, ("foo",))
    # m1 is at epoch 1 still (its previous epoch 0); epoch 2 for it would be the future
    assert s.heartbeat("m1", 1).member_epoch == 2
    assert s.heartbeat("m1", 1).error_code == 0  # the previous epoch: its answer may have been lost
    assert s.heartbeat("m1", 0, ("foo",)).error_code == 0


def test_a_member_acts_only_for_its_principal():
    s = Share()
    s.heartbeat("m1", 0, ("foo",), principal="User:alice")
    assert s.heartbeat("m1", 1, principal="User:mallory").error_code == Errors.GROUP_AUTHORIZATION_FAILED
    assert s.heartbeat("m1", -1, principal="User:mallory").error_code == Errors.GROUP_AUTHORIZATION_FAILED
    assert s.heartbeat("m1", 1, principal="User:alice").error_code == 0
