"""The KIP-848 message classes are Kafka's: every field of ConsumerGroupHeartbeat v0-1 and ConsumerGroupDescribe
v0-1 with Kafka's name, type, versions and nullability (facts from Kafka's own message definitions,
clients/src/main/resources/common/message/ConsumerGroup{Heartbeat,Describe}{Request,Response}.json; kafka-python
ships no definition of these APIs to check against). What is ours is marked `Extension`."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest
from msgspec import inspect as mi

from schemas.consumer_group import CONSUMER_API_VERSIONS, CONSUMER_REQUESTS, CONSUMER_RESPONSES
from schemas.messages import Extension, Versions

ENVELOPE = {"request_id", "api_version", "principal", "group_id"}

TOPIC_PARTITIONS = {"topic_id": ("uuid", "0+", False), "partitions": ("[]int32", "0+", False)}
DESCRIBED_ASSIGNMENT = {"topic_partitions": ({"topic_id": ("uuid", "0+", False),
                                              "topic_name": ("string", "0+", False),
                                              "partitions": ("[]int32", "0+", False)}, "0+", False)}
KAFKA: dict[tuple[str, str], dict[str, tuple[Any, str, bool]]] = {
    # field -> (type, versions, nullable); a dict type is a struct (or array of structs)
    ("ConsumerGroupHeartbeat", "request"): {
        "member_id": ("string", "0+", False),
        "member_epoch": ("int32", "0+", False),
        "instance_id": ("string", "0+", True),
        "rack_id": ("string", "0+", True),
        "rebalance_timeout_ms": ("int32", "0+", False),
        "subscribed_topic_names": ("[]string", "0+", True),
        "subscribed_topic_regex": ("string", "1+", True),
        "server_assignor": ("string", "0+", True),
        "topic_partitions": (TOPIC_PARTITIONS, "0+", True),
    },
    ("ConsumerGroupHeartbeat", "response"): {
        "throttle_time_ms": ("int32", "0+", False),
        "error_code": ("int16", "0+", False),
        "error_message": ("string", "0+", True),
        "member_id": ("string", "0+", True),
        "member_epoch": ("int32", "0+", False),
        "heartbeat_interval_ms": ("int32", "0+", False),
        "assignment": ({"topic_partitions": (TOPIC_PARTITIONS, "0+", False)}, "0+", True),
    },
    ("ConsumerGroupDescribe", "request"): {
        # Kafka's GroupIds: one group per control message, at its top (`group_id`)
        "include_authorized_operations": ("bool", "0+", False),
    },
    ("ConsumerGroupDescribe", "response"): {
        # Kafka's Groups[]: the one group's fields at the top
        "throttle_time_ms": ("int32", "0+", False),
        "error_code": ("int16", "0+", False),
        "error_message": ("string", "0+", True),
        "group_state": ("string", "0+", False),
        "group_epoch": ("int32", "0+", False),
        "assignment_epoch": ("int32", "0+", False),
        "assignor_name": ("string", "0+", False),
        "members": ({
            "member_id": ("string", "0+", False),
            "instance_id": ("string", "0+", True),
            "rack_id": ("string", "0+", True),
            "member_epoch": ("int32", "0+", False),
            "client_id": ("string", "0+", False),
            "client_host": ("string", "0+", False),
            "subscribed_topic_names": ("[]string", "0+", False),
            "subscribed_topic_regex": ("string", "0+", True),
            "assignment": (DESCRIBED_ASSIGNMENT, "0+", False),
            "target_assignment": (DESCRIBED_ASSIGNMENT, "0+", False),
            "member_type": ("int8", "1+", False),
        }, "0+", False),
        "authorized_operations": ("int32", "0+", False),
    },
}
BITS = {"int8": 7, "int16": 15, "int32": 31}


def fields_of(cls: type) -> dict[str, tuple[Any, tuple]]:
    hints = get_type_hints(cls, include_extras=True)
    return {f.name: (f.type, getattr(hints[f.name], "__metadata__", ()))
            for f in mi.type_info(cls).fields}  # type: ignore[union-attr]


def strip(t: Any) -> tuple[Any, bool]:
    """(the type without Meta and None, whether None is allowed)."""
    nullable = False
    while True:
        if isinstance(t, mi.Metadata):
            t = t.type
        elif isinstance(t, mi.UnionType):
            nullable = nullable or any(isinstance(u, mi.NoneType) for u in t.types)
            (t,) = [u for u in t.types if not isinstance(u, mi.NoneType)]
        else:
            return t, nullable


def check(path: str, ours: Any, kafka: Any) -> None:
    if isinstance(kafka, dict):
        if isinstance(ours, mi.VarTupleType):
            ours, _ = strip(ours.item_type)
        assert isinstance(ours, mi.StructType), f"{path}: Kafka's is a struct"
        compare(path, ours.cls, kafka)
    elif kafka.startswith("[]"):
        assert isinstance(ours, mi.VarTupleType), f"{path}: Kafka's is an array"
        check(path, strip(ours.item_type)[0], kafka[2:])
    elif kafka in BITS:
        assert isinstance(ours, mi.IntType) and (ours.ge, ours.le) == (-(2 ** BITS[kafka]), 2 ** BITS[kafka] - 1), (
            f"{path}: {kafka}")
    elif kafka == "uuid":
        assert isinstance(ours, mi.StrType) and ours.pattern is not None, f"{path}: a Uuid is its base64 text"
    elif kafka == "string":
        assert isinstance(ours, (mi.StrType, mi.LiteralType)), f"{path}: string"
    else:
        assert kafka == "bool" and isinstance(ours, mi.BoolType), f"{path}: {kafka}"


def compare(path: str, cls: type, kafka: dict[str, tuple[Any, str, bool]]) -> None:
    ours = {name: v for name, v in fields_of(cls).items()
            if name not in ENVELOPE and not any(isinstance(a, Extension) for a in v[1])}
    assert set(ours) == set(kafka), f"{path}: ours {sorted(ours)}, Kafka's {sorted(kafka)}"
    for name, (t, annotations) in ours.items():
        kafka_type, versions, nullable = kafka[name]
        declared = [a for a in annotations if isinstance(a, Versions)]
        assert (str(declared[0]) if declared else "v0+") == f"v{versions}", f"{path}.{name}: versions"
        base, ours_nullable = strip(t)
        assert ours_nullable == nullable, f"{path}.{name}: nullable"
        check(f"{path}.{name}", base, kafka_type)


@pytest.mark.parametrize("kind", ["request", "response"])
@pytest.mark.parametrize("api", sorted(CONSUMER_API_VERSIONS))
def test_every_field_is_kafkas(api, kind):
    cls = (CONSUMER_REQUESTS if kind == "request" else CONSUMER_RESPONSES)[api]
    compare(f"{api}{kind.title()}", cls, KAFKA[(api, kind)])
