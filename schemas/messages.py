"""Every request, response and record of the coordinator, declared once as typed, immutable msgspec Structs.

The core decodes requests straight into these classes (`state.wire`), builds its responses and records from them
and encodes them with msgspec; the client builds its requests from them; the gateway and the client take their
versions from `API_VERSIONS`; the JSON Schemas in this folder are generated from them (`python -m schemas`, and
`tests/schemas` fails when a file is stale).

Field names, types and version ranges are Kafka's: the control JSON is Kafka's `<Api>Request`/`<Api>Response` in
snake_case (docs/wire-format.md), and `tests/schemas/test_kafka_definitions.py` checks every class against Kafka's
own message definitions (as kafka-python ships them). What is ours is marked `Extension`: the envelope (`api`,
`api_version`, `request_id`, `group_id`, `principal`), JoinGroup's `client_id`/`client_host`/`topic_partitions`,
`error_message`, and the records topic (docs/records.md). Where Kafka names several groups in one message
(DescribeGroups, DeleteGroups, OffsetFetch v8+), a control message names one, at its top level.

One class serves every version of an API, as one control message does: a field a version lacks keeps its default.
`Versions` says which versions have a field; `ignored=True` marks the fields whose value the coordinator drops at
a version that lacks them (`state.wire`), as Kafka never reads them there.

A version bump is one edit: the API's entry in `API_VERSIONS` (then `python -m schemas`).

KIP-848's consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe, their records and the internal
TopicMetadata request) are declared the same way in `schemas.consumer_group`; the tables below (`API_VERSIONS`,
`REQUESTS`, `RESPONSES`, `RecordKey`, `RECORDS`) hold both kinds, so every API and record has one entry in one
table. What both declare on is `schemas.base`, re-exported here.
"""

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

from schemas.base import (  # noqa: F401 - re-exported: the rest of the code imports these from here
    BASE64,
    MAX_BYTES_FIELD,
    MAX_STRING_BYTES,
    NO_AUTHORIZED_OPERATIONS,
    Bytes,
    ErrorMessage,
    Extension,
    GroupRequest,
    GroupResponse,
    GroupStateName,
    Int16,
    Int32,
    Int64,
    Message,
    Request,
    Response,
    Versions,
    ViewOffset,
    ViewPosition,
)
from schemas.consumer_group import (
    CONSUMER_RECORDS,
    ConsumerGroupDescribeRequest,
    ConsumerGroupView,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupRecordKey,
)
from schemas.share_group import (  # noqa: E402 - the share groups' declarations
    SHARE_RECORDS,
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareGroupRecordKey,
    ShareGroupView,
)

API_VERSIONS: dict[str, tuple[int, int]] = {
    "JoinGroup": (0, 9),
    "SyncGroup": (0, 5),
    "Heartbeat": (0, 4),
    "LeaveGroup": (0, 5),
    "OffsetCommit": (0, 9),
    "OffsetFetch": (0, 9),
    "OffsetDelete": (0, 0),
    "DescribeGroups": (0, 5),
    "ListGroups": (0, 5),
    "DeleteGroups": (0, 2),
    "ConsumerGroupHeartbeat": (0, 1),
    "ConsumerGroupDescribe": (0, 1),
    "ShareGroupHeartbeat": (1, 1),
    "ShareGroupDescribe": (1, 1),
    "DescribeShareGroupOffsets": (0, 1),
    "AlterShareGroupOffsets": (0, 0),
    "DeleteShareGroupOffsets": (0, 0),
    "TxnOffsetCommit": (0, 5),
}
"""The versions the coordinator answers, per API; a request without `api_version` is taken at the latest."""


class JoinGroupRequestProtocol(Message, frozen=True):
    name: str
    metadata: Annotated[Bytes, Meta(description="ConsumerProtocolSubscription bytes for protocol_type consumer")]


class TopicPartitionCount(Message, frozen=True):
    name: str
    partitions: Annotated[Int32, Meta(description="partition count")]


