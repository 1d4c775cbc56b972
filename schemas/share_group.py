"""KIP-932's share groups: the requests, responses and records of the `share` group type, declared once.

The same conventions as `schemas.messages` and `schemas.consumer_group` (Kafka's names in snake_case, one group per
control message, one class for every version of an API), for:

- the group-side APIs: ShareGroupHeartbeat (76, v1), ShareGroupDescribe (77, v1), DescribeShareGroupOffsets (90,
  v0-1), AlterShareGroupOffsets (91, v0), DeleteShareGroupOffsets (92, v0);
- a group's configs (IncrementalAlterConfigs and DescribeConfigs on a GROUP resource), one group per message;
- the internal requests of the share-partitions' holders (docs/share-groups.md): `ShareGrant` (take, renew,
  release a share-partition) and `ShareUpdate` (the transitions a holder appended before it answered);
- the records: Kafka's share-group records 10-15 of `__consumer_offsets` (the key's `version` is the type), the
  share-partition snapshot (Kafka's `ShareSnapshot` of `__share_group_state`, here version 100 of the records topic)
  and the group's configs (version 101);
- the share group's view (`kind: share`), what gateways answer heartbeats and find grants from.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from schemas.base import NO_AUTHORIZED_OPERATIONS, Extension, GroupRequest, GroupResponse, Int16, Int32, Int64, Message
from schemas.consumer_group import Int8, TopicId

ShareGroupStateName = Literal["Empty", "Stable"]
"""Kafka's ShareGroupState names (Dead only for a group that does not exist)."""

LEAVE_GROUP_MEMBER_EPOCH = -1
SIMPLE_ASSIGNOR = "simple"

# -- ShareGroupHeartbeat ----------------------------------------------------------------------------------------


class ShareGroupHeartbeatRequest(GroupRequest, frozen=True, kw_only=True, tag="ShareGroupHeartbeat"):
    """A share member's heartbeat: epoch 0 joins, -1 leaves; null fields did not change."""

    member_id: Annotated[str, Meta(description="chosen by the client for its lifetime")]
    member_epoch: Int32
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: Annotated[str, Extension("Kafka's request header client id")] = ""
    client_host: Annotated[str, Extension("the client's address, as Kafka shows it")] = ""


class ShareTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    partitions: tuple[Int32, ...]


class ShareGroupHeartbeatResponseAssignment(Message, frozen=True):
    topic_partitions: tuple[ShareTopicPartitions, ...]


class ShareGroupHeartbeatResponse(GroupResponse, frozen=True, kw_only=True, tag="ShareGroupHeartbeat"):
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
    assignment: Annotated[ShareGroupHeartbeatResponseAssignment | None, Meta(
        description="null: no change since the last answer")] = None


# -- ShareGroupDescribe -----------------------------------------------------------------------------------------


class ShareGroupDescribeRequest(GroupRequest, frozen=True, kw_only=True, tag="ShareGroupDescribe"):
    include_authorized_operations: bool = False


class ShareDescribedTopicPartitions(Message, frozen=True):
    topic_id: TopicId
    topic_name: str
    partitions: tuple[Int32, ...]


class ShareDescribedAssignment(Message, frozen=True):
    topic_partitions: tuple[ShareDescribedTopicPartitions, ...]


class ShareDescribedMember(Message, frozen=True):
    member_id: str
    rack_id: str | None
    member_epoch: Int32
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: ShareDescribedAssignment


class ShareGroupDescribeResponse(GroupResponse, frozen=True, kw_only=True, tag="ShareGroupDescribe"):
    error_message: str | None = None
    group_state: Annotated[Literal["", "Empty", "Stable", "Dead"], Meta(
        description='"" when error_code is set')] = ""
    group_epoch: Int32 = 0
    assignment_epoch: Int32 = 0
    assignor_name: str = ""
    members: tuple[ShareDescribedMember, ...] = ()
    authorized_operations: Int32 = NO_AUTHORIZED_OPERATIONS


