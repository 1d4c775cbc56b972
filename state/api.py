"""The core's public face: everything the shells (`streaming/`, the Spark job; `gateway/`) use of `state/`.

The shells import from here and nowhere else in `state/`, so the core's modules can be split, renamed or merged
behind these names without touching the job or the gateway (tests/test_imports.py holds them to it). The names
are Kafka's or the core's own; what each does is said where it is defined.
"""

from state.batch import (
    TOPIC_METADATA_GROUP,
    GroupStep,
    OffsetsReader,
    StoredGroup,
    route,
    step_group,
    upgrade_state,
)
from state.config import CoordinatorConfig
from state.views.directory import GroupDirectory
from state.errors import Errors, append_error
from state.views.fast_answers import (
    FastAnswer,
    commit_from_view,
    commit_response,
    consumer_heartbeat_from_view,
    declares_nothing_new,
    heartbeat_from_view,
    share_heartbeat_from_view,
)
from state.classic.group import GroupState
from state.offsets.handlers import fetch_from_view
from state.offsets.transactions import (OPEN_TRANSACTIONS_KEY, TRANSACTIONS_GROUP, OpenTransaction, decode_open_transactions,
                                       deliver_markers, marker_request, open_transactions, txn_commit_from_view)
from state.classic.member_id_round import PENDING_MEMBER, is_member_id_round, member_id_required, pending_member_id
from state.config import kafka_python_settings, read_properties
from state.records import decode_key
from state.share.partitions.grant import lease_deadline
from state.share.partitions.partition import (
    AcknowledgementBatch,
    AcquiredRecords,
    Limits,
    PersistedState,
    RecordState,
    SharePartition,
    StateBatch,
    acknowledge,
    acquire,
    expire_locks,
    move_log_start,
    next_fetch_offset,
    next_lock_deadline,
    release_member,
    resolve_start_offset,
    share_partition_from_snapshot,
    validate_acknowledgement_batches,
)
from state.handling.timers import earliest, is_due
from state.views.txn_proof import TxnClaim, TxnEntry, request_entry, txn_claim, txn_settles
from state.views.published import (MARK_KEY, PublishedGroup, PublishedShareGroup, PublishedView, decode_mark,
                                   decode_view, encode_mark)
from state.wire import BadRequest, decode_request, encode, error_response

__all__ = [
    "AcknowledgementBatch",
    "AcquiredRecords",
    "BadRequest",
    "CoordinatorConfig",
    "Errors",
    "FastAnswer",
    "GroupDirectory",
    "GroupState",
    "GroupStep",
    "Limits",
    "MARK_KEY",
    "OffsetsReader",
    "PENDING_MEMBER",
    "PersistedState",
    "PublishedGroup",
    "PublishedView",
    "RecordState",
    "SharePartition",
    "StateBatch",
    "StoredGroup",
    "TOPIC_METADATA_GROUP",
    "OPEN_TRANSACTIONS_KEY",
    "OpenTransaction",
    "TRANSACTIONS_GROUP",
    "TxnClaim",
    "TxnEntry",
    "acknowledge",
    "acquire",
    "append_error",
    "commit_from_view",
    "commit_response",
    "consumer_heartbeat_from_view",
    "declares_nothing_new",
    "decode_key",
    "decode_mark",
    "decode_request",
    "decode_view",
    "decode_open_transactions",
    "deliver_markers",
    "open_transactions",
    "earliest",
    "encode",
    "encode_mark",
    "error_response",
    "expire_locks",
    "fetch_from_view",
    "heartbeat_from_view",
    "share_heartbeat_from_view",
    "PublishedShareGroup",
    "is_due",
    "is_member_id_round",
    "kafka_python_settings",
    "lease_deadline",
    "marker_request",
    "member_id_required",
    "move_log_start",
    "next_fetch_offset",
    "next_lock_deadline",
    "pending_member_id",
    "read_properties",
    "request_entry",
    "release_member",
    "resolve_start_offset",
    "route",
    "share_partition_from_snapshot",
    "step_group",
    "upgrade_state",
    "validate_acknowledgement_batches",
    "txn_claim",
    "txn_commit_from_view",
    "txn_settles",
]