class JoinGroupRequest(GroupRequest, frozen=True, kw_only=True, tag="JoinGroup"):
    session_timeout_ms: Int32
    rebalance_timeout_ms: Annotated[Int32, Versions("1+"), Meta(description="v0 uses session_timeout_ms")] = -1
    member_id: Annotated[str, Meta(description='"" for a new member')]
    group_instance_id: Annotated[str | None, Versions("5+", ignored=True),
                                 Meta(description="static membership (KIP-345)")] = None
    protocol_type: str
    protocols: tuple[JoinGroupRequestProtocol, ...]
    reason: Annotated[str | None, Versions("8+"), Meta(description="logged only")] = None
    client_id: Annotated[str, Extension(
        "Kafka's request header client id; prefix of generated member ids")] = ""
    client_host: Annotated[str, Extension("shown by DescribeGroups")] = ""
    topic_partitions: Annotated[tuple[TopicPartitionCount, ...], Extension(
        "the member's view of partition counts, for server:<assignor> protocols")] = ()


class SyncGroupRequestAssignment(Message, frozen=True):
    member_id: str
    assignment: Bytes


class SyncGroupRequest(GroupRequest, frozen=True, kw_only=True, tag="SyncGroup"):
    generation_id: Int32
    member_id: str
    group_instance_id: Annotated[str | None, Versions("3+", ignored=True)] = None
    protocol_type: Annotated[str | None, Versions("5+"), Meta(description="required from v5")] = None
    protocol_name: Annotated[str | None, Versions("5+"), Meta(description="required from v5")] = None
    assignments: tuple[SyncGroupRequestAssignment, ...]


class HeartbeatRequest(GroupRequest, frozen=True, kw_only=True, tag="Heartbeat"):
    generation_id: Int32
    member_id: str
    group_instance_id: Annotated[str | None, Versions("3+", ignored=True)] = None


class MemberIdentity(Message, frozen=True):
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


class LeaveGroupRequest(GroupRequest, frozen=True, kw_only=True, tag="LeaveGroup"):
    """v0-2 name one member (`member_id`), v3+ a batch (`members`); `state.wire` turns the first into the second."""

    member_id: Annotated[str | UnsetType, Versions("0-2")] = UNSET
    members: Annotated[tuple[MemberIdentity, ...] | UnsetType, Versions("3+")] = UNSET


class OffsetCommitRequestPartition(Message, frozen=True):
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Annotated[Int32, Versions("6+")] = -1
    commit_timestamp: Annotated[Int64, Versions("1")] = -1
    committed_metadata: str | None = None


class OffsetCommitRequestTopic(Message, frozen=True):
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]


class PartitionError(Message, frozen=True):
    topic: str
    partition: Int32
    error_code: Int16


class CommitAnswer(Message, frozen=True):
    """What a gateway answered an OffsetCommit with before the coordinator saw it (its fast path): the request's
    error and the partitions answered with another error than that one (an empty list when every partition got it)."""

    error_code: Int16
    partition_errors: tuple[PartitionError, ...] = ()


class OffsetCommitRequest(GroupRequest, frozen=True, kw_only=True, tag="OffsetCommit"):
    """`generation_id_or_member_epoch` (Kafka's name from v9) or its older name `generation_id`; `state.wire`
    resolves the two into the first (default -1: a commit without group management)."""

    generation_id_or_member_epoch: Annotated[Int32 | UnsetType, Versions("1+"), Meta(
        description="-1 (default) for commits without group management")] = UNSET
    generation_id: Annotated[Int32 | UnsetType, Extension("alias of generation_id_or_member_epoch")] = UNSET
    member_id: Annotated[str, Versions("1+")] = ""
    group_instance_id: Annotated[str | None, Versions("7+")] = None
    retention_time_ms: Annotated[Int64, Versions("2-4", ignored=True)] = -1
    topics: tuple[OffsetCommitRequestTopic, ...]
    answered: Annotated[CommitAnswer | None, Extension(
        "set by a gateway that answered the commit itself (docs/gateway.md, fast answers): the coordinator sends "
        "no response and counts a different decision of its own as a misprediction")] = None


class TxnOffsetCommitRequestPartition(Message, frozen=True):
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Annotated[Int32, Versions("2+")] = -1
    committed_metadata: str | None = None


class TxnOffsetCommitRequestTopic(Message, frozen=True):
    name: str
    partitions: tuple[TxnOffsetCommitRequestPartition, ...]


