"""The decision table, cell by cell, against what Kafka's consumer does (AbstractCoordinator, ConsumerCoordinator)."""

import pytest

from client import errors as E
from client.decisions import Action, decide


@pytest.mark.parametrize(
    "api, error, action, reset_generation",
    [
        ("JoinGroup", E.NONE, Action.PROCEED, False),
        ("JoinGroup", E.MEMBER_ID_REQUIRED, Action.REJOIN, False),
        ("JoinGroup", E.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("JoinGroup", E.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("JoinGroup", E.INCONSISTENT_GROUP_PROTOCOL, Action.FAIL, False),
        ("JoinGroup", E.INVALID_SESSION_TIMEOUT, Action.FAIL, False),
        ("JoinGroup", E.GROUP_MAX_SIZE_REACHED, Action.FAIL, False),
        ("JoinGroup", E.COORDINATOR_LOAD_IN_PROGRESS, Action.RETRY, False),
        ("SyncGroup", E.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("SyncGroup", E.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("SyncGroup", E.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("SyncGroup", E.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("Heartbeat", E.NONE, Action.PROCEED, False),
        ("Heartbeat", E.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("Heartbeat", E.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("Heartbeat", E.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("Heartbeat", E.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("Heartbeat", E.NOT_COORDINATOR, Action.RETRY, False),
        ("OffsetCommit", E.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("OffsetCommit", E.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("OffsetCommit", E.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("OffsetCommit", E.BY_NAME["OFFSET_METADATA_TOO_LARGE"], Action.FAIL, False),
        ("OffsetCommit", E.COORDINATOR_NOT_AVAILABLE, Action.RETRY, False),
        ("LeaveGroup", E.UNKNOWN_MEMBER_ID, Action.PROCEED, False),
    ],
)
def test_reaction_matches_kafka_consumer(api, error, action, reset_generation):
    reaction = decide(api, error.code)
    assert (reaction.action, reaction.reset_generation) == (action, reset_generation)


def test_unlisted_codes_follow_the_retriable_flag():
    assert decide("Heartbeat", E.BY_NAME["NETWORK_EXCEPTION"]).action is Action.RETRY
    assert decide("Heartbeat", E.BY_NAME["GROUP_AUTHORIZATION_FAILED"]).action is Action.FAIL
    assert decide("JoinGroup", 9999).action is Action.FAIL


def test_errors_table_is_kafkas():
    assert E.for_code(27).name == "REBALANCE_IN_PROGRESS"
    assert E.for_code(79) is E.MEMBER_ID_REQUIRED
    assert E.for_code(15).retriable and not E.for_code(22).retriable
    assert E.for_code(12345).name == "UNKNOWN_ERROR_CODE_12345"
    codes = [e.code for e in E.ERRORS.values()]
    assert len(codes) == len(set(codes)) and set(range(-1, 114)) <= set(codes)
