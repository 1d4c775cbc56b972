"""Kafka's error codes as data: one entry per code, with the flags a client decides on.

Modelled on aiokafka's `errors.py` (one entry per broker error, `retriable`, a `for_code` lookup), but as a table
of frozen values rather than a class per code: the coordinator answers with numeric `error_code`s in JSON, and
what the client does about one is decided in `client.decisions`, not here. Names and codes are those of Kafka's
`org.apache.kafka.common.protocol.Errors`; `retriable` follows Kafka's `RetriableException` hierarchy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaError:
    """One Kafka error code. `retriable`: the same request may succeed if simply sent again later."""

    code: int
    name: str
    retriable: bool
    description: str

    def __str__(self) -> str:
        return f"{self.name}({self.code})"


_TABLE: tuple[KafkaError, ...] = (
    KafkaError(-1, "UNKNOWN_SERVER_ERROR", False, 'An unexpected server error'),
    KafkaError(0, "NONE", False, 'No error--it worked!'),
    KafkaError(1, "OFFSET_OUT_OF_RANGE", False, 'The requested offset is outside the range of offsets maintained by the server for the...'),
    KafkaError(2, "CORRUPT_MESSAGE", False, 'This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt'),
    KafkaError(3, "UNKNOWN_TOPIC_OR_PARTITION", True, 'This request is for a topic or partition that does not exist on this broker'),
    KafkaError(4, "INVALID_FETCH_SIZE", False, 'The message has a negative size'),
    KafkaError(5, "LEADER_NOT_AVAILABLE", True, 'This error is thrown if we are in the middle of a leadership election and there is...'),
    KafkaError(6, "NOT_LEADER_OR_FOLLOWER", True, 'This error is thrown if the client attempts to send messages to a replica that is not...'),
    KafkaError(7, "REQUEST_TIMED_OUT", True, 'This error is thrown if the request exceeds the user-specified time limit in the request'),
    KafkaError(8, "BROKER_NOT_AVAILABLE", False, 'This is not a client facing error and is used mostly by tools when a broker is not alive'),
    KafkaError(9, "REPLICA_NOT_AVAILABLE", True, 'If replica is expected on a broker, but is not (this can be safely ignored)'),
    KafkaError(10, "MESSAGE_TOO_LARGE", False, 'The server has a configurable maximum message size to avoid unbounded memory allocation'),
    KafkaError(11, "STALE_CONTROLLER_EPOCH", False, 'Internal error code for broker-to-broker communication'),
    KafkaError(12, "OFFSET_METADATA_TOO_LARGE", False, 'If you specify a string larger than configured maximum for offset metadata'),
    KafkaError(13, "NETWORK_EXCEPTION", True, ''),
    KafkaError(14, "COORDINATOR_LOAD_IN_PROGRESS", True, 'The broker returns this error code for txn or group requests, when the coordinator is...'),
    KafkaError(15, "COORDINATOR_NOT_AVAILABLE", True, 'The broker returns this error code for consumer and transaction requests if the...'),
    KafkaError(16, "NOT_COORDINATOR", True, 'The broker returns this error code if it is not the correct coordinator for the...'),
    KafkaError(17, "INVALID_TOPIC", False, 'For a request which attempts to access an invalid topic (e.g'),
    KafkaError(18, "RECORD_LIST_TOO_LARGE", False, 'If a message batch in a produce request exceeds the maximum configured segment size'),
    KafkaError(19, "NOT_ENOUGH_REPLICAS", True, 'Returned from a produce request when the number of in-sync replicas is lower than the...'),
    KafkaError(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, 'Returned from a produce request when the message was written to the log, but with...'),
    KafkaError(21, "INVALID_REQUIRED_ACKS", False, 'Returned from a produce request if the requested requiredAcks is invalid (anything...'),
    KafkaError(22, "ILLEGAL_GENERATION", False, 'Returned from group membership requests (such as heartbeats) when the generation id...'),
    KafkaError(23, "INCONSISTENT_GROUP_PROTOCOL", False, 'Returned in join group when the member provides a protocol type or set of protocols...'),
    KafkaError(24, "INVALID_GROUP_ID", False, 'Returned in join group when the groupId is empty or null'),
    KafkaError(25, "UNKNOWN_MEMBER_ID", False, 'Returned from group requests (offset commits/fetches, heartbeats, etc) when the...'),
    KafkaError(26, "INVALID_SESSION_TIMEOUT", False, 'Return in join group when the requested session timeout is outside of the allowed...'),
    KafkaError(27, "REBALANCE_IN_PROGRESS", False, 'Returned in heartbeat requests when the coordinator has begun rebalancing the group'),
    KafkaError(28, "INVALID_COMMIT_OFFSET_SIZE", False, 'This error indicates that an offset commit was rejected because of oversize metadata'),
    KafkaError(29, "TOPIC_AUTHORIZATION_FAILED", False, 'Returned by the broker when the client is not authorized to access the requested topic'),
    KafkaError(30, "GROUP_AUTHORIZATION_FAILED", False, 'Returned by the broker when the client is not authorized to access a particular groupId'),
    KafkaError(31, "CLUSTER_AUTHORIZATION_FAILED", False, 'Returned by the broker when the client is not authorized to use an inter-broker or...'),
    KafkaError(32, "INVALID_TIMESTAMP", False, 'The timestamp of the message is out of acceptable range'),
    KafkaError(33, "UNSUPPORTED_SASL_MECHANISM", False, 'The broker does not support the requested SASL mechanism'),
    KafkaError(34, "ILLEGAL_SASL_STATE", False, 'Request is not valid given the current SASL state'),
    KafkaError(35, "UNSUPPORTED_VERSION", False, 'The version of API is not supported'),
    KafkaError(36, "TOPIC_ALREADY_EXISTS", False, 'Topic with this name already exists'),
    KafkaError(37, "INVALID_PARTITIONS", False, 'Number of partitions is invalid'),
    KafkaError(38, "INVALID_REPLICATION_FACTOR", False, 'Replication-factor is invalid'),
    KafkaError(39, "INVALID_REPLICATION_ASSIGNMENT", False, 'Replication assignment is invalid'),
    KafkaError(40, "INVALID_CONFIG", False, 'Configuration is invalid'),
    KafkaError(41, "NOT_CONTROLLER", True, 'This is not the correct controller for this cluster'),
    KafkaError(42, "INVALID_REQUEST", False, 'This most likely occurs because of a request being malformed by the client library or...'),
    KafkaError(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False, 'The message format version on the broker does not support this request'),
    KafkaError(44, "POLICY_VIOLATION", False, 'Request parameters do not satisfy the configured policy'),
    KafkaError(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, 'The broker received an out of order sequence number'),
    KafkaError(46, "DUPLICATE_SEQUENCE_NUMBER", False, 'The broker received a duplicate sequence number'),
    KafkaError(47, "INVALID_PRODUCER_EPOCH", False, 'Producer attempted to produce with an old epoch'),
    KafkaError(48, "INVALID_TXN_STATE", False, 'The producer attempted a transactional operation in an invalid state'),
    KafkaError(49, "INVALID_PRODUCER_ID_MAPPING", False, 'The producer attempted to use a producer id which is not currently assigned to its...'),
    KafkaError(50, "INVALID_TRANSACTION_TIMEOUT", False, 'The transaction timeout is larger than the maximum value allowed by the broker (as...'),
    KafkaError(51, "CONCURRENT_TRANSACTIONS", True, 'The producer attempted to update a transaction while another concurrent operation on...'),
    KafkaError(52, "TRANSACTION_COORDINATOR_FENCED", False, 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the...'),
    KafkaError(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, 'Transactional Id authorization failed'),
    KafkaError(54, "SECURITY_DISABLED", False, 'Security features are disabled'),
    KafkaError(55, "OPERATION_NOT_ATTEMPTED", False, 'The broker did not attempt to execute this operation'),
    KafkaError(56, "KAFKA_STORAGE_ERROR", True, 'Disk error when trying to access log file on the disk'),
    KafkaError(57, "LOG_DIR_NOT_FOUND", False, 'The user-specified log directory is not found in the broker config'),
    KafkaError(58, "SASL_AUTHENTICATION_FAILED", False, 'SASL Authentication failed'),
    KafkaError(59, "UNKNOWN_PRODUCER_ID", False, 'This exception is raised by the broker if it could not locate the producer metadata...'),
    KafkaError(60, "REASSIGNMENT_IN_PROGRESS", False, 'A partition reassignment is in progress'),
    KafkaError(61, "DELEGATION_TOKEN_AUTH_DISABLED", False, 'Delegation Token feature is not enabled'),
    KafkaError(62, "DELEGATION_TOKEN_NOT_FOUND", False, 'Delegation Token is not found on server'),
    KafkaError(63, "DELEGATION_TOKEN_OWNER_MISMATCH", False, 'Specified Principal is not valid Owner/Renewer'),
    KafkaError(64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False, 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on...'),
    KafkaError(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, 'Delegation Token authorization failed'),
    KafkaError(66, "DELEGATION_TOKEN_EXPIRED", False, 'Delegation Token is expired'),
    KafkaError(67, "INVALID_PRINCIPAL_TYPE", False, 'Supplied principalType is not supported'),
    KafkaError(68, "NON_EMPTY_GROUP", False, 'The group is not empty'),
    KafkaError(69, "GROUP_ID_NOT_FOUND", False, 'The group id does not exist'),
    KafkaError(70, "FETCH_SESSION_ID_NOT_FOUND", True, 'The fetch session ID was not found'),
    KafkaError(71, "INVALID_FETCH_SESSION_EPOCH", True, 'The fetch session epoch is invalid'),
    KafkaError(72, "LISTENER_NOT_FOUND", True, 'There is no listener on the leader broker that matches the listener on which metadata...'),
    KafkaError(73, "TOPIC_DELETION_DISABLED", False, 'Topic deletion is disabled'),
    KafkaError(74, "FENCED_LEADER_EPOCH", True, 'The leader epoch in the request is older than the epoch on the broker'),
    KafkaError(75, "UNKNOWN_LEADER_EPOCH", True, 'The leader epoch in the request is newer than the epoch on the broker'),
    KafkaError(76, "UNSUPPORTED_COMPRESSION_TYPE", False, 'The requesting client does not support the compression type of given partition'),
    KafkaError(77, "STALE_BROKER_EPOCH", False, 'Broker epoch has changed'),
    KafkaError(78, "OFFSET_NOT_AVAILABLE", True, 'The leader high watermark has not caught up from a recent leader election so the...'),
    KafkaError(79, "MEMBER_ID_REQUIRED", False, 'The group member needs to have a valid member id before actually entering a consumer group'),
    KafkaError(80, "PREFERRED_LEADER_NOT_AVAILABLE", True, 'The preferred leader was not available'),
    KafkaError(81, "GROUP_MAX_SIZE_REACHED", False, 'The consumer group has reached its max size'),
    KafkaError(82, "FENCED_INSTANCE_ID", False, 'The broker rejected this static consumer since another consumer with the same...'),
    KafkaError(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, 'Eligible topic partition leaders are not available'),
    KafkaError(84, "ELECTION_NOT_NEEDED", True, 'Leader election not needed for topic partition'),
    KafkaError(85, "NO_REASSIGNMENT_IN_PROGRESS", False, 'No partition reassignment is in progress'),
    KafkaError(86, "GROUP_SUBSCRIBED_TO_TOPIC", False, 'Deleting offsets of a topic is forbidden while the consumer group is actively...'),
    KafkaError(87, "INVALID_RECORD", False, 'This record has failed the validation on broker and hence will be rejected'),
    KafkaError(88, "UNSTABLE_OFFSET_COMMIT", True, 'There are unstable offsets that need to be cleared'),
    KafkaError(89, "THROTTLING_QUOTA_EXCEEDED", True, 'The throttling quota has been exceeded'),
    KafkaError(90, "PRODUCER_FENCED", False, 'There is a newer producer with the same transactionalId which fences the current one'),
    KafkaError(91, "RESOURCE_NOT_FOUND", False, 'A request illegally referred to a resource that does not exist'),
    KafkaError(92, "DUPLICATE_RESOURCE", False, 'A request illegally referred to the same resource twice'),
    KafkaError(93, "UNACCEPTABLE_CREDENTIAL", False, 'Requested credential would not meet criteria for acceptability'),
    KafkaError(94, "INCONSISTENT_VOTER_SET", False, 'Indicates that the either the sender or recipient of a voter-only request is not one...'),
    KafkaError(95, "INVALID_UPDATE_VERSION", False, 'The given update version was invalid'),
    KafkaError(96, "FEATURE_UPDATE_FAILED", False, 'Unable to update finalized features due to an unexpected server error'),
    KafkaError(97, "PRINCIPAL_DESERIALIZATION_FAILURE", False, 'Request principal deserialization failed during forwarding'),
    KafkaError(98, "SNAPSHOT_NOT_FOUND", False, 'Requested snapshot was not found'),
    KafkaError(99, "POSITION_OUT_OF_RANGE", False, 'Requested position is not greater than or equal to zero, and less than the size of the...'),
    KafkaError(100, "UNKNOWN_TOPIC_ID", True, 'This server does not host this topic ID'),
    KafkaError(101, "DUPLICATE_BROKER_REGISTRATION", False, 'This broker ID is already in use'),
    KafkaError(102, "BROKER_ID_NOT_REGISTERED", False, 'The given broker ID was not registered'),
    KafkaError(103, "INCONSISTENT_TOPIC_ID", True, "The log's topic ID did not match the topic ID in the request"),
    KafkaError(104, "INCONSISTENT_CLUSTER_ID", False, 'The clusterId in the request does not match that found on the server'),
    KafkaError(105, "TRANSACTIONAL_ID_NOT_FOUND", False, 'The transactionalId could not be found'),
    KafkaError(106, "FETCH_SESSION_TOPIC_ID_ERROR", True, 'The fetch session encountered inconsistent topic ID usage'),
    KafkaError(107, "INELIGIBLE_REPLICA", False, 'The new ISR contains at least one ineligible replica'),
    KafkaError(108, "NEW_LEADER_ELECTED", False, 'The AlterPartition request successfully updated the partition state but the leader has...'),
    KafkaError(109, "OFFSET_MOVED_TO_TIERED_STORAGE", False, 'The requested offset is moved to tiered storage'),
    KafkaError(110, "FENCED_MEMBER_EPOCH", False, 'The member epoch is fenced by the group coordinator'),
    KafkaError(111, "UNRELEASED_INSTANCE_ID", False, 'The instance ID is still used by another member in the consumer group'),
    KafkaError(112, "UNSUPPORTED_ASSIGNOR", False, 'The assignor or its version range is not supported by the consumer group'),
    KafkaError(113, "STALE_MEMBER_EPOCH", False, 'The member epoch is stale'),
    KafkaError(114, "MISMATCHED_ENDPOINT_TYPE", False, 'The request was sent to an endpoint of the wrong type'),
    KafkaError(115, "UNSUPPORTED_ENDPOINT_TYPE", False, 'This endpoint type is not supported yet'),
    KafkaError(116, "UNKNOWN_CONTROLLER_ID", False, 'This controller ID is not known'),
    KafkaError(117, "UNKNOWN_SUBSCRIPTION_ID", False, 'Client sent a push telemetry request with an invalid or outdated subscription ID'),
    KafkaError(118, "TELEMETRY_TOO_LARGE", False, 'Client sent a push telemetry request larger than the maximum size the broker will accept'),
    KafkaError(119, "INVALID_REGISTRATION", False, 'The controller has considered the broker registration to be invalid'),
    KafkaError(120, "TRANSACTION_ABORTABLE", False, 'The server encountered an error with the transaction'),
    KafkaError(121, "INVALID_RECORD_STATE", False, 'The record state is invalid'),
    KafkaError(122, "SHARE_SESSION_NOT_FOUND", True, 'The share session was not found'),
    KafkaError(123, "INVALID_SHARE_SESSION_EPOCH", True, 'The share session epoch is invalid'),
    KafkaError(124, "FENCED_STATE_EPOCH", False, 'The share coordinator rejected the request because the share-group state epoch did not...'),
    KafkaError(125, "INVALID_VOTER_KEY", False, "The voter key doesn't match the receiving replica's key"),
    KafkaError(126, "DUPLICATE_VOTER", False, 'The voter is already part of the set of voters'),
    KafkaError(127, "VOTER_NOT_FOUND", False, 'The voter is not part of the set of voters'),
)

ERRORS: dict[int, KafkaError] = {e.code: e for e in _TABLE}
BY_NAME: dict[str, KafkaError] = {e.name: e for e in _TABLE}


def for_code(code: int) -> KafkaError:
    """The entry for `code`; a code this table does not know (a newer broker) is reported, not raised on."""
    known = ERRORS.get(code)
    if known is not None:
        return known
    return KafkaError(code, f"UNKNOWN_ERROR_CODE_{code}", False, "An error code this client does not know")


NONE = BY_NAME["NONE"]
COORDINATOR_LOAD_IN_PROGRESS = BY_NAME["COORDINATOR_LOAD_IN_PROGRESS"]
COORDINATOR_NOT_AVAILABLE = BY_NAME["COORDINATOR_NOT_AVAILABLE"]
NOT_COORDINATOR = BY_NAME["NOT_COORDINATOR"]
REQUEST_TIMED_OUT = BY_NAME["REQUEST_TIMED_OUT"]
ILLEGAL_GENERATION = BY_NAME["ILLEGAL_GENERATION"]
INCONSISTENT_GROUP_PROTOCOL = BY_NAME["INCONSISTENT_GROUP_PROTOCOL"]
INVALID_GROUP_ID = BY_NAME["INVALID_GROUP_ID"]
UNKNOWN_MEMBER_ID = BY_NAME["UNKNOWN_MEMBER_ID"]
INVALID_SESSION_TIMEOUT = BY_NAME["INVALID_SESSION_TIMEOUT"]
REBALANCE_IN_PROGRESS = BY_NAME["REBALANCE_IN_PROGRESS"]
MEMBER_ID_REQUIRED = BY_NAME["MEMBER_ID_REQUIRED"]
GROUP_MAX_SIZE_REACHED = BY_NAME["GROUP_MAX_SIZE_REACHED"]
FENCED_INSTANCE_ID = BY_NAME["FENCED_INSTANCE_ID"]
NON_EMPTY_GROUP = BY_NAME["NON_EMPTY_GROUP"]
GROUP_ID_NOT_FOUND = BY_NAME["GROUP_ID_NOT_FOUND"]
GROUP_SUBSCRIBED_TO_TOPIC = BY_NAME["GROUP_SUBSCRIBED_TO_TOPIC"]


class GroupError(Exception):
    """A coordinator answer the caller has to know about, carrying the error as data."""

    def __init__(self, error: KafkaError, api: str, detail: str = "") -> None:
        self.error = error
        self.api = api
        super().__init__(f"{api}: {error}{': ' + detail if detail else ''}")


class CommitFailedError(GroupError):
    """Kafka's CommitFailedException: the commit cannot succeed because the group moved on (the member was
    removed or a new generation started); the partitions may already belong to someone else."""


class FencedInstanceError(GroupError):
    """Another instance with the same `group_instance_id` took over; this one must stop (fatal, as in Kafka)."""


class RequestTimeoutError(Exception):
    """No response arrived for a request within its timeout (after all retries)."""
