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
from state.errors import Errors
from state.views.fast_answers import (
    FastAnswer,
    commit_from_view,
    commit_response,
    consumer_heartbeat_from_view,
    declares_nothing_new,
    heartbeat_from_view,
)
from state.classic.group import GroupState
from state.offsets.handlers import fetch_from_view
from state.classic.member_id_round import PENDING_MEMBER, is_member_id_round, member_id_required, pending_member_id
from state.config import kafka_python_settings, read_properties
from state.records import decode_key
from state.runtime.timers import earliest, is_due
from state.views.published import MARK_KEY, PublishedGroup, PublishedView, decode_mark, decode_view, encode_mark
from state.wire import BadRequest, decode_request, encode, error_response

__all__ = [
    "MARK_KEY",
    "TOPIC_METADATA_GROUP",
    "BadRequest",
    "CoordinatorConfig",
    "Errors",
    "FastAnswer",
    "GroupDirectory",
    "GroupState",
    "PENDING_MEMBER",
    "GroupStep",
    "OffsetsReader",
    "PublishedGroup",
    "PublishedView",
    "StoredGroup",
    "commit_from_view",
    "commit_response",
    "consumer_heartbeat_from_view",
    "declares_nothing_new",
    "decode_key",
    "decode_mark",
    "decode_request",
    "decode_view",
    "earliest",
    "encode",
    "encode_mark",
    "error_response",
    "fetch_from_view",
    "heartbeat_from_view",
    "is_due",
    "is_member_id_round",
    "kafka_python_settings",
    "member_id_required",
    "pending_member_id",
    "read_properties",
    "route",
    "step_group",
    "upgrade_state",
]
