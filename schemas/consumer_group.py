"""KIP-848's consumer groups: the requests, responses and records of the `consumer` group protocol, declared once.

The same conventions as `schemas.messages` (Kafka's names in snake_case, `Versions`, `Extension`, one class for
every version of an API), for what Kafka 4.x adds for consumer groups:

- ConsumerGroupHeartbeat (API key 68, v0-1) and ConsumerGroupDescribe (API key 69, v0-1), one group per control
  message as everywhere here;
- the records Kafka writes to `__consumer_offsets` for a consumer group (record types 3-8 and 16, the key's
  `version` being the type, as for the classic records);
- `TopicMetadata`, our internal request that carries the cluster's topics into the control topic, so that the
  server-side assignors see the same topics when a batch is replayed (docs/records.md, "Topic metadata").

Their versions, classes and records are in `schemas.messages`' tables with the classic ones (`API_VERSIONS`,
`REQUESTS`, `RESPONSES`, `RecordKey`, `RECORDS`); the JSON Schemas are generated from them with the others
(`python -m schemas`).

Topic ids are Kafka's `Uuid` in the form `Uuid.toString()` gives and `kafka-topics.sh --describe` shows: 22
characters of URL-safe base64 without padding (the cluster's own ids, never made up here).
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from schemas.base import (
    NO_AUTHORIZED_OPERATIONS,
    Bytes,
    Extension,
    GroupRequest,
    GroupResponse,
    Int32,
    Int64,
    Message,
    Request,
    Versions,
    ViewOffset,
    ViewPosition,
)

Int8 = Annotated[int, Meta(ge=-(2**7), le=2**7 - 1)]
TopicId = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_-]{22}$", extra_json_schema={
    "description": "Kafka's Uuid as Uuid.toString() writes it (URL-safe base64, no padding)"})]
ConsumerGroupStateName = Literal["Empty", "Assigning", "Reconciling", "Stable"]
"""Kafka's ConsumerGroupState names."""

CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
"""From ConsumerGroupHeartbeat v1 the client generates its member id (KIP-1082); v0 may join with ""."""
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
JOIN_GROUP_MEMBER_EPOCH = 0

# -- ConsumerGroupHeartbeat --------------------------------------------------------------------------------------


class ConsumerGroupHeartbeatRequestTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    partitions: tuple[Int32, ...]


class ConsumerGroupHeartbeatRequest(GroupRequest, frozen=True, kw_only=True, tag="ConsumerGroupHeartbeat"):
    """A heartbeat of the consumer group protocol: epoch 0 joins, -1 leaves, -2 is a static member's temporary
    leave; every other field is null (or -1) when it did not change since the member's last heartbeat."""

    member_id: Annotated[str, Meta(description='v0: "" on a join lets the coordinator choose it')]
    member_epoch: Int32
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: Int32 = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: Annotated[str | None, Versions("1+", ignored=True), Meta(
        description="an RE2 regular expression, matched against whole topic names")] = None
    server_assignor: str | None = None
    topic_partitions: tuple[ConsumerGroupHeartbeatRequestTopicPartitions, ...] | None = None
    client_id: Annotated[str, Extension("Kafka's request header client id")] = ""
    client_host: Annotated[str, Extension("the client's address, as Kafka shows it")] = ""


class ConsumerGroupHeartbeatResponseTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    partitions: tuple[Int32, ...]


class ConsumerGroupHeartbeatResponseAssignment(Message, frozen=True):
    topic_partitions: tuple[ConsumerGroupHeartbeatResponseTopicPartitions, ...]


class ConsumerGroupHeartbeatResponse(GroupResponse, frozen=True, kw_only=True, tag="ConsumerGroupHeartbeat"):
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
    assignment: Annotated[ConsumerGroupHeartbeatResponseAssignment | None, Meta(
        description="null: no change since the last answer")] = None


# -- ConsumerGroupDescribe ---------------------------------------------------------------------------------------


class ConsumerGroupDescribeRequest(GroupRequest, frozen=True, kw_only=True, tag="ConsumerGroupDescribe"):
    include_authorized_operations: bool = False


class TopicPartitions(Message, frozen=True):
    topic_id: TopicId
    topic_name: str
    partitions: tuple[Int32, ...]


class Assignment(Message, frozen=True):
    topic_partitions: tuple[TopicPartitions, ...]


class Member(Message, frozen=True):
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: Int32
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment
    member_type: Annotated[Int8, Versions("1+"), Meta(description="-1 unknown, 0 classic, 1 consumer")] = -1


