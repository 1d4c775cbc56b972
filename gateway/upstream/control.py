"""Kafka's group requests and responses <-> the control topic's JSON, by one walk over the messages' schemas.

The control topic speaks Kafka's `<Api>Request`/`<Api>Response` fields in snake_case (docs/wire-format.md), which
are exactly the attribute names of kafka-python's message classes, built from Kafka's own JSON definitions. So one
schema-driven conversion serves every API and version in both directions: a field of the message's version is
copied by name, bytes are base64 in JSON, a bitfield (authorized operations) is Kafka's int32 and a UUID its
string. The gateway adds the envelope (`api`, `api_version`, `group_id`, `principal`; the transport adds
`request_id`) and JoinGroup's `client_id`/`client_host` (our extension: Kafka takes them from the header and the
socket).

Where the control format deliberately differs, the gateway fans out and merges, and that is all this module knows
by name: DescribeGroups, ConsumerGroupDescribe, DeleteGroups and OffsetFetch v8+ name several groups in Kafka and
one per control request; ListGroups is answered per gateway listener (`Gateway.list_groups`).

KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe go the same way: kafka-python ships no classes for them,
so `gateway.upstream.kafka_apis` builds them, with kafka-python's own loader, from Kafka's definitions
(`gateway.upstream.kafka_messages`).
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import msgspec
from kafka.protocol.admin.groups import (DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
                                         DescribeGroupsResponse, ListGroupsRequest, ListGroupsResponse)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           LeaveGroupRequest, LeaveGroupResponse, OffsetCommitRequest,
                                           OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
                                           OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
                                           SyncGroupResponse)
from kafka.protocol.producer.transaction import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from kafka.protocol.schemas.fields.codecs import BitField

from gateway.upstream.kafka_apis import (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
                                         ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                                         ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
                                         DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse,
                                         DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
                                         ShareGroupDescribeRequest, ShareGroupDescribeResponse,
                                         ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse)

from schemas.messages import API_VERSIONS as COORDINATOR_VERSIONS
from state.api import error_response

Json = dict[str, Any]
INT32_MIN = -(1 << 31)

# -- the schema walk ---------------------------------------------------------------------------------------------


def to_json(message: Any, version: int, fields: Any = None) -> Json:
    """A decoded message (or one of its structs) as control JSON: the fields of `version`, by name."""
    out: Json = {}
    for field in (fields or message._struct).fields.values():
        if field.for_version_q(version):
            out[field.name] = _value_to_json(field, getattr(message, field.name), version)
    return out


def _value_to_json(field: Any, value: Any, version: int) -> Any:
    if value is None:
        # kafka-python decodes Kafka's INT32_MIN ("not requested") authorized operations as None
        return INT32_MIN if field.type_str == "bitfield" else None
    if field.is_struct_array():
        return [to_json(item, version, field) for item in value]
    if field.is_struct():
        return to_json(value, version, field)
    if field.is_array():
        return [_simple_to_json(field.array_of.type_str, v) for v in value]
    return _simple_to_json(field.type_str, value)


def _simple_to_json(type_str: str, value: Any) -> Any:
    if value is None:
        return None
    if type_str in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    if type_str == "uuid":
        return str(value)
    if type_str == "bitfield":
        return BitField.to_32_bit_field(value) - (1 << 32 if 31 in value else 0)
    return value


def from_json(cls: type[ApiMessage], version: int, doc: Json) -> ApiMessage:
    """The message of `version` with the fields `doc` has (others keep the schema's defaults)."""
    return cls[version](**_values(cls._struct, doc, version))


def _values(struct: Any, doc: Json, version: int) -> Json:
    return {field.name: _value_from_json(field, doc[field.name], version)
            for field in struct.fields.values() if field.for_version_q(version) and field.name in doc}


def _value_from_json(field: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if field.is_struct_array():
        return [field.data_class(**_values(field, item, version)) for item in value]
    if field.is_struct():
        return field.data_class(**_values(field, value, version))
    if field.is_array():
        return [_simple_from_json(field.array_of.type_str, v) for v in value]
    return _simple_from_json(field.type_str, value)


def _simple_from_json(type_str: str, value: Any) -> Any:
    if value is None:
        return None
    if type_str in ("bytes", "records"):
        return base64.b64decode(value)
    if type_str == "uuid":
        return uuid.UUID(value)
    if type_str == "bitfield":
        bits = BitField.from_32_bit_field(value & 0xFFFFFFFF)
        return None if bits == {31} else bits
    return value


# -- the group APIs ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupApi:
    """How one Kafka group API maps onto control requests: `fan_out` turns the decoded request (as JSON) into one
    control body per group, `merge` turns their answers (in the same order) into the Kafka response (as JSON)."""

    name: str
    request: type[ApiMessage]
    response: type[ApiMessage]
    fan_out: Callable[[Json, int], list[Json]]
    merge: Callable[[Json, list[Json], int], Json]

    @property
    def api_key(self) -> int:
        return self.request.API_KEY

    @property
    def min_version(self) -> int:
        """The oldest version served (ShareGroupHeartbeat's v0, KIP-932's early access, is gone)."""
        return COORDINATOR_VERSIONS[self.name][0]

    @property
    def max_version(self) -> int:
        """What the gateway serves: what both the coordinator and kafka-python's classes know."""
        return min(COORDINATOR_VERSIONS[self.name][1], self.request.max_version, self.response.max_version)


def _one(request: Json, version: int) -> list[Json]:
    return [request]


def _first(request: Json, answers: list[Json], version: int) -> Json:
    return answers[0]


def _describe_groups(request: Json, version: int) -> list[Json]:
    return [{"group_id": g, "include_authorized_operations": request.get("include_authorized_operations", False)}
            for g in request["groups"]]


def _delete_groups(request: Json, version: int) -> list[Json]:
    return [{"group_id": g} for g in request["groups_names"]]


def _offset_fetch(request: Json, version: int) -> list[Json]:
    if version < 8:
        return [request]
    return [{**group, "require_stable": request.get("require_stable", False)} for group in request["groups"]]


def _offset_fetch_merge(request: Json, answers: list[Json], version: int) -> Json:
    return answers[0] if version < 8 else {"groups": answers}


# KIP-848's messages name topics by id. The control topic carries a topic id as Kafka's `Uuid.toString()` writes it
# (URL-safe base64 of its 16 bytes, without padding: `schemas.consumer_group.TopicId`), the walk above as a UUID's
# text (what the gateway's policing of Produce and Fetch reads), so these two APIs convert their ids both ways.

def kafka_topic_id(text: str) -> str:
    """A UUID's text as Kafka's Uuid text."""
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode("ascii").rstrip("=")


def uuid_topic_id(text: str) -> str:
    """Kafka's Uuid text as a UUID's text."""
    return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))


