"""The shell's entry point: run one group's requests at one instant.

CONTRACT (the streaming job depends on exactly these names; the core issue replaces the stub bodies):

    route(key, value) -> Route
        Decides where a control-topic record goes, without Spark knowing the protocol:
        Route(kind="group", group_id=...)      -> to the per-group coordinator keyed by group_id
        Route(kind="directory", reply_key=...) -> ListGroups, answered from the group directory
        Route(kind="reject", reason=..., response=bytes|None, reply_key=...) -> dead letter (+ error response)

    step_group(group_id, stored, requests, now_ms, config) -> GroupStep
        stored:   the bytes this function returned as `state` last time for this group (None: never seen)
        requests: the raw record values routed to this group, in (partition, offset) order; may be empty
                  (a timer call). First expires everything due at now_ms, then handles the requests in order.
        Returns GroupStep(state, responses, records, dead_letters, next_deadline_ms):
          state            bytes to store, or None to drop the key from the state store
          responses        JSON values for the response topic (key = group_id)
          records          (key, value | None) for the compacted records topic; None value = tombstone
          dead_letters     (index into requests, reason) for records that could not be handled
          next_deadline_ms when to be called again with no requests (None: no timer)
        Never raises for any input bytes. Deterministic: same arguments -> byte-identical GroupStep.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, Sequence

from state.config import CoordinatorConfig

STATE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Route:
    kind: Literal["group", "directory", "reject"]
    group_id: str | None = None
    reply_key: bytes | None = None
    reason: str | None = None
    response: bytes | None = None


@dataclass(frozen=True)
class GroupStep:
    state: bytes | None
    responses: list[bytes] = field(default_factory=list)
    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    dead_letters: list[tuple[int, str]] = field(default_factory=list)
    next_deadline_ms: int | None = None


def route(key: bytes | None, value: bytes | None) -> Route:  # STUB
    try:
        body = json.loads(value or b"")
    except ValueError as exc:
        return Route("reject", reason=f"malformed JSON: {exc}", reply_key=key)
    if not isinstance(body, dict):
        return Route("reject", reason="request is not a JSON object", reply_key=key)
    if body.get("api") == "ListGroups":
        return Route("directory", reply_key=key)
    group_id = body.get("group_id")
    if not isinstance(group_id, str):
        return Route("reject", reason="group_id missing", reply_key=key)
    return Route("group", group_id=group_id)


def step_group(
    group_id: str, stored: bytes | None, requests: Sequence[bytes], now_ms: int, config: CoordinatorConfig
) -> GroupStep:  # STUB: echoes every request with error_code 0
    responses = []
    for raw in requests:
        body = json.loads(raw)
        responses.append(
            json.dumps({"api": body["api"], "request_id": body.get("request_id"), "group_id": group_id,
                        "error_code": 0}, separators=(",", ":")).encode()
        )
    return GroupStep(state=b"{}", responses=responses)