# -- the share-group offsets APIs -------------------------------------------------------------------------------


class DescribeShareGroupOffsetsRequestTopic(Message, frozen=True):
    topic_name: str
    partitions: tuple[Int32, ...]


class DescribeShareGroupOffsetsRequest(GroupRequest, frozen=True, kw_only=True, tag="DescribeShareGroupOffsets"):
    topics: Annotated[tuple[DescribeShareGroupOffsetsRequestTopic, ...] | None, Meta(
        description="null: every initialised share-partition of the group")] = None


class DescribeShareGroupOffsetsResponsePartition(Message, frozen=True):
    partition_index: Int32
    start_offset: Annotated[Int64, Meta(description="the share-partition start offset, -1 when not initialised")]
    leader_epoch: Int32 = -1
    lag: Annotated[Int64, Meta(description="v1+; -1 here: the coordinator does not know the log end, the gateway "
                                           "computes it from delivery_complete_count")] = -1
    error_code: Int16 = 0
    error_message: str | None = None
    delivery_complete_count: Annotated[Int64, Extension(
        "terminal offsets at or above the start offset (Kafka's DeliveryCompleteCount), for the lag")] = -1


class DescribeShareGroupOffsetsResponseTopic(Message, frozen=True):
    topic_name: str
    topic_id: TopicId
    partitions: tuple[DescribeShareGroupOffsetsResponsePartition, ...]


class DescribeShareGroupOffsetsResponse(GroupResponse, frozen=True, kw_only=True, tag="DescribeShareGroupOffsets"):
    topics: tuple[DescribeShareGroupOffsetsResponseTopic, ...] = ()
    error_message: str | None = None


class AlterShareGroupOffsetsRequestPartition(Message, frozen=True):
    partition_index: Int32
    start_offset: Int64


class AlterShareGroupOffsetsRequestTopic(Message, frozen=True):
    topic_name: str
    partitions: tuple[AlterShareGroupOffsetsRequestPartition, ...]


class AlterShareGroupOffsetsRequest(GroupRequest, frozen=True, kw_only=True, tag="AlterShareGroupOffsets"):
    topics: tuple[AlterShareGroupOffsetsRequestTopic, ...]


class AlterShareGroupOffsetsResponsePartition(Message, frozen=True):
    partition_index: Int32
    error_code: Int16 = 0
    error_message: str | None = None


class AlterShareGroupOffsetsResponseTopic(Message, frozen=True):
    topic_name: str
    topic_id: Annotated[TopicId, Meta(description="the zero Uuid for a topic that does not exist")]
    partitions: tuple[AlterShareGroupOffsetsResponsePartition, ...]


class AlterShareGroupOffsetsResponse(GroupResponse, frozen=True, kw_only=True, tag="AlterShareGroupOffsets"):
    error_message: str | None = None
    responses: tuple[AlterShareGroupOffsetsResponseTopic, ...] = ()


class DeleteShareGroupOffsetsRequestTopic(Message, frozen=True):
    topic_name: str


class DeleteShareGroupOffsetsRequest(GroupRequest, frozen=True, kw_only=True, tag="DeleteShareGroupOffsets"):
    topics: tuple[DeleteShareGroupOffsetsRequestTopic, ...]


class DeleteShareGroupOffsetsResponseTopic(Message, frozen=True):
    topic_name: str
    topic_id: Annotated[TopicId, Meta(description="the zero Uuid for a topic that does not exist")]
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteShareGroupOffsetsResponse(GroupResponse, frozen=True, kw_only=True, tag="DeleteShareGroupOffsets"):
    error_message: str | None = None
    responses: tuple[DeleteShareGroupOffsetsResponseTopic, ...] = ()


# -- a group's configs (ConfigResource type GROUP) ----------------------------------------------------------------


class AlterableConfig(Message, frozen=True):
    name: str
    config_operation: Annotated[Int8, Meta(description="0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT")]
    value: str | None


