"""The decision table, cell by cell, against what Kafka's consumer does (AbstractCoordinator, ConsumerCoordinator)."""

import pytest

from client.decisions import Action, commit_error, decide, most_drastic
from client.errors import (
    ERRORS,
    CommitFailedError,
    FencedInstanceError,
    GroupError,
    RebalanceInProgressError,
    for_code,
)
from state.errors import Errors


@pytest.mark.parametrize(
    "api, error, action, reset_generation",
    [
        ("JoinGroup", Errors.NONE, Action.PROCEED, False),
        ("JoinGroup", Errors.MEMBER_ID_REQUIRED, Action.REJOIN, False),
        ("JoinGroup", Errors.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("JoinGroup", Errors.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("JoinGroup", Errors.INCONSISTENT_GROUP_PROTOCOL, Action.FAIL, False),
        ("JoinGroup", Errors.INVALID_SESSION_TIMEOUT, Action.FAIL, False),
        ("JoinGroup", Errors.GROUP_MAX_SIZE_REACHED, Action.FAIL, False),
        ("JoinGroup", Errors.COORDINATOR_LOAD_IN_PROGRESS, Action.RETRY, False),
        ("SyncGroup", Errors.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("SyncGroup", Errors.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("SyncGroup", Errors.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("SyncGroup", Errors.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("Heartbeat", Errors.NONE, Action.PROCEED, False),
        ("Heartbeat", Errors.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("Heartbeat", Errors.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("Heartbeat", Errors.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("Heartbeat", Errors.FENCED_INSTANCE_ID, Action.FENCED, True),
        ("Heartbeat", Errors.NOT_COORDINATOR, Action.RETRY, False),
        ("OffsetCommit", Errors.REBALANCE_IN_PROGRESS, Action.REJOIN, False),
        ("OffsetCommit", Errors.ILLEGAL_GENERATION, Action.REJOIN, True),
        ("OffsetCommit", Errors.UNKNOWN_MEMBER_ID, Action.RESET_MEMBER_ID, True),
        ("OffsetCommit", Errors.OFFSET_METADATA_TOO_LARGE, Action.FAIL, False),
        ("OffsetCommit", Errors.COORDINATOR_NOT_AVAILABLE, Action.RETRY, False),
        ("OffsetCommit", Errors.GROUP_ID_NOT_FOUND, Action.RAISE, False),
        ("LeaveGroup", Errors.UNKNOWN_MEMBER_ID, Action.PROCEED, False),
    ],
)
def test_reaction_matches_kafka_consumer(api, error, action, reset_generation):
    reaction = decide(api, error)
    assert (reaction.action, reaction.reset_generation) == (action, reset_generation)


def test_unlisted_codes_follow_the_retriable_flag():
    assert decide("Heartbeat", Errors.NETWORK_EXCEPTION).action is Action.RETRY
    assert decide("Heartbeat", Errors.GROUP_AUTHORIZATION_FAILED).action is Action.FAIL
    assert decide("JoinGroup", 9999).action is Action.FAIL


def test_errors_table_is_kafkas():
    assert for_code(27).name == "REBALANCE_IN_PROGRESS" and Errors.REBALANCE_IN_PROGRESS == 27
    assert for_code(Errors.MEMBER_ID_REQUIRED) is ERRORS[79]
    assert for_code(Errors.COORDINATOR_NOT_AVAILABLE).retriable and not for_code(Errors.ILLEGAL_GENERATION).retriable
    assert for_code(12345).name == "UNKNOWN_ERROR_CODE_12345"
    assert set(range(-1, 134)) == set(ERRORS) == set(Errors)
    assert all(ERRORS[e].name == e.name for e in Errors)


def test_every_description_is_whole():
    """A description is whole, or says with `...` that it was cut short: none stops inside a parenthesis unsaid."""
    cut = [e.name for e in ERRORS.values()
           if e.description.count("(") != e.description.count(")") and not e.description.endswith("...")]
    assert cut == []


@pytest.mark.parametrize(
    "codes, acted_on",
    [
        ({Errors.COORDINATOR_NOT_AVAILABLE, Errors.REBALANCE_IN_PROGRESS}, Errors.REBALANCE_IN_PROGRESS),
        ({Errors.COORDINATOR_NOT_AVAILABLE, Errors.GROUP_ID_NOT_FOUND}, Errors.GROUP_ID_NOT_FOUND),
        ({Errors.GROUP_ID_NOT_FOUND, Errors.REBALANCE_IN_PROGRESS}, Errors.REBALANCE_IN_PROGRESS),
        ({Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION}, Errors.ILLEGAL_GENERATION),
        ({Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID}, Errors.UNKNOWN_MEMBER_ID),
        ({Errors.UNKNOWN_MEMBER_ID, Errors.OFFSET_METADATA_TOO_LARGE}, Errors.OFFSET_METADATA_TOO_LARGE),
        ({Errors.OFFSET_METADATA_TOO_LARGE, Errors.FENCED_INSTANCE_ID}, Errors.FENCED_INSTANCE_ID),
    ],
)
def test_a_commit_acts_on_its_most_drastic_partition_error(codes, acted_on):
    assert most_drastic("OffsetCommit", codes) == acted_on


@pytest.mark.parametrize(
    "code, raised",
    [
        (Errors.REBALANCE_IN_PROGRESS, RebalanceInProgressError),
        (Errors.ILLEGAL_GENERATION, CommitFailedError),
        (Errors.UNKNOWN_MEMBER_ID, CommitFailedError),
        (Errors.FENCED_INSTANCE_ID, FencedInstanceError),
        (Errors.OFFSET_METADATA_TOO_LARGE, GroupError),
        (Errors.GROUP_ID_NOT_FOUND, GroupError),
    ],
)
def test_a_failed_commit_raises_what_kafkas_commit_sync_raises(code, raised):
    error = commit_error(decide("OffsetCommit", code), for_code(code))
    assert type(error) is raised and error.error.code == code and error.api == "OffsetCommit"
