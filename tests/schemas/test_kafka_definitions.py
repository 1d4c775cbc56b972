"""The message classes are Kafka's: every field of a request or response has Kafka's name, type and versions, and
every field Kafka defines up to the version we answer is there (checked against Kafka's own JSON message
definitions, as kafka-python ships them, and for KIP-848's APIs, which it does not ship, as
`gateway.upstream.kafka_messages` has them). What is ours is marked `Extension`, or listed here with why."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest
from msgspec import inspect as mi

from kafka.protocol.producer.transaction import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from gateway.upstream.control import GROUP_APIS
from schemas.messages import API_VERSIONS, REQUESTS, RESPONSES, Extension, Versions

KAFKA = {api.name: (api.request, api.response) for api in GROUP_APIS.values()}
KAFKA["TxnOffsetCommit"] = (TxnOffsetCommitRequest, TxnOffsetCommitResponse)  # the gateway serves it its own way
ENVELOPE = {"request_id", "api_version", "principal", "group_id"}
SEVERAL_GROUPS = {
    # Kafka names several groups in one message; a control message names one, at its top level
    ("DescribeGroups", "request"): ("groups", None),
    ("DescribeGroups", "response"): (None, "groups"),
    ("DeleteGroups", "request"): ("groups_names", None),
    ("DeleteGroups", "response"): (None, "results"),
    ("OffsetFetch", "request"): (None, "groups"),
    ("OffsetFetch", "response"): (None, "groups"),
    ("ConsumerGroupDescribe", "request"): ("group_ids", None),
    ("ConsumerGroupDescribe", "response"): (None, "groups"),
    ("ShareGroupDescribe", "request"): ("group_ids", None),
    ("ShareGroupDescribe", "response"): (None, "groups"),
    ("DescribeShareGroupOffsets", "request"): (None, "groups"),
    ("DescribeShareGroupOffsets", "response"): (None, "groups"),
}
"""(Kafka's list of group ids, or Kafka's list of per-group structs whose fields are ours at the top)."""
OURS = {("OffsetCommit", "response"): {"error_code"}, ("TxnOffsetCommit", "response"): {"error_code"}}
"""Fields that are our extension without a class of their own to mark: the top-level OffsetCommit error code."""
INT_TYPES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63, "bitfield": 31}
"""Bits of each integer type; a bitfield (authorized operations) is an int32 on the wire."""


def kafka_fields(struct: Any, max_version: int) -> dict[str, Any]:
    return {f.name: f for f in struct.fields.values() if f._versions[0] <= max_version}


def our_fields(cls: type) -> dict[str, tuple[Any, tuple]]:
    hints = get_type_hints(cls, include_extras=True)
    return {f.name: (f.type, getattr(hints[f.name], "__metadata__", ()))
            for f in mi.type_info(cls).fields}  # type: ignore[union-attr]


def unwrap(t: Any) -> Any:
    if isinstance(t, mi.Metadata):
        return unwrap(t.type)
    if isinstance(t, mi.UnionType):
        (only,) = [u for u in t.types if not isinstance(u, mi.NoneType)]
        return unwrap(only)
    return t


def nullable(t: Any) -> bool:
    while isinstance(t, mi.Metadata):
        t = t.type
    return isinstance(t, mi.UnionType) and any(isinstance(u, mi.NoneType) for u in t.types)


def check_type(path: str, ours: Any, kafka: Any, max_version: int) -> None:
    ours = unwrap(ours)
    if kafka.is_struct_array() or kafka.is_array():
        assert isinstance(ours, mi.VarTupleType), f"{path}: Kafka's is an array"
        item = unwrap(ours.item_type)
        if kafka.is_struct_array():
            # Kafka's struct names repeat across messages (TopicPartitions); ours may carry the message's name first
            assert isinstance(item, mi.StructType) and item.cls.__name__.endswith(kafka.type_str), (
                f"{path}: Kafka's struct is {kafka.type_str}")
            compare(path, item.cls, kafka_fields(kafka, max_version), max_version, set())
        else:
            check_simple(path, item, kafka.array_of.type_str)
    elif kafka.is_struct():
        assert isinstance(ours, mi.StructType), f"{path}: Kafka's is a struct"
        compare(path, ours.cls, kafka_fields(kafka, max_version), max_version, set())
    else:
        check_simple(path, ours, kafka.type_str)


def check_simple(path: str, ours: Any, type_str: str) -> None:
    if type_str in INT_TYPES:
        bits = INT_TYPES[type_str]
        assert isinstance(ours, mi.IntType) and (ours.ge, ours.le) == (-(2**bits), 2**bits - 1), f"{path}: {type_str}"
    elif type_str == "bytes":
        assert isinstance(ours, mi.StrType) and ours.pattern is not None, f"{path}: bytes are base64 text"
    elif type_str == "string":
        assert (isinstance(ours, mi.StrType) and ours.pattern is None) or (
            isinstance(ours, mi.LiteralType) and all(isinstance(v, str) for v in ours.values)), f"{path}: string"
    elif type_str == "bool":
        assert isinstance(ours, mi.BoolType), f"{path}: bool"
    elif type_str == "uuid":
        assert isinstance(ours, mi.StrType) and ours.pattern is not None, f"{path}: a Uuid is its text"
    else:
        pytest.fail(f"{path}: Kafka type {type_str} not expected in a group API")


def compare(path: str, cls: type, kafka: dict[str, Any], max_version: int, skip: set[str]) -> None:
    for name, (t, annotations) in our_fields(cls).items():
        if name in skip or any(isinstance(a, Extension) for a in annotations):
            continue
        assert name in kafka, f"{path}.{name} is not Kafka's (mark it Extension)"
        versions = [a for a in annotations if isinstance(a, Versions)]
        if versions:
            assert (versions[0].low, versions[0].high) == tuple(kafka[name]._versions), f"{path}.{name}: versions"
        check_type(f"{path}.{name}", t, kafka[name], max_version)
        if kafka[name].nullable_for_version_q(max_version):
            assert nullable(t), f"{path}.{name}: Kafka's may be null"
    missing = set(kafka) - set(our_fields(cls)) - skip
    assert not missing, f"{path}: Kafka's {sorted(missing)} are not declared"


@pytest.mark.parametrize("kind", ["request", "response"])
@pytest.mark.parametrize("api", sorted(API_VERSIONS))
def test_every_field_is_kafkas(api, kind):
    max_version = API_VERSIONS[api][1]
    kafka = KAFKA[api][kind == "response"]
    cls = (REQUESTS if kind == "request" else RESPONSES)[api]
    skip = ENVELOPE | OURS.get((api, kind), set())
    fields = kafka_fields(kafka._struct, max_version)
    ids, per_group = SEVERAL_GROUPS.get((api, kind), (None, None))
    if ids:
        del fields[ids]
    if per_group:
        group = fields.pop(per_group)
        fields = {**kafka_fields(group, max_version), **fields}  # a field at both levels: the top one's layout
    compare(f"{api}{kind.title()}", cls, fields, max_version, skip)


def test_the_gateway_serves_what_the_core_answers():
    for api in GROUP_APIS.values():
        assert api.max_version == min(API_VERSIONS[api.name][1], api.request.max_version, api.response.max_version)
