"""Kafka's error codes as data: one entry per code, with the flags a client decides on.

Modelled on aiokafka's `errors.py` (one entry per broker error, `retriable`, a `for_code` lookup), but as a table
of frozen values rather than a class per code: the coordinator answers with numeric `error_code`s in JSON, and
what the client does about one is decided in `client.decisions`, not here. Names and codes come from
`state.errors.Errors` (Kafka's `org.apache.kafka.common.protocol.Errors`); this table adds only what a client
decides on: `retriable` follows Kafka's `RetriableException` hierarchy.
"""

from __future__ import annotations

from dataclasses import dataclass

from state.errors import Errors


@dataclass(frozen=True)
class KafkaError:
    """One Kafka error code. `retriable`: the same request may succeed if simply sent again later."""

    code: int
    name: str
    retriable: bool
    description: str

    def __str__(self) -> str:
        return f"{self.name}({self.code})"


def _entry(error: Errors, retriable: bool, description: str) -> KafkaError:
    return KafkaError(error.value, error.name, retriable, description)


_TABLE: tuple[KafkaError, ...] = (
    _entry(Errors.UNKNOWN_SERVER_ERROR, False, 'An unexpected server error'),
    _entry(Errors.NONE, False, 'No error--it worked!'),
    _entry(Errors.OFFSET_OUT_OF_RANGE, False, 'The requested offset is outside the range of offsets maintained by the server for the...'),
    _entry(Errors.CORRUPT_MESSAGE, False, 'This message has failed its CRC checksum, exceeds the valid size, or is otherwise corrupt'),
    _entry(Errors.UNKNOWN_TOPIC_OR_PARTITION, True, 'This request is for a topic or partition that does not exist on this broker'),
    _entry(Errors.INVALID_FETCH_SIZE, False, 'The message has a negative size'),
    _entry(Errors.LEADER_NOT_AVAILABLE, True, 'This error is thrown if we are in the middle of a leadership election and there is...'),
    _entry(Errors.NOT_LEADER_OR_FOLLOWER, True, 'This error is thrown if the client attempts to send messages to a replica that is not...'),
    _entry(Errors.REQUEST_TIMED_OUT, True, 'This error is thrown if the request exceeds the user-specified time limit in the request'),
    _entry(Errors.BROKER_NOT_AVAILABLE, False, 'This is not a client facing error and is used mostly by tools when a broker is not alive'),
    _entry(Errors.REPLICA_NOT_AVAILABLE, True, 'If replica is expected on a broker, but is not (this can be safely ignored)'),
    _entry(Errors.MESSAGE_TOO_LARGE, False, 'The server has a configurable maximum message size to avoid unbounded memory allocation'),
    _entry(Errors.STALE_CONTROLLER_EPOCH, False, 'Internal error code for broker-to-broker communication'),
    _entry(Errors.OFFSET_METADATA_TOO_LARGE, False, 'If you specify a string larger than configured maximum for offset metadata'),
    _entry(Errors.NETWORK_EXCEPTION, True, ''),
    _entry(Errors.COORDINATOR_LOAD_IN_PROGRESS, True, 'The broker returns this error code for txn or group requests, when the coordinator is...'),
    _entry(Errors.COORDINATOR_NOT_AVAILABLE, True, 'The broker returns this error code for consumer and transaction requests if the...'),
    _entry(Errors.NOT_COORDINATOR, True, 'The broker returns this error code if it is not the correct coordinator for the...'),
    _entry(Errors.INVALID_TOPIC, False, 'For a request which attempts to access an invalid topic (an illegal name, or an internal topic written to)'),
    _entry(Errors.RECORD_LIST_TOO_LARGE, False, 'If a message batch in a produce request exceeds the maximum configured segment size'),
    _entry(Errors.NOT_ENOUGH_REPLICAS, True, 'Returned from a produce request when the number of in-sync replicas is lower than the...'),
    _entry(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, True, 'Returned from a produce request when the message was written to the log, but with...'),
    _entry(Errors.INVALID_REQUIRED_ACKS, False, 'Returned from a produce request if the requested requiredAcks is invalid (anything...'),
    _entry(Errors.ILLEGAL_GENERATION, False, 'Returned from group membership requests (such as heartbeats) when the generation id...'),
    _entry(Errors.INCONSISTENT_GROUP_PROTOCOL, False, 'Returned in join group when the member provides a protocol type or set of protocols...'),
    _entry(Errors.INVALID_GROUP_ID, False, 'Returned in join group when the groupId is empty or null'),
    _entry(Errors.UNKNOWN_MEMBER_ID, False, 'Returned from group requests (offset commits/fetches, heartbeats, etc) when the...'),
    _entry(Errors.INVALID_SESSION_TIMEOUT, False, 'Return in join group when the requested session timeout is outside of the allowed...'),
    _entry(Errors.REBALANCE_IN_PROGRESS, False, 'Returned in heartbeat requests when the coordinator has begun rebalancing the group'),
    _entry(Errors.INVALID_COMMIT_OFFSET_SIZE, False, 'This error indicates that an offset commit was rejected because of oversize metadata'),
    _entry(Errors.TOPIC_AUTHORIZATION_FAILED, False, 'Returned by the broker when the client is not authorized to access the requested topic'),
    _entry(Errors.GROUP_AUTHORIZATION_FAILED, False, 'Returned by the broker when the client is not authorized to access a particular groupId'),
    _entry(Errors.CLUSTER_AUTHORIZATION_FAILED, False, 'Returned by the broker when the client is not authorized to use an inter-broker or...'),
    _entry(Errors.INVALID_TIMESTAMP, False, 'The timestamp of the message is out of acceptable range'),
    _entry(Errors.UNSUPPORTED_SASL_MECHANISM, False, 'The broker does not support the requested SASL mechanism'),
    _entry(Errors.ILLEGAL_SASL_STATE, False, 'Request is not valid given the current SASL state'),
    _entry(Errors.UNSUPPORTED_VERSION, False, 'The version of API is not supported'),
    _entry(Errors.TOPIC_ALREADY_EXISTS, False, 'Topic with this name already exists'),
    _entry(Errors.INVALID_PARTITIONS, False, 'Number of partitions is invalid'),
    _entry(Errors.INVALID_REPLICATION_FACTOR, False, 'Replication-factor is invalid'),
    _entry(Errors.INVALID_REPLICATION_ASSIGNMENT, False, 'Replication assignment is invalid'),
    _entry(Errors.INVALID_CONFIG, False, 'Configuration is invalid'),
    _entry(Errors.NOT_CONTROLLER, True, 'This is not the correct controller for this cluster'),
    _entry(Errors.INVALID_REQUEST, False, 'This most likely occurs because of a request being malformed by the client library or...'),
    _entry(Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, False, 'The message format version on the broker does not support this request'),
    _entry(Errors.POLICY_VIOLATION, False, 'Request parameters do not satisfy the configured policy'),
    _entry(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, False, 'The broker received an out of order sequence number'),
    _entry(Errors.DUPLICATE_SEQUENCE_NUMBER, False, 'The broker received a duplicate sequence number'),
    _entry(Errors.INVALID_PRODUCER_EPOCH, False, 'Producer attempted to produce with an old epoch'),
    _entry(Errors.INVALID_TXN_STATE, False, 'The producer attempted a transactional operation in an invalid state'),
    _entry(Errors.INVALID_PRODUCER_ID_MAPPING, False, 'The producer attempted to use a producer id which is not currently assigned to its...'),
    _entry(Errors.INVALID_TRANSACTION_TIMEOUT, False, 'The transaction timeout is larger than the maximum value allowed by the broker (as...'),
    _entry(Errors.CONCURRENT_TRANSACTIONS, True, 'The producer attempted to update a transaction while another concurrent operation on...'),
    _entry(Errors.TRANSACTION_COORDINATOR_FENCED, False, 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the...'),
    _entry(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, False, 'Transactional Id authorization failed'),
    _entry(Errors.SECURITY_DISABLED, False, 'Security features are disabled'),
    _entry(Errors.OPERATION_NOT_ATTEMPTED, False, 'The broker did not attempt to execute this operation'),
    _entry(Errors.KAFKA_STORAGE_ERROR, True, 'Disk error when trying to access log file on the disk'),
    _entry(Errors.LOG_DIR_NOT_FOUND, False, 'The user-specified log directory is not found in the broker config'),
    _entry(Errors.SASL_AUTHENTICATION_FAILED, False, 'SASL Authentication failed'),
    _entry(Errors.UNKNOWN_PRODUCER_ID, False, 'This exception is raised by the broker if it could not locate the producer metadata...'),
    _entry(Errors.REASSIGNMENT_IN_PROGRESS, False, 'A partition reassignment is in progress'),
    _entry(Errors.DELEGATION_TOKEN_AUTH_DISABLED, False, 'Delegation Token feature is not enabled'),
    _entry(Errors.DELEGATION_TOKEN_NOT_FOUND, False, 'Delegation Token is not found on server'),
    _entry(Errors.DELEGATION_TOKEN_OWNER_MISMATCH, False, 'Specified Principal is not valid Owner/Renewer'),
    _entry(Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, False, 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on...'),
    _entry(Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED, False, 'Delegation Token authorization failed'),
    _entry(Errors.DELEGATION_TOKEN_EXPIRED, False, 'Delegation Token is expired'),
    _entry(Errors.INVALID_PRINCIPAL_TYPE, False, 'Supplied principalType is not supported'),
    _entry(Errors.NON_EMPTY_GROUP, False, 'The group is not empty'),
    _entry(Errors.GROUP_ID_NOT_FOUND, False, 'The group id does not exist'),
    _entry(Errors.FETCH_SESSION_ID_NOT_FOUND, True, 'The fetch session ID was not found'),
    _entry(Errors.INVALID_FETCH_SESSION_EPOCH, True, 'The fetch session epoch is invalid'),
    _entry(Errors.LISTENER_NOT_FOUND, True, 'There is no listener on the leader broker that matches the listener on which metadata...'),
    _entry(Errors.TOPIC_DELETION_DISABLED, False, 'Topic deletion is disabled'),
    _entry(Errors.FENCED_LEADER_EPOCH, True, 'The leader epoch in the request is older than the epoch on the broker'),
    _entry(Errors.UNKNOWN_LEADER_EPOCH, True, 'The leader epoch in the request is newer than the epoch on the broker'),
    _entry(Errors.UNSUPPORTED_COMPRESSION_TYPE, False, 'The requesting client does not support the compression type of given partition'),
    _entry(Errors.STALE_BROKER_EPOCH, False, 'Broker epoch has changed'),
    _entry(Errors.OFFSET_NOT_AVAILABLE, True, 'The leader high watermark has not caught up from a recent leader election so the...'),
    _entry(Errors.MEMBER_ID_REQUIRED, False, 'The group member needs to have a valid member id before actually entering a consumer group'),
    _entry(Errors.PREFERRED_LEADER_NOT_AVAILABLE, True, 'The preferred leader was not available'),
    _entry(Errors.GROUP_MAX_SIZE_REACHED, False, 'The consumer group has reached its max size'),
    _entry(Errors.FENCED_INSTANCE_ID, False, 'The broker rejected this static consumer since another consumer with the same...'),
    _entry(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, True, 'Eligible topic partition leaders are not available'),
    _entry(Errors.ELECTION_NOT_NEEDED, True, 'Leader election not needed for topic partition'),
    _entry(Errors.NO_REASSIGNMENT_IN_PROGRESS, False, 'No partition reassignment is in progress'),
    _entry(Errors.GROUP_SUBSCRIBED_TO_TOPIC, False, 'Deleting offsets of a topic is forbidden while the consumer group is actively...'),
    _entry(Errors.INVALID_RECORD, False, 'This record has failed the validation on broker and hence will be rejected'),
    _entry(Errors.UNSTABLE_OFFSET_COMMIT, True, 'There are unstable offsets that need to be cleared'),
    _entry(Errors.THROTTLING_QUOTA_EXCEEDED, True, 'The throttling quota has been exceeded'),
    _entry(Errors.PRODUCER_FENCED, False, 'There is a newer producer with the same transactionalId which fences the current one'),
    _entry(Errors.RESOURCE_NOT_FOUND, False, 'A request illegally referred to a resource that does not exist'),
    _entry(Errors.DUPLICATE_RESOURCE, False, 'A request illegally referred to the same resource twice'),
    _entry(Errors.UNACCEPTABLE_CREDENTIAL, False, 'Requested credential would not meet criteria for acceptability'),
    _entry(Errors.INCONSISTENT_VOTER_SET, False, 'Indicates that the either the sender or recipient of a voter-only request is not one...'),
    _entry(Errors.INVALID_UPDATE_VERSION, False, 'The given update version was invalid'),
    _entry(Errors.FEATURE_UPDATE_FAILED, False, 'Unable to update finalized features due to an unexpected server error'),
    _entry(Errors.PRINCIPAL_DESERIALIZATION_FAILURE, False, 'Request principal deserialization failed during forwarding'),
    _entry(Errors.SNAPSHOT_NOT_FOUND, False, 'Requested snapshot was not found'),
    _entry(Errors.POSITION_OUT_OF_RANGE, False, 'Requested position is not greater than or equal to zero, and less than the size of the...'),
    _entry(Errors.UNKNOWN_TOPIC_ID, True, 'This server does not host this topic ID'),
    _entry(Errors.DUPLICATE_BROKER_REGISTRATION, False, 'This broker ID is already in use'),
    _entry(Errors.BROKER_ID_NOT_REGISTERED, False, 'The given broker ID was not registered'),
    _entry(Errors.INCONSISTENT_TOPIC_ID, True, "The log's topic ID did not match the topic ID in the request"),
    _entry(Errors.INCONSISTENT_CLUSTER_ID, False, 'The clusterId in the request does not match that found on the server'),
    _entry(Errors.TRANSACTIONAL_ID_NOT_FOUND, False, 'The transactionalId could not be found'),
    _entry(Errors.FETCH_SESSION_TOPIC_ID_ERROR, True, 'The fetch session encountered inconsistent topic ID usage'),
    _entry(Errors.INELIGIBLE_REPLICA, False, 'The new ISR contains at least one ineligible replica'),
    _entry(Errors.NEW_LEADER_ELECTED, False, 'The AlterPartition request successfully updated the partition state but the leader has...'),
    _entry(Errors.OFFSET_MOVED_TO_TIERED_STORAGE, False, 'The requested offset is moved to tiered storage'),
    _entry(Errors.FENCED_MEMBER_EPOCH, False, 'The member epoch is fenced by the group coordinator'),
    _entry(Errors.UNRELEASED_INSTANCE_ID, False, 'The instance ID is still used by another member in the consumer group'),
    _entry(Errors.UNSUPPORTED_ASSIGNOR, False, 'The assignor or its version range is not supported by the consumer group'),
    _entry(Errors.STALE_MEMBER_EPOCH, False, 'The member epoch is stale'),
    _entry(Errors.MISMATCHED_ENDPOINT_TYPE, False, 'The request was sent to an endpoint of the wrong type'),
    _entry(Errors.UNSUPPORTED_ENDPOINT_TYPE, False, 'This endpoint type is not supported yet'),
    _entry(Errors.UNKNOWN_CONTROLLER_ID, False, 'This controller ID is not known'),
    _entry(Errors.UNKNOWN_SUBSCRIPTION_ID, False, 'Client sent a push telemetry request with an invalid or outdated subscription ID'),
    _entry(Errors.TELEMETRY_TOO_LARGE, False, 'Client sent a push telemetry request larger than the maximum size the broker will accept'),
    _entry(Errors.INVALID_REGISTRATION, False, 'The controller has considered the broker registration to be invalid'),
    _entry(Errors.TRANSACTION_ABORTABLE, False, 'The server encountered an error with the transaction'),
    _entry(Errors.INVALID_RECORD_STATE, False, 'The record state is invalid'),
    _entry(Errors.SHARE_SESSION_NOT_FOUND, True, 'The share session was not found'),
    _entry(Errors.INVALID_SHARE_SESSION_EPOCH, True, 'The share session epoch is invalid'),
    _entry(Errors.FENCED_STATE_EPOCH, False, 'The share coordinator rejected the request because the share-group state epoch did not...'),
    _entry(Errors.INVALID_VOTER_KEY, False, "The voter key doesn't match the receiving replica's key"),
    _entry(Errors.DUPLICATE_VOTER, False, 'The voter is already part of the set of voters'),
    _entry(Errors.VOTER_NOT_FOUND, False, 'The voter is not part of the set of voters'),
    _entry(Errors.INVALID_REGULAR_EXPRESSION, False, 'The regular expression is not valid'),
    _entry(Errors.REBOOTSTRAP_REQUIRED, False, 'Client metadata is stale: the client should rebootstrap'),
    _entry(Errors.STREAMS_INVALID_TOPOLOGY, False, 'The supplied topology is invalid'),
    _entry(Errors.STREAMS_INVALID_TOPOLOGY_EPOCH, False, 'The supplied topology epoch is invalid'),
    _entry(Errors.STREAMS_TOPOLOGY_FENCED, False, 'The supplied topology epoch is outdated'),
    _entry(Errors.SHARE_SESSION_LIMIT_REACHED, True, 'The limit of share sessions has been reached'),
)

ERRORS: dict[int, KafkaError] = {e.code: e for e in _TABLE}


def for_code(code: int) -> KafkaError:
    """The entry for `code`; a code this table does not know (a newer broker) is reported, not raised on."""
    known = ERRORS.get(code)
    if known is not None:
        return known
    return KafkaError(code, f"UNKNOWN_ERROR_CODE_{code}", False, "An error code this client does not know")


class GroupError(Exception):
    """A coordinator answer the caller has to know about, carrying the error as data."""

    def __init__(self, error: KafkaError, api: str, detail: str = "") -> None:
        self.error = error
        self.api = api
        super().__init__(f"{api}: {error}{': ' + detail if detail else ''}")


class CommitFailedError(GroupError):
    """Kafka's CommitFailedException: the commit cannot succeed because the group moved on (the member was
    removed or a new generation started); the partitions may already belong to someone else."""


class RebalanceInProgressError(GroupError):
    """Kafka's RebalanceInProgressException from a commit: re-join (call poll) and commit again."""


class FencedInstanceError(GroupError):
    """Another instance with the same `group_instance_id` took over; this one must stop (fatal, as in Kafka)."""


class RequestTimeoutError(Exception):
    """No response arrived for a request within its timeout (after all retries)."""