class TxnOffsetCommitRequest(GroupRequest, frozen=True, kw_only=True, tag="TxnOffsetCommit"):
    """Offsets committed inside a producer's transaction (KIP-98; the member fields of KIP-447 from v3). They stay
    pending until the transaction's marker says COMMIT (then they are the group's committed offsets) or ABORT
    (dropped): `TransactionMarker`. A gateway writes it to the control topic inside the producer's transaction
    (docs/gateway.md, "Transactions"), so the upstream's own marker decides it."""

    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    generation_id: Annotated[Int32, Versions("3+")] = -1
    member_id: Annotated[str, Versions("3+")] = ""
    group_instance_id: Annotated[str | None, Versions("3+")] = None
    topics: tuple[TxnOffsetCommitRequestTopic, ...]
    transaction_timeout_ms: Annotated[Int32 | None, Extension(
        "set by a gateway that forwarded the producer's InitProducerId: the transaction timeout it asked for, after "
        "which a transaction still open is aborted at the upstream (None: Kafka's transaction.max.timeout.ms, "
        "900000)")] = None
    answered: Annotated[CommitAnswer | None, Extension(
        "set by a gateway that answered the commit itself once it was written inside the transaction (docs/gateway.md, "
        "\"Transactions\"): the coordinator sends no response and counts a different decision of its own as a "
        "misprediction")] = None


class OffsetFetchRequestTopic(Message, frozen=True):
    name: str
    partition_indexes: tuple[Int32, ...]


class OffsetFetchRequest(GroupRequest, frozen=True, kw_only=True, tag="OffsetFetch"):
    topics: Annotated[tuple[OffsetFetchRequestTopic, ...] | None, Meta(
        description="null (v2+, default): every committed partition")] = None
    require_stable: Annotated[bool, Versions("7+")] = False
    member_id: Annotated[str | None, Versions("9+")] = None
    member_epoch: Annotated[Int32, Versions("9+")] = -1


class OffsetDeleteRequestPartition(Message, frozen=True):
    partition_index: Int32


class OffsetDeleteRequestTopic(Message, frozen=True):
    name: str
    partitions: tuple[OffsetDeleteRequestPartition, ...]


class OffsetDeleteRequest(GroupRequest, frozen=True, kw_only=True, tag="OffsetDelete"):
    topics: tuple[OffsetDeleteRequestTopic, ...]


class DescribeGroupsRequest(GroupRequest, frozen=True, kw_only=True, tag="DescribeGroups"):
    include_authorized_operations: Annotated[bool, Versions("3+")] = False


class ListGroupsRequest(Request, frozen=True, kw_only=True, tag="ListGroups"):
    states_filter: Annotated[tuple[str, ...], Versions("4+")] = ()
    types_filter: Annotated[tuple[str, ...], Versions("5+")] = ()

    @property
    def group_id(self) -> str:
        """ListGroups names no group."""
        return ""


class DeleteGroupsRequest(GroupRequest, frozen=True, kw_only=True, tag="DeleteGroups"):
    pass


REQUESTS: dict[str, type[Request]] = {cls.__struct_config__.tag: cls for cls in (  # type: ignore[misc]
    JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest, OffsetCommitRequest,
    OffsetFetchRequest, OffsetDeleteRequest, DescribeGroupsRequest, ListGroupsRequest, DeleteGroupsRequest,
    ConsumerGroupHeartbeatRequest, ConsumerGroupDescribeRequest,
    ShareGroupHeartbeatRequest, ShareGroupDescribeRequest, DescribeShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest, TxnOffsetCommitRequest,
)}
"""By `api`, in `API_VERSIONS` order."""

class JoinGroupResponseMember(Message, frozen=True):
    member_id: str
    group_instance_id: str | None
    metadata: Bytes


class JoinGroupResponse(GroupResponse, frozen=True, kw_only=True, tag="JoinGroup"):
    generation_id: Int32 = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()
    error_message: ErrorMessage = UNSET


class SyncGroupResponse(GroupResponse, frozen=True, kw_only=True, tag="SyncGroup"):
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: Bytes = ""
    error_message: ErrorMessage = UNSET


class HeartbeatResponse(GroupResponse, frozen=True, kw_only=True, tag="Heartbeat"):
    error_message: ErrorMessage = UNSET


class MemberResponse(Message, frozen=True):
    member_id: str
    group_instance_id: str | None
    error_code: Int16