class IncrementalAlterGroupConfigsRequest(GroupRequest, frozen=True, kw_only=True,
                                          tag="IncrementalAlterGroupConfigs"):
    """IncrementalAlterConfigs' GROUP resource named `group_id` (the gateway sends one per resource)."""

    configs: tuple[AlterableConfig, ...]
    validate_only: bool = False


class IncrementalAlterGroupConfigsResponse(GroupResponse, frozen=True, kw_only=True,
                                           tag="IncrementalAlterGroupConfigs"):
    error_message: str | None = None


class DescribeGroupConfigsRequest(GroupRequest, frozen=True, kw_only=True, tag="DescribeGroupConfigs"):
    """DescribeConfigs' GROUP resource named `group_id`."""

    configuration_keys: tuple[str, ...] | None = None
    include_documentation: bool = False


class DescribedGroupConfig(Message, frozen=True):
    name: str
    value: str | None
    read_only: bool
    config_source: Annotated[Int8, Meta(description="1 DYNAMIC_GROUP_CONFIG (set), 5 DEFAULT_CONFIG")]
    is_sensitive: bool
    config_type: Annotated[Int8, Meta(description="Kafka's ConfigType: 3 INT, 5 LONG, 2 STRING")]
    documentation: str | None = None


class DescribeGroupConfigsResponse(GroupResponse, frozen=True, kw_only=True, tag="DescribeGroupConfigs"):
    error_message: str | None = None
    configs: tuple[DescribedGroupConfig, ...] = ()


# -- the holders' internal requests (docs/share-groups.md) --------------------------------------------------------

GrantOperation = Literal["take", "renew", "release"]


class ShareGrantPartition(Message, frozen=True):
    topic_id: TopicId
    partition: Int32
    operation: GrantOperation
    epoch: Annotated[Int64, Meta(description="take: the FREE epoch seen (-1: never held); renew, release: the "
                                             "epoch held")]


class ShareGrantRequest(GroupRequest, frozen=True, kw_only=True, tag="ShareGrant"):
    """Internal request of a gateway process (`holder`): take, renew or release share-partitions of the group."""

    holder: str
    partitions: tuple[ShareGrantPartition, ...]


class StateBatchValue(Message, frozen=True):
    first_offset: Int64
    last_offset: Int64
    delivery_state: Annotated[Int8, Meta(description="0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED")]
    delivery_count: Int16


class ShareViewConfig(Message, frozen=True):
    """The group's share settings as the holders apply them (group config over the coordinator's)."""

    auto_offset_reset: str
    record_lock_duration_ms: Int32
    delivery_count_limit: Int32
    partition_max_record_locks: Int32
    isolation_level: str


class ShareGrantAnswer(Message, frozen=True):
    topic_id: TopicId
    partition: Int32
    error_code: Annotated[Int16, Meta(description="0: granted, renewed or released; 3: not an initialised "
                                                  "share-partition of the group; 124 (FENCED_STATE_EPOCH): refused")]
    epoch: Annotated[Int64, Meta(description="the grant epoch now")]
    holder: str | None
    lease_ms: Int32 = 0
    state_epoch: Int32 = 0
    start_offset: Annotated[Int64, Meta(description="a take's durable state: -1 when not resolved yet")] = -1
    state_batches: tuple[StateBatchValue, ...] = ()
    config: Annotated[ShareViewConfig | None, Meta(description="a granted take's or renewal's group settings, which "
                                                           "the holder applies (the view may not show the group "
                                                           "yet when its first fetch comes)")] = None


class ShareGrantResponse(GroupResponse, frozen=True, kw_only=True, tag="ShareGrant"):
    error_message: str | None = None
    partitions: tuple[ShareGrantAnswer, ...] = ()


class ShareUpdatePartition(Message, frozen=True):
    topic_id: TopicId
    partition: Int32
    grant_epoch: Int64
    state_epoch: Int32
    start_offset: Int64
    state_batches: tuple[StateBatchValue, ...]