class ConsumerGroupDescribeResponse(GroupResponse, frozen=True, kw_only=True, tag="ConsumerGroupDescribe"):
    error_message: str | None = None
    group_state: Annotated[Literal["", "Empty", "Assigning", "Reconciling", "Stable"], Meta(
        description='"" when error_code is set')] = ""
    group_epoch: Int32 = 0
    assignment_epoch: Int32 = 0
    assignor_name: str = ""
    members: tuple[Member, ...] = ()
    authorized_operations: Int32 = NO_AUTHORIZED_OPERATIONS


# -- topic metadata (ours) ---------------------------------------------------------------------------------------


class TopicMetadataTopic(Message, frozen=True):
    topic_id: TopicId
    name: str
    partitions: Annotated[int, Meta(ge=0, le=2**31 - 1, description="partition count")]


class TopicMetadata(Struct, frozen=True, kw_only=True):
    """Internal request, written by the coordinator's driver, which watches the cluster's topics (never by clients):
    every topic of the cluster, with the cluster's own topic ids, at one metadata version. It goes to every state
    bucket (`state.batch.route`: kind `topics`), where it replaces the topics the bucket's consumer groups see when
    its `version` is newer; it has no response. A group's next heartbeat sees a changed partition count or a new
    topic as Kafka's coordinator sees a new metadata image: the subscribed topics' metadata hash changes (a new
    target assignment), a regular expression is resolved again."""

    api: Literal["TopicMetadata"] = "TopicMetadata"
    request_id: str = ""
    version: Annotated[int, Meta(ge=0, le=2**63 - 1, description=(
        "the metadata version, increasing with every change (Kafka: the metadata image's offset; here the time it was"
        " observed, in ms, kept increasing by the publisher)"))]
    topics: tuple[TopicMetadataTopic, ...]


# -- the views topic (the gateway's fast path: docs/gateway.md, "Fast answers") ----------------------------------


class ConsumerViewMember(Message, frozen=True):
    member_id: str
    instance_id: str | None
    member_epoch: Int32
    principal: Annotated[str | None, Extension("the principal the member is bound to (None: none)")] = None


class ConsumerViewCommitter(Message, frozen=True):
    """A member as its OffsetCommit and OffsetFetch are checked (`state.consumer.offsets`): its epoch, whether it
    uses the classic protocol inside the consumer group, and the principal it is bound to."""

    member_id: str
    member_epoch: Int32
    uses_classic_protocol: bool
    principal: Annotated[str | None, Extension("the principal the member is bound to (None: none)")] = None


class ConsumerGroupView(Struct, frozen=True, kw_only=True):
    """What a gateway answers a consumer group's heartbeats, commits and fetches from: the members whose heartbeat
    changes nothing as the coordinator left the group after a step (reconciled to the group's target, which is at
    the group epoch, and owing the coordinator no heartbeat), and what it answers them with; every member with its
    epoch (`committers`: absent in a view of an older release, whose commits the gateway then does not answer);
    and, where they can answer an OffsetFetch, the committed offsets as of the last request the step applied
    (`position`), as a classic group's view carries them."""

    kind: Annotated[Literal["consumer"], Meta(description="a consumer group's view (a classic group's has none)")] = (
        "consumer")
    group_epoch: Int32
    heartbeat_interval_ms: Int32
    session_timeout_ms: Int32
    members: tuple[ConsumerViewMember, ...]
    committers: tuple[ConsumerViewCommitter, ...] | UnsetType = UNSET
    offsets: tuple[ViewOffset, ...] | UnsetType = UNSET
    position: ViewPosition | UnsetType = UNSET


# -- records (the records topic: docs/records.md) ----------------------------------------------------------------
# Kafka's record types 3-8 and 16; the key's `version` is the type. A None value is a tombstone.

CONSUMER_GROUP_METADATA_KEY_VERSION = 3
CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION = 4
CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION = 8
CONSUMER_GROUP_REGULAR_EXPRESSION_KEY_VERSION = 16


class ConsumerGroupMetadataKey(Struct, frozen=True, tag_field="version", tag=CONSUMER_GROUP_METADATA_KEY_VERSION):
    group_id: str


class ConsumerGroupPartitionMetadataKey(Struct, frozen=True, tag_field="version",
                                        tag=CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION):
    group_id: str


class ConsumerGroupMemberMetadataKey(Struct, frozen=True, tag_field="version",
                                     tag=CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION):
    group_id: str
    member_id: str


class ConsumerGroupTargetAssignmentMetadataKey(Struct, frozen=True, tag_field="version",
                                               tag=CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION):
    group_id: str


class ConsumerGroupTargetAssignmentMemberKey(Struct, frozen=True, tag_field="version",
                                             tag=CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION):
    group_id: str
    member_id: str