class LeaveGroupResponse(GroupResponse, frozen=True, kw_only=True, tag="LeaveGroup"):
    members: tuple[MemberResponse, ...] = ()
    error_message: ErrorMessage = UNSET


class OffsetCommitResponsePartition(Message, frozen=True):
    partition_index: Int32
    error_code: Int16


class OffsetCommitResponseTopic(Message, frozen=True):
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


class OffsetCommitResponse(GroupResponse, frozen=True, kw_only=True, tag="OffsetCommit"):
    """`error_code` at the top is ours: the request-level error, also repeated on every partition."""

    topics: tuple[OffsetCommitResponseTopic, ...] = ()
    error_message: ErrorMessage = UNSET


class TxnOffsetCommitResponsePartition(Message, frozen=True):
    partition_index: Int32
    error_code: Int16


class TxnOffsetCommitResponseTopic(Message, frozen=True):
    name: str
    partitions: tuple[TxnOffsetCommitResponsePartition, ...]


class TxnOffsetCommitResponse(GroupResponse, frozen=True, kw_only=True, tag="TxnOffsetCommit"):
    """`error_code` at the top is ours, as OffsetCommit's: the request-level error, also on every partition."""

    topics: tuple[TxnOffsetCommitResponseTopic, ...] = ()
    error_message: ErrorMessage = UNSET


class OffsetFetchResponsePartition(Message, frozen=True):
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32
    metadata: str
    error_code: Int16


class OffsetFetchResponseTopic(Message, frozen=True):
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


class OffsetFetchResponse(GroupResponse, frozen=True, kw_only=True, tag="OffsetFetch"):
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    error_message: ErrorMessage = UNSET


class OffsetDeleteResponsePartition(Message, frozen=True):
    partition_index: Int32
    error_code: Int16


class OffsetDeleteResponseTopic(Message, frozen=True):
    name: str
    partitions: tuple[OffsetDeleteResponsePartition, ...]


class OffsetDeleteResponse(GroupResponse, frozen=True, kw_only=True, tag="OffsetDelete"):
    topics: tuple[OffsetDeleteResponseTopic, ...] = ()
    error_message: ErrorMessage = UNSET


class DescribedGroupMember(Message, frozen=True):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: Bytes
    member_assignment: Bytes


class DescribeGroupsResponse(GroupResponse, frozen=True, kw_only=True, tag="DescribeGroups"):
    group_state: GroupStateName = "Dead"
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: Int32 = NO_AUTHORIZED_OPERATIONS
    error_message: ErrorMessage = UNSET


class ListedGroup(Message, frozen=True):
    group_id: str
    protocol_type: str
    group_state: str
    group_type: Annotated[Literal["classic", "consumer", "share"], Versions("5+")] = "classic"


class ListGroupsResponse(Response, frozen=True, kw_only=True, tag="ListGroups"):
    throttle_time_ms: Int32 = 0
    error_code: Int16
    groups: tuple[ListedGroup, ...] = ()
    error_message: ErrorMessage = UNSET


class DeleteGroupsResponse(GroupResponse, frozen=True, kw_only=True, tag="DeleteGroups"):
    error_message: ErrorMessage = UNSET


class ErrorResponse(Struct, frozen=True, kw_only=True):
    """The answer to a request whose `api` is unknown."""

    api: str | None
    request_id: str
    group_id: str | None
    error_code: Int16
    error_message: str


RESPONSES: dict[str, type[Response]] = {cls.__struct_config__.tag: cls for cls in (  # type: ignore[misc]
    JoinGroupResponse, SyncGroupResponse, HeartbeatResponse, LeaveGroupResponse, OffsetCommitResponse,
    OffsetFetchResponse, OffsetDeleteResponse, DescribeGroupsResponse, ListGroupsResponse, DeleteGroupsResponse,
    ConsumerGroupHeartbeatResponse, ConsumerGroupDescribeResponse,
    ShareGroupHeartbeatResponse, ShareGroupDescribeResponse, DescribeShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse, TxnOffsetCommitResponse,
)}

# -- records (the records topic: docs/records.md) ----------------------------------------------------------------
# Keys follow Kafka's `__consumer_offsets`: the key's `version` is the record type. A None value is a tombstone.

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2