def _topic_ids(topics: list[Json] | None, convert: Callable[[str], str]) -> list[Json] | None:
    return None if topics is None else [{**t, "topic_id": convert(t["topic_id"])} for t in topics]


def _consumer_group_heartbeat(request: Json, version: int) -> list[Json]:
    return [{**request, "topic_partitions": _topic_ids(request.get("topic_partitions"), kafka_topic_id)}]


def _consumer_group_heartbeat_merge(request: Json, answers: list[Json], version: int) -> Json:
    (answer,) = answers
    assignment = answer.get("assignment")
    if assignment is None:
        return answer
    return {**answer, "assignment": {"topic_partitions": _topic_ids(assignment["topic_partitions"], uuid_topic_id)}}


def _consumer_group_describe(request: Json, version: int) -> list[Json]:
    return [{"group_id": g, "include_authorized_operations": request.get("include_authorized_operations", False)}
            for g in request["group_ids"]]


def _consumer_group_describe_merge(request: Json, answers: list[Json], version: int) -> Json:
    def member(m: Json) -> Json:
        return {**m, **{part: {"topic_partitions": _topic_ids(m[part]["topic_partitions"], uuid_topic_id)}
                        for part in ("assignment", "target_assignment")}}

    return {"groups": [{**g, "members": [member(m) for m in g.get("members") or []]} for g in answers]}


# KIP-932's group-side APIs: topic ids as the consumer group's; the offsets APIs name one group per control request.

def _assignment_ids(assignment: Json | None) -> Json | None:
    if assignment is None:
        return None
    return {"topic_partitions": _topic_ids(assignment["topic_partitions"], uuid_topic_id)}


def _share_group_heartbeat_merge(request: Json, answers: list[Json], version: int) -> Json:
    (answer,) = answers
    return {**answer, "assignment": _assignment_ids(answer.get("assignment"))}


def _share_group_describe_merge(request: Json, answers: list[Json], version: int) -> Json:
    return {"groups": [{**g, "members": [{**m, "assignment": _assignment_ids(m["assignment"])}
                                         for m in g.get("members") or []]} for g in answers]}


