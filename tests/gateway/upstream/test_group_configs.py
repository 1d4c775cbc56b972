"""GROUP resources of IncrementalAlterConfigs and DescribeConfigs answered by the coordinator (through its real core),
the rest of the request forwarded to the cluster as it was, the answers merged in the request's order; a refused
group answered 30 for that resource alone."""

from __future__ import annotations

import asyncio
import json

from kafka.protocol.admin.configs import (DescribeConfigsRequest, DescribeConfigsResponse,
                                          IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse)

from gateway.upstream import group_configs
from gateway.upstream.control import from_json, to_json
from state.batch import step_group
from state.config import CoordinatorConfig

CONFIG = CoordinatorConfig()


class Core:
    """The coordinator's answers from its real core, one stored state per group id."""

    def __init__(self) -> None:
        self.states: dict = {}
        self.calls: list[dict] = []

    async def call(self, group_id: str, body: dict) -> dict:
        self.calls.append(body)
        raw = json.dumps({"request_id": "r", **body}).encode()
        step = step_group(group_id, self.states.get(group_id), [raw], 0, CONFIG)
        self.states[group_id] = step.stored(self.states.get(group_id))
        return json.loads(step.responses[0])


def frame(cls, version: int, doc: dict) -> bytes:
    message = from_json(cls, version, doc)
    message.with_header(correlation_id=7, client_id="admin")
    return bytes(message.encode(version=version, header=True))


def run(api_key, request_frame, version, core, upstream=None, allowed=lambda op, g: True):
    async def go():
        split = group_configs.split(api_key, request_frame, version, 7, core.call, allowed)
        forwarded = None
        if split.rest is not None:
            forwarded = asyncio.get_running_loop().create_future()
            forwarded.set_result(upstream(split.rest))
        return split.rest, await split.answer(forwarded)
    return asyncio.run(go())


def test_alter_then_describe_a_groups_configs():
    core = Core()
    alter = frame(IncrementalAlterConfigsRequest, 1, {"resources": [{"resource_type": 32, "resource_name": "g",
        "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
        "validate_only": False})
    rest, payload = run(44, alter, 1, core)
    assert rest is None
    answer = to_json(IncrementalAlterConfigsResponse.decode(payload, version=1, header=True), 1)
    assert answer["responses"] == [{"error_code": 0, "error_message": None, "resource_type": 32, "resource_name": "g"}]
    describe = frame(DescribeConfigsRequest, 4, {"resources": [{"resource_type": 32, "resource_name": "g",
        "configuration_keys": ["share.auto.offset.reset", "share.record.lock.duration.ms"]}],
        "include_synonyms": False, "include_documentation": False})
    _, payload = run(32, describe, 4, core)
    (result,) = to_json(DescribeConfigsResponse.decode(payload, version=4, header=True), 4)["results"]
    assert [(c["name"], c["value"], c["config_source"]) for c in result["configs"]] == [
        ("share.auto.offset.reset", "earliest", 8), ("share.record.lock.duration.ms", "30000", 5)]


def test_mixed_request_forwards_the_rest_and_merges_in_order():
    core = Core()
    request = frame(DescribeConfigsRequest, 4, {"resources": [
        {"resource_type": 2, "resource_name": "orders", "configuration_keys": None},
        {"resource_type": 32, "resource_name": "g", "configuration_keys": ["share.isolation.level"]}],
        "include_synonyms": False, "include_documentation": False})
    seen = []

    def upstream(rest: bytes) -> bytes:
        doc = to_json(DescribeConfigsRequest.decode(rest, version=4, header=True), 4)
        seen.append([r["resource_name"] for r in doc["resources"]])
        response = from_json(DescribeConfigsResponse, 4, {"throttle_time_ms": 0, "results": [{
            "error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "orders", "configs": []}]})
        response.with_header(correlation_id=7)
        return bytes(response.encode(header=True))

    _, payload = run(32, request, 4, core, upstream)
    assert seen == [["orders"]]
    results = to_json(DescribeConfigsResponse.decode(payload, version=4, header=True), 4)["results"]
    assert [r["resource_name"] for r in results] == ["orders", "g"]
    assert results[1]["configs"][0]["value"] == "read_uncommitted"


def test_a_refused_group_is_answered_30_and_never_reaches_the_coordinator():
    core = Core()
    alter = frame(IncrementalAlterConfigsRequest, 1, {"resources": [{"resource_type": 32, "resource_name": "g",
        "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
        "validate_only": False})
    _, payload = run(44, alter, 1, core, allowed=lambda op, g: op != "ALTER_CONFIGS")
    (entry,) = to_json(IncrementalAlterConfigsResponse.decode(payload, version=1, header=True), 1)["responses"]
    assert entry["error_code"] == 30 and core.calls == []


def test_a_request_without_group_resources_is_not_touched():
    request = frame(DescribeConfigsRequest, 4, {"resources": [{"resource_type": 2, "resource_name": "orders",
        "configuration_keys": None}], "include_synonyms": False, "include_documentation": False})
    assert group_configs.split(32, request, 4, 7, Core().call, lambda op, g: True) is None
