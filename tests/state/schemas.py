"""The JSON Schemas in schemas/, loaded once, and the validators the tests call on everything emitted."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jsonschema

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate_request(request: dict) -> None:
    validator(f"{request['api']}Request").validate(request)


def validate_response(response: dict) -> None:
    name = f"{response['api']}Response"
    validator(name if (SCHEMAS / f"{name}.json").exists() else "ErrorResponse").validate(response)


RECORD_KINDS = {1: "OffsetCommit", 2: "GroupMetadata", 3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata",
                5: "ConsumerGroupMemberMetadata", 6: "ConsumerGroupTargetAssignmentMetadata",
                7: "ConsumerGroupTargetAssignmentMember", 8: "ConsumerGroupCurrentMemberAssignment",
                16: "ConsumerGroupRegularExpression", 102: "TxnOffsetCommit"}
"""Record type (the key's `version`) -> the name of its key and value schemas, as Kafka names them."""


def validate_record(key: dict, value: dict | None) -> None:
    kind = RECORD_KINDS[key["version"]]
    validator(f"{kind}Key").validate(key)
    if value is not None:
        validator(f"{kind}Value").validate(value)
