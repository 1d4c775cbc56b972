"""Kafka's error codes by name: `Errors.REBALANCE_IN_PROGRESS` is 27, on the wire and in every test.

`Errors` is Kafka's `org.apache.kafka.common.protocol.Errors` (names and numbers, every code up to 128); the
numbers are the wire contract, so a client maps them to the same retry/rejoin decisions Kafka clients make. It is
the one definition: the core answers with its members (imported by the short names below), `client.errors` adds
what a client decides on (`retriable`, a description), and tests compare `response["error_code"]` with them. An
`IntEnum` member is an `int`: it encodes as its number in JSON and equals the number a decoded response carries.
"""

from __future__ import annotations

import enum


class Errors(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICATION_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133


# The codes the core answers with, by their short names: `from state.errors import UNKNOWN_MEMBER_ID` binds the
# same member as `Errors.UNKNOWN_MEMBER_ID`, so each number is still defined once. The core reads them on every
# request, and on Python 3.11 a module-level name is read about 20 times faster than `Errors.X` (EnumType's
# __getattr__ puts every class attribute read on a slow path; 3.12 dropped it): core_bench's batched commits
# measured 3-4% slower with `Errors.X` in state/offsets/handlers.py. Client code and tests write `Errors.X`.
FENCED_INSTANCE_ID = Errors.FENCED_INSTANCE_ID
GROUP_AUTHORIZATION_FAILED = Errors.GROUP_AUTHORIZATION_FAILED
GROUP_ID_NOT_FOUND = Errors.GROUP_ID_NOT_FOUND
GROUP_MAX_SIZE_REACHED = Errors.GROUP_MAX_SIZE_REACHED
GROUP_SUBSCRIBED_TO_TOPIC = Errors.GROUP_SUBSCRIBED_TO_TOPIC
ILLEGAL_GENERATION = Errors.ILLEGAL_GENERATION
INCONSISTENT_GROUP_PROTOCOL = Errors.INCONSISTENT_GROUP_PROTOCOL
INVALID_GROUP_ID = Errors.INVALID_GROUP_ID
INVALID_REQUEST = Errors.INVALID_REQUEST
INVALID_SESSION_TIMEOUT = Errors.INVALID_SESSION_TIMEOUT
MEMBER_ID_REQUIRED = Errors.MEMBER_ID_REQUIRED
NON_EMPTY_GROUP = Errors.NON_EMPTY_GROUP
NONE = Errors.NONE
OFFSET_METADATA_TOO_LARGE = Errors.OFFSET_METADATA_TOO_LARGE
REBALANCE_IN_PROGRESS = Errors.REBALANCE_IN_PROGRESS
UNKNOWN_MEMBER_ID = Errors.UNKNOWN_MEMBER_ID
UNKNOWN_SERVER_ERROR = Errors.UNKNOWN_SERVER_ERROR
UNSTABLE_OFFSET_COMMIT = Errors.UNSTABLE_OFFSET_COMMIT
COORDINATOR_NOT_AVAILABLE = Errors.COORDINATOR_NOT_AVAILABLE
UNSUPPORTED_ASSIGNOR = Errors.UNSUPPORTED_ASSIGNOR
UNSUPPORTED_VERSION = Errors.UNSUPPORTED_VERSION


_TOO_LARGE = frozenset({Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE})


def append_error(api: str, code: int | None) -> Errors:
    """The error a group request gets when the log would not take its record (`code`: the log's error, None when
    unknown), as Kafka's GroupCoordinatorService maps its log's failures. A record too large fails the same way
    on every retry, so it gets a non-retriable error: INVALID_COMMIT_OFFSET_SIZE for a commit (a client retrying
    15 on each of 50,000 partitions retried forever), UNKNOWN_SERVER_ERROR for the rest. Anything else may pass:
    COORDINATOR_NOT_AVAILABLE, which clients retry after looking the coordinator up again."""
    if code in _TOO_LARGE:
        return Errors.INVALID_COMMIT_OFFSET_SIZE if api in ("OffsetCommit", "TxnOffsetCommit") \
            else Errors.UNKNOWN_SERVER_ERROR
    return Errors.COORDINATOR_NOT_AVAILABLE


class CoordinatorError(Exception):
    """A request-level failure with Kafka's error code; handlers raise it to answer with that code, and
    nothing has been changed yet when it is raised (validation comes before mutation)."""

    def __init__(self, code: Errors, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message


class ReplayError(Exception):
    """A record that cannot apply to the group it names (a bug in a handler, or a records log out of order)."""