class ShareUpdateRequest(GroupRequest, frozen=True, kw_only=True, tag="ShareUpdate"):
    """Internal request of a holder: what left ACQUIRED (appended before the holder answered); no response."""

    holder: str
    partitions: tuple[ShareUpdatePartition, ...]


# -- the views topic ----------------------------------------------------------------------------------------------


class ShareViewMember(Message, frozen=True):
    member_id: str
    member_epoch: Int32
    principal: Annotated[str | None, Extension("the principal the member is bound to (None: none)")] = None


class ShareViewGrant(Message, frozen=True):
    topic_id: TopicId
    partition: Int32
    epoch: Int64
    holder: str | None
    wanted_by: str | None = None
    state_epoch: Int32 = 0


class ShareGroupView(Struct, frozen=True, kw_only=True):
    """What a gateway answers a share group's heartbeats from (the members reconciled at the group epoch, as a
    consumer group's), and finds its share-partitions' grants and settings in."""

    kind: Annotated[Literal["share"], Meta(description="a share group's view")] = "share"
    group_epoch: Int32
    heartbeat_interval_ms: Int32
    session_timeout_ms: Int32
    members: tuple[ShareViewMember, ...]
    grants: tuple[ShareViewGrant, ...] = ()
    config: ShareViewConfig


# -- records (the records topic: docs/records.md) -----------------------------------------------------------------

SHARE_GROUP_MEMBER_METADATA_KEY_VERSION = 10
SHARE_GROUP_METADATA_KEY_VERSION = 11
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION = 12
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION = 13
SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION = 14
SHARE_GROUP_STATE_PARTITION_METADATA_KEY_VERSION = 15
SHARE_PARTITION_SNAPSHOT_KEY_VERSION = 100
GROUP_CONFIG_KEY_VERSION = 101


class ShareGroupMemberMetadataKey(Struct, frozen=True, tag_field="version",
                                  tag=SHARE_GROUP_MEMBER_METADATA_KEY_VERSION):
    group_id: str
    member_id: str


class ShareGroupMetadataKey(Struct, frozen=True, tag_field="version", tag=SHARE_GROUP_METADATA_KEY_VERSION):
    group_id: str


class ShareGroupTargetAssignmentMetadataKey(Struct, frozen=True, tag_field="version",
                                            tag=SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION):
    group_id: str


class ShareGroupTargetAssignmentMemberKey(Struct, frozen=True, tag_field="version",
                                          tag=SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION):
    group_id: str
    member_id: str


class ShareGroupCurrentMemberAssignmentKey(Struct, frozen=True, tag_field="version",
                                           tag=SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION):
    group_id: str
    member_id: str


class ShareGroupStatePartitionMetadataKey(Struct, frozen=True, tag_field="version",
                                          tag=SHARE_GROUP_STATE_PARTITION_METADATA_KEY_VERSION):
    group_id: str


class SharePartitionSnapshotKey(Struct, frozen=True, tag_field="version", tag=SHARE_PARTITION_SNAPSHOT_KEY_VERSION):
    group_id: str
    topic_id: TopicId
    partition: Int32


class GroupConfigKey(Struct, frozen=True, tag_field="version", tag=GROUP_CONFIG_KEY_VERSION):
    group_id: str


ShareGroupRecordKey = (
    ShareGroupMemberMetadataKey | ShareGroupMetadataKey | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey | SharePartitionSnapshotKey | GroupConfigKey
)


class ShareGroupMemberMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 10: a member's subscription and identity."""

    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: Annotated[tuple[str, ...], Meta(description="sorted")]
    principal: Annotated[str | UnsetType, Extension("the principal that joined the member (absent when none)")] = UNSET


class ShareGroupDirectoryEntry(Message, frozen=True):
    group_state: ShareGroupStateName
    member_count: Int32


class ShareGroupMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 11: the group epoch and the hash of the subscribed topics' metadata."""

    epoch: Int32
    metadata_hash: Int64 = 0
    directory: Annotated[ShareGroupDirectoryEntry | UnsetType, Extension(
        "the group now, for ListGroups (written whenever its state changes); ignored when loading")] = UNSET


class ShareGroupTargetAssignmentMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 12: the epoch of the group's target assignment."""

    assignment_epoch: Int32
    assignment_timestamp: Annotated[Int64, Meta(
        description="tagged in Kafka 4.3+ (KIP-1263): when the assignment was computed")] = 0


class ShareGroupTargetAssignmentMemberValue(Struct, frozen=True, kw_only=True):
    """Type 13: one member's target assignment."""

    topic_partitions: tuple[ShareTopicPartitions, ...]


class ShareGroupCurrentMemberAssignmentValue(Struct, frozen=True, kw_only=True):
    """Type 14: a member's current assignment (a share member jumps to its target: no revocation)."""

    member_epoch: Int32
    previous_member_epoch: Int32
    state: Annotated[Int8, Meta(description="0 STABLE")]
    assigned_partitions: tuple[ShareTopicPartitions, ...]


class TopicPartitionsInfo(Message, frozen=True):
    topic_id: TopicId
    topic_name: str
    partitions: tuple[Int32, ...]


class TopicInfo(Message, frozen=True):
    topic_id: TopicId
    topic_name: str


class ShareGroupStatePartitionMetadataValue(Struct, frozen=True, kw_only=True):
    """Type 15: the group's share-partitions by topic: initialised (assignable), initialising (never here:
    initialisation is synchronous), deleting."""

    initializing_topics: tuple[TopicPartitionsInfo, ...] = ()
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...] = ()


class SharePartitionSnapshotValue(Struct, frozen=True, kw_only=True):
    """Kafka's ShareSnapshotValue (of `__share_group_state`) for one share-partition, with who holds it."""

    snapshot_epoch: Int32 = 0
    state_epoch: Int32
    leader_epoch: Annotated[Int32, Meta(description="-1: there is no partition leader here (see grant_epoch)")] = -1
    start_offset: Annotated[Int64, Meta(description="-1: not resolved yet (share.auto.offset.reset)")]
    delivery_complete_count: Int32 = 0
    create_timestamp: Int64 = 0
    write_timestamp: Int64 = 0
    state_batches: tuple[StateBatchValue, ...]
    grant_epoch: Annotated[Int64, Extension("the grant's epoch (docs/share-groups.md)")]
    holder: Annotated[str | None, Extension("the gateway process holding it (None: FREE)")] = None
    last_holder: Annotated[str | None, Extension("while FREE: who held it at grant_epoch - 1")] = None


class GroupConfigValue(Struct, frozen=True, kw_only=True):
    """A group's dynamic configs (Kafka keeps them in the metadata log as ConfigRecords of a GROUP resource)."""

    configs: dict[str, str]


ShareGroupRecordValue = (
    ShareGroupMemberMetadataValue | ShareGroupMetadataValue | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue | SharePartitionSnapshotValue | GroupConfigValue
)

SHARE_RECORDS: dict[str, type[Struct]] = {
    cls.__name__: cls for cls in (
        ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue,
        ShareGroupMetadataKey, ShareGroupMetadataValue,
        ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue,
        ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue,
        ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue,
        ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue,
        SharePartitionSnapshotKey, SharePartitionSnapshotValue,
        GroupConfigKey, GroupConfigValue,
    )
}
"""The share-group records' keys and values by their schema names."""

SHARE_RECORD_VALUES: dict[type, type[Struct]] = {
    ShareGroupMemberMetadataKey: ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey: ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMetadataKey: ShareGroupTargetAssignmentMetadataValue,
    ShareGroupTargetAssignmentMemberKey: ShareGroupTargetAssignmentMemberValue,
    ShareGroupCurrentMemberAssignmentKey: ShareGroupCurrentMemberAssignmentValue,
    ShareGroupStatePartitionMetadataKey: ShareGroupStatePartitionMetadataValue,
    SharePartitionSnapshotKey: SharePartitionSnapshotValue,
    GroupConfigKey: GroupConfigValue,
}
"""The value's class of each key's class."""
