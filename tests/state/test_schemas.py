"""The published JSON Schemas: one per request, response and record, all valid, and the examples conform."""

from __future__ import annotations

import json

import pytest

from schemas.consumer_group import CONSUMER_RECORDS
from schemas.share_group import SHARE_RECORDS
from state.wire import API_VERSIONS
from tests.state.schemas import SCHEMAS, validate_request, validator
from tests.state.test_replay_tool import SCENARIO


VERSIONS = API_VERSIONS
RECORD_SCHEMAS = ["GroupMetadataKey", "GroupMetadataValue", "OffsetCommitKey", "OffsetCommitValue",
                  "TxnOffsetCommitKey", "TxnOffsetCommitValue", *CONSUMER_RECORDS,
                  *SHARE_RECORDS]


@pytest.mark.parametrize("api", sorted(VERSIONS))
def test_every_api_has_a_request_and_a_response_schema(api):
    request = validator(f"{api}Request")
    validator(f"{api}Response")
    assert request.schema["properties"]["api_version"]["maximum"] == VERSIONS[api][1]


@pytest.mark.parametrize("name", [*RECORD_SCHEMAS, "ErrorResponse", "TopicMetadataRequest", "GroupView", "ConsumerGroupView",
                                  "ShareGroupView", "ViewMark", "OpenTransactions"])
def test_record_schemas_are_valid(name):
    validator(name)


def test_no_stray_schema_files():
    names = {p.stem for p in SCHEMAS.glob("*.json")}
    expected = {f"{api}{kind}" for api in VERSIONS for kind in ("Request", "Response")}
    expected |= {*RECORD_SCHEMAS, "ErrorResponse", "TopicMetadataRequest", "GroupView", "ConsumerGroupView",
                 "ShareGroupView", "ViewMark", "OpenTransactions"}
    assert names == expected


def test_the_hand_written_scenario_requests_conform():
    for line in SCENARIO.read_text().splitlines():
        event = json.loads(line)
        if "request" in event:
            validate_request(event["request"])
