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


def validate_record(key: dict, value: dict | None) -> None:
    kind = {1: "OffsetCommit", 2: "GroupMetadata"}[key["version"]]
    validator(f"{kind}Key").validate(key)
    if value is not None:
        validator(f"{kind}Value").validate(value)
