"""Kafka's error codes (`Errors.java`), only those the classic group coordinator answers with.

The numbers are the wire contract: clients map them to the same retry/rejoin decisions Kafka clients make.
"""

from __future__ import annotations

NONE = 0
UNKNOWN_SERVER_ERROR = -1
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
GROUP_AUTHORIZATION_FAILED = 30
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
UNSUPPORTED_ASSIGNOR = 112


class CoordinatorError(Exception):
    """A request-level failure with Kafka's error code; handlers raise it to answer with that code, and
    nothing has been changed yet when it is raised (validation comes before mutation)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code
        self.message = message