def _share_offsets_groups(request: Json, version: int) -> list[Json]:
    return [{"group_id": g["group_id"], "topics": g.get("topics")} for g in request["groups"]]


def _share_offsets_groups_merge(request: Json, answers: list[Json], version: int) -> Json:
    return {"groups": [{**g, "topics": _topic_ids(g.get("topics") or [], uuid_topic_id)} for g in answers]}


def _share_offsets_merge(request: Json, answers: list[Json], version: int) -> Json:
    (answer,) = answers
    return {**answer, "responses": _topic_ids(answer.get("responses") or [], uuid_topic_id)}


GROUP_APIS: dict[int, GroupApi] = {api.api_key: api for api in (
    GroupApi("JoinGroup", JoinGroupRequest, JoinGroupResponse, _one, _first),
    GroupApi("SyncGroup", SyncGroupRequest, SyncGroupResponse, _one, _first),
    GroupApi("Heartbeat", HeartbeatRequest, HeartbeatResponse, _one, _first),
    GroupApi("LeaveGroup", LeaveGroupRequest, LeaveGroupResponse, _one, _first),
    GroupApi("OffsetCommit", OffsetCommitRequest, OffsetCommitResponse, _one, _first),
    GroupApi("OffsetFetch", OffsetFetchRequest, OffsetFetchResponse, _offset_fetch, _offset_fetch_merge),
    GroupApi("OffsetDelete", OffsetDeleteRequest, OffsetDeleteResponse, _one, _first),
    GroupApi("DescribeGroups", DescribeGroupsRequest, DescribeGroupsResponse, _describe_groups,
             lambda request, answers, version: {"groups": answers}),
    GroupApi("ListGroups", ListGroupsRequest, ListGroupsResponse, _one, _first),
    GroupApi("DeleteGroups", DeleteGroupsRequest, DeleteGroupsResponse, _delete_groups,
             lambda request, answers, version: {"results": answers}),
    GroupApi("ConsumerGroupHeartbeat", ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
             _consumer_group_heartbeat, _consumer_group_heartbeat_merge),
    GroupApi("ConsumerGroupDescribe", ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
             _consumer_group_describe, _consumer_group_describe_merge),
    GroupApi("ShareGroupHeartbeat", ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, _one,
             _share_group_heartbeat_merge),
    GroupApi("ShareGroupDescribe", ShareGroupDescribeRequest, ShareGroupDescribeResponse,
             _consumer_group_describe, _share_group_describe_merge),
    GroupApi("DescribeShareGroupOffsets", DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
             _share_offsets_groups, _share_offsets_groups_merge),
    GroupApi("AlterShareGroupOffsets", AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, _one,
             _share_offsets_merge),
    GroupApi("DeleteShareGroupOffsets", DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, _one,
             _share_offsets_merge),
    # written after the group's control-topic partition joined the producer's transaction
    # (`gateway.upstream.transactions`)
    GroupApi("TxnOffsetCommit", TxnOffsetCommitRequest, TxnOffsetCommitResponse, _one, _first),
)}
"""By Kafka API key."""


def control_requests(api: GroupApi, version: int, request: Json, principal: str | None,
                     extra: Json | None = None) -> list[Json]:
    """The control bodies (without `request_id`) for a decoded Kafka request."""
    bodies = []
    for fields in api.fan_out(request, version):
        body: Json = {"api": api.name, "api_version": version}
        if principal is not None:
            body["principal"] = principal
        body.update(fields)
        if extra:
            body.update(extra)
        bodies.append(body)
    return bodies


def unanswered(body: Json, code: int, reason: str) -> Json:
    """The answer to a control request the coordinator did not answer in time: the core's error shape for that
    API, plus what Kafka repeats from the request with the error (each committed or fetched partition)."""
    response = msgspec.to_builtins(error_response(body["api"], "", body.get("group_id"), code, reason))
    if body["api"] in ("OffsetCommit", "OffsetFetch", "TxnOffsetCommit") and body.get("topics"):
        response["topics"] = [
            {"name": t["name"], "partitions": [
                {"partition_index": p, "error_code": code, "committed_offset": -1, "committed_leader_epoch": -1,
                 "metadata": None}
                for p in t.get("partition_indexes") or [q["partition_index"] for q in t.get("partitions", [])]]}
            for t in body["topics"]]
    return response
