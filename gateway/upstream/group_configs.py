"""A group's configs (ConfigResource type GROUP, KIP-848 and KIP-932) answered by the coordinator, not the cluster.

IncrementalAlterConfigs and DescribeConfigs may name GROUP resources among others. The GROUP ones become one
control request each (`IncrementalAlterGroupConfigs` / `DescribeGroupConfigs`, docs/wire-format.md), which the
coordinator answers with Kafka's rules (`state.share.configs`); the others go to the cluster as before, in a request
without the GROUP resources; the answers are merged in the request's order. With authorization on, a GROUP resource
needs ALTER_CONFIGS / DESCRIBE_CONFIGS on the group (GROUP_AUTHORIZATION_FAILED, 30, for that resource), as
Kafka's KafkaApis checks it. AlterConfigs (the non-incremental one) is left to the cluster: Kafka refuses GROUP
resources there too.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from kafka.protocol.admin.configs import (DescribeConfigsRequest, DescribeConfigsResponse,
                                          IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse)

from gateway.protocol import strict
from gateway.upstream.control import Json, from_json, to_json

GROUP_RESOURCE = 32
"""Kafka's ConfigResource.Type.GROUP."""
GROUP_AUTHORIZATION_FAILED = 30
COORDINATOR_NOT_AVAILABLE = 15
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44


@dataclass(frozen=True)
class _Api:
    request: Any
    response: Any
    list_key: str
    control_api: str
    operation: str


APIS = {
    DESCRIBE_CONFIGS: _Api(DescribeConfigsRequest, DescribeConfigsResponse, "results", "DescribeGroupConfigs",
                           "DESCRIBE_CONFIGS"),
    INCREMENTAL_ALTER_CONFIGS: _Api(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, "responses",
                                    "IncrementalAlterGroupConfigs", "ALTER_CONFIGS"),
}


@dataclass
class Split:
    """A configs request with GROUP resources: the rest (None: nothing for the cluster) as a frame to forward, and
    how to answer."""

    rest: bytes | None
    answer: Callable[[Awaitable[bytes] | None], Awaitable[bytes]]


def split(api_key: int, frame: bytes, version: int, correlation: int, call: Callable[[str, Json], Awaitable[Json]],
          allowed: Callable[[str, str], bool]) -> Split | None:
    """None when the request names no GROUP resource (it goes to the cluster as it is). `call(group_id, body)`:
    the coordinator's answer; `allowed(operation, group_id)`: the principal's ACL on the group."""
    api = APIS[api_key]
    request = strict.decode(api.request, frame, version)
    doc = to_json(request, version)
    resources = doc["resources"]
    if not any(r["resource_type"] == GROUP_RESOURCE for r in resources):
        return None
    rest = [r for r in resources if r["resource_type"] != GROUP_RESOURCE]
    rest_frame = None
    if rest:
        message = from_json(api.request, version, {**doc, "resources": rest})
        message.with_header(correlation_id=correlation, client_id=request.header.client_id)
        rest_frame = bytes(message.encode(version=version, header=True))
    answers = {i: _group_answer(api, r, doc, version, call, allowed)
               for i, r in enumerate(resources) if r["resource_type"] == GROUP_RESOURCE}

    async def answer(forwarded: Awaitable[bytes] | None) -> bytes:
        upstream: list[Json] = []
        throttle = 0
        if forwarded is not None:
            decoded = to_json(api.response.decode(await forwarded, version=version, header=True), version)
            upstream, throttle = decoded[api.list_key], decoded.get("throttle_time_ms", 0)
        groups = {i: await a for i, a in answers.items()}
        others = iter(upstream)
        entries = [groups[i] if i in groups else next(others) for i in range(len(resources))]
        response = from_json(api.response, version, {"throttle_time_ms": throttle, api.list_key: entries})
        response.with_header(correlation_id=correlation)
        return bytes(response.encode(header=True))  # built at `version`: kafka-python's response headers take no version

    return Split(rest_frame, answer)


async def _group_answer(api: _Api, resource: Json, doc: Json, version: int, call: Callable,
                        allowed: Callable[[str, str], bool]) -> Json:
    group_id = resource["resource_name"]
    entry: Json = {"resource_type": GROUP_RESOURCE, "resource_name": group_id, "error_code": 0,
                   "error_message": None}
    if not allowed(api.operation, group_id):
        return {**entry, "error_code": GROUP_AUTHORIZATION_FAILED, "error_message": "Group authorization failed.",
                **({"configs": []} if api is APIS[DESCRIBE_CONFIGS] else {})}
    if api is APIS[DESCRIBE_CONFIGS]:
        body = {"api": api.control_api, "group_id": group_id, "configuration_keys": resource.get("configuration_keys"),
                "include_documentation": bool(doc.get("include_documentation"))}
    else:
        body = {"api": api.control_api, "group_id": group_id, "configs": resource["configs"],
                "validate_only": bool(doc.get("validate_only"))}
    try:
        answer = await call(group_id, body)
    except (asyncio.TimeoutError, ConnectionError) as exc:
        answer = {"error_code": COORDINATOR_NOT_AVAILABLE, "error_message": str(exc)}
    entry.update(error_code=answer.get("error_code", 0), error_message=answer.get("error_message"))
    if api is APIS[DESCRIBE_CONFIGS]:
        entry["configs"] = [{**c, "is_default": c.get("config_source") == 5, "synonyms": []}
                            for c in answer.get("configs") or []]
    return entry