class OffsetCommitKey(Struct, frozen=True, tag_field="version", tag=OFFSET_COMMIT_KEY_VERSION):
    group: str
    topic: str
    partition: Int32

    @property
    def group_id(self) -> str:
        """The group, by the name every other key has (Kafka's consumer-group keys: `GroupId`)."""
        return self.group


class GroupMetadataKey(Struct, frozen=True, tag_field="version", tag=GROUP_METADATA_KEY_VERSION):
    group: str

    @property
    def group_id(self) -> str:
        return self.group


TXN_OFFSET_COMMIT_KEY_VERSION = 102


class TxnOffsetCommitKey(Struct, frozen=True, tag_field="version", tag=TXN_OFFSET_COMMIT_KEY_VERSION):
    """Ours: a pending transactional offset, under a key of its own (value: an `OffsetCommitValue`). Kafka writes
    it under the offset's own key in a transactional batch and lets its log's markers decide; a compacted records
    topic without transactions would let a pending value replace the committed one, so it is kept apart, and the
    transaction's outcome writes the committed offset (COMMIT) and this key's tombstone (both outcomes)."""

    group: str
    producer_id: Int64
    topic: str
    partition: Int32

    @property
    def group_id(self) -> str:
        return self.group


RecordKey = (OffsetCommitKey | GroupMetadataKey | TxnOffsetCommitKey | ConsumerGroupRecordKey
             | ShareGroupRecordKey)
"""Every key of the records topic: the classic group's, the consumer group's (`schemas.consumer_group`) and the
share group's (`schemas.share_group`)."""


class OffsetCommitValue(Struct, frozen=True):
    offset: Int64
    leader_epoch: Int32
    metadata: str
    commit_timestamp: Int64
    expire_timestamp: Int64 | None


class MemberMetadata(Message, frozen=True):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: Int32
    session_timeout: Int32
    subscription: Bytes
    assignment: Bytes
    principal: Annotated[str | UnsetType, Extension(
        "the principal that joined the member (absent when none)")] = UNSET


class GroupDirectoryEntry(Message, frozen=True):
    group_state: Literal["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"]
    protocol_type: str
    member_count: Int32


class GroupMetadataValue(Struct, frozen=True):
    """Kafka's GroupMetadataValue: the group as last persisted (`ClassicGroup.persisted`)."""

    protocol_type: str
    generation: Int32
    protocol: str | None
    leader: str | None
    current_state_timestamp: Int64
    members: tuple[MemberMetadata, ...]


class GroupMetadataRecord(GroupMetadataValue, frozen=True):
    """The value of a group metadata record: Kafka's GroupMetadataValue as last persisted, plus `directory`."""

    directory: Annotated[GroupDirectoryEntry, Extension("the group now, for ListGroups; ignored when loading")]


class LoadedRecord(Struct, frozen=True):
    """One records-topic record as a LoadGroup carries it: the key's and the value's JSON text (None: tombstone),
    and where the rebuild read it, so that a record the core cannot decode is reported by its records-topic
    partition and offset (-1: not read from the topic)."""

    key: str
    value: str | None
    partition: int = -1
    offset: int = -1


class LoadGroup(Struct, frozen=True, kw_only=True):
    """Internal request, written by a rebuild (`coordinator run --rebuild-from-records`), never by clients: a
    group's records-topic records, which the core loads the group from unless it already has state (then the
    checkpoint is newer than the records and the request is ignored). It has no response."""

    api: Literal["LoadGroup"] = "LoadGroup"
    request_id: str = ""
    group_id: str
    records: tuple[LoadedRecord, ...]


class TransactionMarker(Struct, frozen=True, kw_only=True):
    """Internal request, written by the job's source, never by clients: a transaction's end marker (COMMIT or
    ABORT) read in the control topic, for a group with a TxnOffsetCommit of that producer before it in the same
    partition (Kafka's replayEndTransactionMarker). The group's pending offsets of the producer are committed or
    dropped; no response."""

    api: Literal["TransactionMarker"] = "TransactionMarker"
    request_id: str = ""
    group_id: str
    producer_id: Int64
    producer_epoch: Int16 = -1
    committed: Annotated[bool, Meta(description="true: COMMIT, false: ABORT")]


