"""Share sessions as a Kafka broker keeps them (after SharePartitionManagerTest's `testNewContext*` and
`testAcknowledgeSessionUpdate*`, ShareSessionCacheTest, and the reference's §2 "Share sessions")."""

from __future__ import annotations

import pytest

from gateway.share.sessions import INT32_MAX, SessionError, ShareSessions, next_epoch
from state.api import Errors

KEY = (1, "g", "member-1")
T0, T1 = ("topic-a", 0), ("topic-a", 1)


def error_of(call, *args) -> Errors:
    with pytest.raises(SessionError) as raised:
        call(*args)
    return raised.value.code


def test_epoch_0_opens_with_the_partitions_named_and_expects_1():
    sessions = ShareSessions()
    session = sessions.fetch(KEY, "c1", 0, [T0, T1], [], acknowledging=False)
    assert session.epoch == 1
    assert list(session.partitions) == [T0, T1]


def test_acknowledgements_at_epoch_0_are_an_invalid_request():
    assert error_of(ShareSessions().fetch, KEY, "c1", 0, [T0], [], True) == Errors.INVALID_REQUEST


def test_epoch_n_without_a_session_is_share_session_not_found():
    sessions = ShareSessions()
    assert error_of(sessions.fetch, KEY, "c1", 1, [], [], False) == Errors.SHARE_SESSION_NOT_FOUND
    assert error_of(sessions.fetch, KEY, "c1", -1, [], [], False) == Errors.SHARE_SESSION_NOT_FOUND
    assert error_of(sessions.acknowledge, KEY, 3) == Errors.SHARE_SESSION_NOT_FOUND
    assert error_of(sessions.acknowledge, KEY, -1) == Errors.SHARE_SESSION_NOT_FOUND


def test_a_wrong_epoch_is_invalid_and_changes_nothing():
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    assert error_of(sessions.fetch, KEY, "c1", 2, [T1], [], False) == Errors.INVALID_SHARE_SESSION_EPOCH
    session = sessions.fetch(KEY, "c1", 1, [], [], False)
    assert session.epoch == 2 and list(session.partitions) == [T0]


def test_later_epochs_add_and_forget_and_share_one_counter_with_acknowledge():
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    assert list(sessions.fetch(KEY, "c1", 1, [T1], [], False).partitions) == [T0, T1]
    assert sessions.acknowledge(KEY, 2).epoch == 3
    assert list(sessions.fetch(KEY, "c1", 3, [], [T0], False).partitions) == [T1]
    assert error_of(sessions.acknowledge, KEY, 3) == Errors.INVALID_SHARE_SESSION_EPOCH


def test_the_same_partition_in_topics_and_forgotten_is_forgotten():
    """librdkafka may name a topic id in both lists: added first, then forgotten, as Kafka's ShareSession.update."""
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    assert list(sessions.fetch(KEY, "c1", 1, [T1], [T1], False).partitions) == [T0]


def test_acknowledge_at_epoch_0_is_an_invalid_epoch():
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    assert error_of(sessions.acknowledge, KEY, 0) == Errors.INVALID_SHARE_SESSION_EPOCH


def test_the_epoch_wraps_to_1():
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(7) == 8


def test_epoch_0_replaces_the_session_and_the_old_connection_no_longer_closes_it():
    """KAFKA-19950: the member reconnected and opened a new session; the old connection's close is stale."""
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    sessions.fetch(KEY, "c1", 1, [], [], False)
    replaced = sessions.fetch(KEY, "c2", 0, [T1], [], False)
    assert replaced.epoch == 1 and list(replaced.partitions) == [T1]
    assert sessions.disconnected("c1") == []
    assert sessions.get(KEY) is replaced
    assert [s.key for s in sessions.disconnected("c2")] == [KEY]
    assert sessions.get(KEY) is None


def test_a_closed_connection_closes_every_session_it_opened():
    sessions = ShareSessions()
    other = (1, "h", "member-9")
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    sessions.fetch(other, "c1", 0, [T1], [], False)
    closed = sessions.disconnected("c1")
    assert sorted(s.key for s in closed) == sorted([KEY, other])
    assert len(sessions) == 0


def test_final_epoch_returns_the_session_open_until_closed():
    sessions = ShareSessions()
    sessions.fetch(KEY, "c1", 0, [T0], [], False)
    session = sessions.acknowledge(KEY, -1)
    assert sessions.get(KEY) is session
    assert sessions.close(KEY) is session
    assert sessions.get(KEY) is None and sessions.disconnected("c1") == []


def test_sessions_are_per_node_group_and_member():
    sessions = ShareSessions()
    sessions.fetch((1, "g", "m"), "c1", 0, [T0], [], False)
    sessions.fetch((2, "g", "m"), "c2", 0, [T1], [], False)
    assert sessions.fetch((1, "g", "m"), "c1", 1, [], [], False).partitions == {T0: None}
    assert sessions.sessions_of("g", T0) == 1 and sessions.sessions_of("g", T1) == 1


def test_the_session_limit():
    sessions = ShareSessions(max_sessions=2)
    sessions.fetch((1, "g", "a"), "c1", 0, [T0], [], False)
    sessions.fetch((1, "g", "b"), "c2", 0, [T0], [], False)
    assert error_of(sessions.fetch, (1, "g", "c"), "c3", 0, [T0], [], False) == Errors.SHARE_SESSION_LIMIT_REACHED
    # replacing one's own session is not a new one
    assert sessions.fetch((1, "g", "a"), "c1", 0, [T1], [], False).epoch == 1