class ConsumerGroupCurrentMemberAssignmentKey(Struct, frozen=True, tag_field="version",
                                              tag=CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION):
    group_id: str
    member_id: str


class ConsumerGroupRegularExpressionKey(Struct, frozen=True, tag_field="version",
                                        tag=CONSUMER_GROUP_REGULAR_EXPRESSION_KEY_VERSION):
    group_id: str
    regular_expression: str


ConsumerGroupRecordKey = (
    ConsumerGroupMetadataKey | ConsumerGroupPartitionMetadataKey | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey | ConsumerGroupRegularExpressionKey
)


class ConsumerGroupDirectoryEntry(Message, frozen=True):
    group_state: ConsumerGroupStateName
    member_count: Int32


class ConsumerGroupMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 3: the group epoch, and (Kafka 4.1+, KIP-1101) the hash of the subscribed topics' metadata."""

    epoch: Int32
    metadata_hash: Annotated[Int64, Versions("0+"), Meta(
        description="tagged in Kafka; ours is computed by state.topics.image.metadata_hash")] = 0
    directory: Annotated[ConsumerGroupDirectoryEntry | UnsetType, Extension(
        "the group now, for ListGroups (written whenever its state changes; absent on the epoch bumps Kafka writes);"
        " ignored when loading")] = UNSET


class PartitionMetadata(Message, frozen=True):
    partition: Int32
    racks: tuple[str, ...]


class TopicMetadataRecord(Message, frozen=True):
    topic_id: TopicId
    topic_name: str
    num_partitions: Int32
    partition_metadata: tuple[PartitionMetadata, ...] = ()


class ConsumerGroupPartitionMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 4: Kafka 4.0's subscription metadata. Kafka 4.1+ writes none and tombstones one it finds; so do we."""

    topics: tuple[TopicMetadataRecord, ...]


class ClassicProtocol(Message, frozen=True):
    name: str
    metadata: Bytes


class ClassicMemberMetadata(Message, frozen=True):
    session_timeout_ms: Int32
    supported_protocols: tuple[ClassicProtocol, ...]


class ConsumerGroupMemberMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 5: a member's subscription and identity."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: Annotated[tuple[str, ...], Meta(description="sorted")]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: Int32 = -1
    server_assignor: str | None
    classic_member_metadata: Annotated[ClassicMemberMetadata | None, Meta(
        description="tagged in Kafka; set for a member of the classic protocol in a consumer group")] = None
    principal: Annotated[str | UnsetType, Extension(
        "the principal that joined the member (absent when none)")] = UNSET


class ConsumerGroupTargetAssignmentMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 6: the epoch of the group's target assignment."""

    assignment_epoch: Int32
    assignment_timestamp: Annotated[Int64, Meta(
        description="tagged in Kafka 4.3+ (KIP-1263): when the assignment was computed")] = 0


class TargetTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    partitions: tuple[Int32, ...]


class ConsumerGroupTargetAssignmentMemberValue(Struct, frozen=True, kw_only=True):
    """Type 7: one member's target assignment."""

    topic_partitions: tuple[TargetTopicPartitions, ...]


class MemberTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    partitions: tuple[Int32, ...]
    assignment_epochs: Annotated[tuple[Int32, ...] | None, Meta(
        description="tagged in Kafka 4.3+ (KIP-1251): the epoch each partition was assigned at")] = None


class ConsumerGroupCurrentMemberAssignmentValue(Struct, frozen=True, kw_only=True):
    """Type 8: a member's current assignment and where its reconciliation stands."""

    member_epoch: Int32
    previous_member_epoch: Int32
    state: Annotated[Int8, Meta(description="0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127 UNKNOWN")]
    assigned_partitions: tuple[MemberTopicPartitions, ...]
    partitions_pending_revocation: tuple[MemberTopicPartitions, ...]


class ConsumerGroupRegularExpressionValue(Struct, frozen=True, kw_only=True):
    """Type 16: the topics a regular expression matched, at which metadata version, resolved when."""

    topics: Annotated[tuple[str, ...], Meta(description="sorted")]
    version: Int64
    timestamp: Int64


ConsumerGroupRecordValue = (
    ConsumerGroupMetadataValue | ConsumerGroupPartitionMetadataValue | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue | ConsumerGroupRegularExpressionValue
)

CONSUMER_RECORDS: dict[str, type[Struct]] = {
    cls.__name__: cls for cls in (
        ConsumerGroupMetadataKey, ConsumerGroupMetadataValue,
        ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue,
        ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue,
        ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue,
        ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue,
        ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue,
        ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue,
    )
}
"""The consumer-group records topic's keys and values by their schema names (Kafka's class names)."""