RECORDS: dict[str, type[Struct]] = {
    "GroupMetadataKey": GroupMetadataKey, "GroupMetadataValue": GroupMetadataRecord,
    "OffsetCommitKey": OffsetCommitKey, "OffsetCommitValue": OffsetCommitValue,
    "TxnOffsetCommitKey": TxnOffsetCommitKey, "TxnOffsetCommitValue": OffsetCommitValue,
    **CONSUMER_RECORDS,
    **SHARE_RECORDS,
}
"""The records topic's keys and values by their schema names (a group metadata value always has `directory`)."""


# -- the fast path (docs/gateway.md, "Fast answers") -------------------------------------------------------------
# The views topic, keyed by group id: a group's `GroupView` whenever it changes (a tombstone when the group is
# deleted), and in every partition the `ViewMark`s saying how far the views are complete. And the internal request
# `Liveness`, with which a gateway reports the heartbeats it answered itself.


class ViewMember(Message, frozen=True):
    member_id: str
    group_instance_id: str | None
    principal: Annotated[str | None, Extension("the principal the member is bound to (None: none)")]
    session_timeout_ms: Int32
    rebalance_timeout_ms: Annotated[Int32 | None, Extension(
        "the member's rebalance timeout: how long a join phase another member's expiry starts lasts at least "
        "(None: a view of an older release)")] = None


class GroupView(Struct, frozen=True):
    """What a gateway answers a group's heartbeats and commits from: the group's state, generation, protocol,
    leader and members, as the coordinator left it after a step. A Stable group's view also carries its committed
    offsets and the position of the last request the step applied (`position`): a gateway answers an OffsetFetch
    from them while nothing was written to that requests-topic partition after it (docs/gateway.md)."""

    group_state: Literal["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"]
    generation: Int32
    protocol_type: str | None
    protocol_name: str | None
    leader: str | None
    members: tuple[ViewMember, ...]
    offsets: tuple[ViewOffset, ...] | UnsetType = UNSET
    position: ViewPosition | UnsetType = UNSET


class ViewMark(Struct, frozen=True):
    """Every view of the requests before `positions` (control-topic partition -> next offset) was written before
    this mark, in every partition of the views topic. `time_ms`: when the coordinator wrote it (its clock; shown,
    never compared with another clock)."""

    requests_topic: str
    positions: dict[str, Int64]
    time_ms: Int64


class OpenTransaction(Struct, frozen=True, kw_only=True):
    """A transaction with TxnOffsetCommits waiting for its marker, and when its timeout passed (its first
    TxnOffsetCommit's timestamp plus the producer's transaction timeout, ms)."""

    transactional_id: str
    producer_id: Int64
    producer_epoch: Int16
    deadline_ms: Int64


class OpenTransactions(Struct, frozen=True, kw_only=True):
    """A state bucket's open transactions, under the key `\\xfftransactions/` and the bucket's number: a gateway
    has the upstream abort one still open past its deadline (docs/gateway.md, "Transactions")."""

    transactions: tuple[OpenTransaction, ...]


class HeardMember(Struct, frozen=True, kw_only=True):
    """One member's latest heartbeat a gateway answered itself, and that answer."""

    member_id: str
    group_instance_id: str | None = None
    generation_id: Int32
    principal: str | None = None
    heard_ms: Annotated[Int64, Meta(description="when the gateway answered it (the gateway's clock)")]
    answered: Annotated[Int16, Meta(description="the error code the gateway answered with")]


class Liveness(Struct, frozen=True, kw_only=True):
    """Internal request, written by gateways, never by clients: the heartbeats a gateway answered from a group's
    view since its last one, at most one per group and liveness interval. The coordinator takes each as that
    member's Heartbeat at `heard_ms` (Kafka's rules, sessions restarted) and sends no response."""

    api: Literal["Liveness"] = "Liveness"
    request_id: str = ""
    group_id: str
    members: tuple[HeardMember, ...]


VIEWS: dict[str, type[Struct]] = {"GroupView": GroupView, "ConsumerGroupView": ConsumerGroupView,
                                  "ShareGroupView": ShareGroupView, "ViewMark": ViewMark,
                                  "OpenTransactions": OpenTransactions}
"""The views topic's values by their schema names (keys: the group id's UTF-8 bytes, `\\xffmark` for a mark,
`\\xfftransactions/N` for state bucket N's open transactions)."""
