"""What a group member does about a coordinator answer: a pure decision table, kept apart from all I/O.

The reactions are those of Kafka's Java consumer (`AbstractCoordinator` Join/Sync/Heartbeat response handlers and
`ConsumerCoordinator.OffsetCommitResponseHandler`). Keeping them in one table, instead of inside the methods that
send requests (as aiokafka's `_do_commit_offsets` does, which then needs a live broker to test), lets tests check every cell without a broker,
and lets a reader compare it with Kafka line by line.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from client.errors import (
    CommitFailedError,
    FencedInstanceError,
    GroupError,
    KafkaError,
    RebalanceInProgressError,
    for_code,
)
from state.errors import Errors


class Action(enum.Enum):
    PROCEED = "proceed"
    """Success: go on with the protocol."""
    RETRY = "retry"
    """Send the same request again after a backoff (coordinator busy or moving); nothing about the member changes."""
    RAISE = "raise"
    """This request fails and its caller gets the error; nothing about the member changes (Kafka's commitSync
    raising "Unexpected error in commit", after which the consumer carries on)."""
    REJOIN = "rejoin"
    """The group is rebalancing or moved on: (re-)send JoinGroup, keeping the member id."""
    RESET_MEMBER_ID = "reset_member_id"
    """The coordinator does not know this member: forget member id and generation, join as a new member."""
    FENCED = "fenced"
    """Another instance owns this `group_instance_id`: stop for good (Kafka raises FencedInstanceIdException)."""
    FAIL = "fail"
    """A configuration or programming error (bad protocol, session timeout, group id, group full): give up."""


@dataclass(frozen=True)
class Reaction:
    action: Action
    reset_generation: bool = False
    """The member's generation is no longer valid: its partitions are *lost* (not revoked; someone else may
    own them already), and offsets can no longer be committed with it. Kafka: `resetStateAndGeneration`."""


PROCEED = Reaction(Action.PROCEED)
RETRY = Reaction(Action.RETRY)
RAISE = Reaction(Action.RAISE)
REJOIN = Reaction(Action.REJOIN)
REJOIN_NEW_GENERATION = Reaction(Action.REJOIN, reset_generation=True)
RESET_MEMBER_ID = Reaction(Action.RESET_MEMBER_ID, reset_generation=True)
FENCED = Reaction(Action.FENCED, reset_generation=True)
FAIL = Reaction(Action.FAIL)

_COORDINATOR_GONE = {
    Errors.COORDINATOR_NOT_AVAILABLE: RETRY,
    Errors.NOT_COORDINATOR: RETRY,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: RETRY,
    Errors.REQUEST_TIMED_OUT: RETRY,
}

JOIN_GROUP: dict[int, Reaction] = {
    Errors.NONE: PROCEED,
    **_COORDINATOR_GONE,
    # KIP-394: the answer carries the member id to re-send JoinGroup with, at once.
    Errors.MEMBER_ID_REQUIRED: REJOIN,
    Errors.REBALANCE_IN_PROGRESS: REJOIN,
    Errors.UNKNOWN_MEMBER_ID: RESET_MEMBER_ID,
    Errors.ILLEGAL_GENERATION: RESET_MEMBER_ID,
    Errors.FENCED_INSTANCE_ID: FENCED,
    Errors.INCONSISTENT_GROUP_PROTOCOL: FAIL,
    Errors.INVALID_SESSION_TIMEOUT: FAIL,
    Errors.INVALID_GROUP_ID: FAIL,
    Errors.GROUP_MAX_SIZE_REACHED: FAIL,
}

SYNC_GROUP: dict[int, Reaction] = {
    Errors.NONE: PROCEED,
    **_COORDINATOR_GONE,
    # A new rebalance started between our JoinGroup and SyncGroup: join again, same member id.
    Errors.REBALANCE_IN_PROGRESS: REJOIN,
    Errors.UNKNOWN_MEMBER_ID: RESET_MEMBER_ID,
    # Kafka keeps the member id on ILLEGAL_GENERATION (KAFKA-13407) but drops the generation.
    Errors.ILLEGAL_GENERATION: REJOIN_NEW_GENERATION,
    Errors.FENCED_INSTANCE_ID: FENCED,
    Errors.INCONSISTENT_GROUP_PROTOCOL: FAIL,
    Errors.INVALID_GROUP_ID: FAIL,
}

HEARTBEAT: dict[int, Reaction] = {
    Errors.NONE: PROCEED,
    **_COORDINATOR_GONE,
    # The group is rebalancing: the member still owns its partitions (cooperative keeps them) and re-joins.
    Errors.REBALANCE_IN_PROGRESS: REJOIN,
    Errors.ILLEGAL_GENERATION: REJOIN_NEW_GENERATION,
    Errors.UNKNOWN_MEMBER_ID: RESET_MEMBER_ID,
    Errors.FENCED_INSTANCE_ID: FENCED,
    Errors.INVALID_GROUP_ID: FAIL,
}

OFFSET_COMMIT: dict[int, Reaction] = {
    Errors.NONE: PROCEED,
    **_COORDINATOR_GONE,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: RETRY,
    # Kafka raises RebalanceInProgressException: the commit is not retried, the member re-joins and the
    # application may commit again once it has its new assignment.
    Errors.REBALANCE_IN_PROGRESS: REJOIN,
    Errors.ILLEGAL_GENERATION: REJOIN_NEW_GENERATION,
    Errors.UNKNOWN_MEMBER_ID: RESET_MEMBER_ID,
    Errors.FENCED_INSTANCE_ID: FENCED,
    Errors.OFFSET_METADATA_TOO_LARGE: FAIL,
    Errors.INVALID_COMMIT_OFFSET_SIZE: FAIL,
    Errors.INVALID_GROUP_ID: FAIL,
    # v9+: the group no longer exists (v8 answers ILLEGAL_GENERATION). Kafka's consumer has no case for it: the
    # commit raises "Unexpected error in commit" and the member goes on; its next heartbeat learns that it is
    # unknown, and it joins again.
    Errors.GROUP_ID_NOT_FOUND: RAISE,
}

LEAVE_GROUP: dict[int, Reaction] = {
    # Leaving is best effort, as in Kafka: whatever the answer, the member forgets its id.
    Errors.NONE: PROCEED,
    Errors.UNKNOWN_MEMBER_ID: PROCEED,
    Errors.FENCED_INSTANCE_ID: PROCEED,
    **_COORDINATOR_GONE,
}

TABLES: dict[str, dict[int, Reaction]] = {
    "JoinGroup": JOIN_GROUP,
    "SyncGroup": SYNC_GROUP,
    "Heartbeat": HEARTBEAT,
    "OffsetCommit": OFFSET_COMMIT,
    "LeaveGroup": LEAVE_GROUP,
}


def decide(api: str, error: KafkaError | int) -> Reaction:
    """The member's reaction to `error` in a response to `api`. Codes the table does not name: retriable
    ones are retried (as Kafka does for any RetriableException), anything else fails."""
    err = error if isinstance(error, KafkaError) else for_code(error)
    reaction = TABLES[api].get(err.code)
    if reaction is not None:
        return reaction
    return RETRY if err.retriable else FAIL


_SEVERITY = {
    Action.PROCEED: 0,
    Action.RETRY: 1,
    Action.RAISE: 2,
    Action.REJOIN: 3,
    Action.RESET_MEMBER_ID: 4,
    Action.FAIL: 5,
    Action.FENCED: 6,
}


def most_drastic(api: str, codes: Iterable[int]) -> int:
    """Of several errors in one answer (an OffsetCommit's partitions), the one to act on: the most drastic
    reaction, a generation reset breaking ties."""
    def severity(code: int) -> tuple[int, bool]:
        reaction = decide(api, code)
        return _SEVERITY[reaction.action], reaction.reset_generation

    return max(codes, key=severity)


def commit_error(reaction: Reaction, error: KafkaError) -> GroupError:
    """What a commit raises for a reaction other than PROCEED or RETRY, as Kafka's commitSync does: re-join and
    commit again (the generation stands), the generation is gone, fenced, or any other failure (RAISE among them:
    only this commit failed)."""
    if reaction.action is Action.REJOIN and not reaction.reset_generation:
        return RebalanceInProgressError(error, "OffsetCommit")
    if reaction.action in (Action.REJOIN, Action.RESET_MEMBER_ID):
        return CommitFailedError(error, "OffsetCommit", "the group has moved on to a new generation")
    if reaction.action is Action.FENCED:
        return FencedInstanceError(error, "OffsetCommit")
    return GroupError(error, "OffsetCommit")
