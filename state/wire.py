"""The JSON wire format: parsing and validating requests, building responses.

A request is one JSON object: `api`, optional `api_version`, `request_id`, `group_id` and the snake_case fields of
Kafka's `<Api>Request` at that version (see docs/wire-format.md and schemas/). Parsing checks every field the
handlers read, so handlers never see a mistyped value; a request that fails here is answered with an error
response (when its `request_id` can be read) and changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Callable

from state.errors import INVALID_REQUEST, UNSUPPORTED_VERSION, Errors

API_VERSIONS: dict[str, tuple[int, int]] = {
    "JoinGroup": (0, 9),
    "SyncGroup": (0, 5),
    "Heartbeat": (0, 4),
    "LeaveGroup": (0, 5),
    "OffsetCommit": (0, 9),
    "OffsetFetch": (0, 9),
    "OffsetDelete": (0, 0),
    "DescribeGroups": (0, 5),
    "ListGroups": (0, 5),
    "DeleteGroups": (0, 2),
}
"""The versions we answer; a request without `api_version` is taken at the latest."""

MAX_STRING_BYTES = 32767
"""Kafka strings are int16-length-prefixed."""
MAX_BYTES_FIELD = 1_048_576
"""Largest decoded `metadata`/`assignment` we accept: Kafka's default max message size."""
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


class BadRequest(Exception):
    """The request cannot be handled; `code` is the Kafka error code of the answer."""

    def __init__(self, reason: str, code: Errors = INVALID_REQUEST) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


@dataclass(frozen=True, slots=True)
class Request:
    api: str
    version: int
    request_id: str
    group_id: str
    fields: dict[str, Any]
    principal: str | None = None
    """Who sent it, as the gateway authenticated it (`User:alice`); None when written to the control topic
    directly. A member is bound to the principal that joined it (`ClassicGroup.validate_member`)."""

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]


# -- field checkers: each returns the normalized value or raises BadRequest --------------------------------------

Checker = Callable[[Any, str], Any]
_REQUIRED = object()


def _string(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise BadRequest(f"{path}: expected a string")
    try:
        size = len(v.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadRequest(f"{path}: not valid Unicode") from None
    if size > MAX_STRING_BYTES:
        raise BadRequest(f"{path}: longer than {MAX_STRING_BYTES} bytes")
    return v


def _nullable_string(v: Any, path: str) -> str | None:
    return None if v is None else _string(v, path)


def _integer(lo: int, hi: int) -> Checker:
    def check(v: Any, path: str) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise BadRequest(f"{path}: expected an integer in [{lo}, {hi}]")
        return v

    return check


_int32 = _integer(*INT32)
_int64 = _integer(*INT64)


def _boolean(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise BadRequest(f"{path}: expected true or false")
    return v


def _bytes(v: Any, path: str) -> str:
    """Base64 text, kept as text: the core stores and forwards these bytes without decoding them."""
    if not isinstance(v, str):
        raise BadRequest(f"{path}: expected a base64 string")
    if len(v) > MAX_BYTES_FIELD * 4 // 3 + 4:
        raise BadRequest(f"{path}: larger than {MAX_BYTES_FIELD} bytes")
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{path}: not valid base64") from None
    return v


def _list(item: Checker) -> Checker:
    def check(v: Any, path: str) -> list:
        if not isinstance(v, list):
            raise BadRequest(f"{path}: expected an array")
        return [item(x, f"{path}[{i}]") for i, x in enumerate(v)]

    return check


def _nullable(inner: Checker) -> Checker:
    return lambda v, path: None if v is None else inner(v, path)


def _struct(spec: dict[str, tuple[Checker, Any]]) -> Checker:
    def check(v: Any, path: str) -> dict:
        if not isinstance(v, dict):
            raise BadRequest(f"{path}: expected an object")
        return _fields(v, spec, path + ".")

    return check


def _fields(body: dict, spec: dict[str, tuple[Checker, Any]], prefix: str = "") -> dict:
    out = {}
    for name, (check, default) in spec.items():
        if name in body:
            out[name] = check(body[name], prefix + name)
        elif default is _REQUIRED:
            raise BadRequest(f"{prefix}{name}: missing")
        else:
            out[name] = default
    return out


def _tuple_list(spec: Checker, *names: str) -> Checker:
    """A list of structs, turned into tuples in `names` order (the handlers' compact form)."""
    inner = _list(spec)
    return lambda v, path: [tuple(d[n] for n in names) for d in inner(v, path)]


_PROTOCOLS = _tuple_list(_struct({"name": (_string, _REQUIRED), "metadata": (_bytes, _REQUIRED)}), "name", "metadata")
_TOPIC_COUNTS = _tuple_list(_struct({"name": (_string, _REQUIRED), "partitions": (_int32, _REQUIRED)}),
                            "name", "partitions")
_ASSIGNMENTS = _tuple_list(_struct({"member_id": (_string, _REQUIRED), "assignment": (_bytes, _REQUIRED)}),
                           "member_id", "assignment")
_LEAVE_MEMBERS = _list(_struct({
    "member_id": (_string, _REQUIRED),
    "group_instance_id": (_nullable_string, None),
    "reason": (_nullable_string, None),
}))
_COMMIT_TOPICS = _list(_struct({
    "name": (_string, _REQUIRED),
    "partitions": (_list(_struct({
        "partition_index": (_int32, _REQUIRED),
        "committed_offset": (_int64, _REQUIRED),
        "committed_leader_epoch": (_int32, -1),
        "commit_timestamp": (_int64, -1),
        "committed_metadata": (_nullable_string, None),
    })), _REQUIRED),
}))
_FETCH_TOPICS = _nullable(_list(_struct({
    "name": (_string, _REQUIRED),
    "partition_indexes": (_list(_int32), _REQUIRED),
})))
_DELETE_TOPICS = _list(_struct({
    "name": (_string, _REQUIRED),
    "partitions": (_list(_struct({"partition_index": (_int32, _REQUIRED)})), _REQUIRED),
}))

_SPECS: dict[str, dict[str, tuple[Checker, Any]]] = {
    "JoinGroup": {
        "session_timeout_ms": (_int32, _REQUIRED),
        "rebalance_timeout_ms": (_int32, -1),
        "member_id": (_string, _REQUIRED),
        "group_instance_id": (_nullable_string, None),
        "protocol_type": (_string, _REQUIRED),
        "protocols": (_PROTOCOLS, _REQUIRED),
        "reason": (_nullable_string, None),
        "client_id": (_string, ""),
        "client_host": (_string, ""),
        "topic_partitions": (_TOPIC_COUNTS, []),
    },
    "SyncGroup": {
        "generation_id": (_int32, _REQUIRED),
        "member_id": (_string, _REQUIRED),
        "group_instance_id": (_nullable_string, None),
        "protocol_type": (_nullable_string, None),
        "protocol_name": (_nullable_string, None),
        "assignments": (_ASSIGNMENTS, _REQUIRED),
    },
    "Heartbeat": {
        "generation_id": (_int32, _REQUIRED),
        "member_id": (_string, _REQUIRED),
        "group_instance_id": (_nullable_string, None),
    },
    "LeaveGroup": {
        "member_id": (_string, None),
        "members": (_LEAVE_MEMBERS, None),
    },
    "OffsetCommit": {
        "generation_id_or_member_epoch": (_int32, None),
        "generation_id": (_int32, None),
        "member_id": (_string, ""),
        "group_instance_id": (_nullable_string, None),
        "retention_time_ms": (_int64, -1),
        "topics": (_COMMIT_TOPICS, _REQUIRED),
    },
    "OffsetFetch": {
        "topics": (_FETCH_TOPICS, None),
        "require_stable": (_boolean, False),
        "member_id": (_nullable_string, None),
        "member_epoch": (_int32, -1),
    },
    "OffsetDelete": {"topics": (_DELETE_TOPICS, _REQUIRED)},
    "DescribeGroups": {"include_authorized_operations": (_boolean, False)},
    "ListGroups": {
        "states_filter": (_list(_string), []),
        "types_filter": (_list(_string), []),
    },
    "DeleteGroups": {},
}


def decode_json(raw: bytes | None) -> dict:
    """The JSON object of a record value; BadRequest when there is none."""
    try:
        body = json.loads(raw if raw is not None else b"")
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"malformed JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest("request is not a JSON object")
    return body


def readable_group_id(body: dict) -> str:
    """The request's group id, or BadRequest (INVALID_GROUP_ID's cases: missing, not a string, not Unicode)."""
    return _string(body.get("group_id"), "group_id")


def readable_request_id(body: dict) -> str | None:
    rid = body.get("request_id")
    if isinstance(rid, str):
        try:
            rid.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return rid
    return None


def parse(body: dict) -> Request:
    """Validate a decoded request; BadRequest carries the error code to answer with."""
    api = body.get("api")
    if not isinstance(api, str) or api not in API_VERSIONS:
        raise BadRequest(f"unknown api {api!r}")
    request_id = readable_request_id(body)
    if request_id is None:
        raise BadRequest("request_id: missing or not a string")
    lo, hi = API_VERSIONS[api]
    version = body.get("api_version", hi)
    if not isinstance(version, int) or isinstance(version, bool):
        raise BadRequest("api_version: expected an integer")
    if not lo <= version <= hi:
        raise BadRequest(f"{api} v{version} is not supported (v{lo}-v{hi})", UNSUPPORTED_VERSION)
    if api == "ListGroups":
        group_id = ""
    else:
        group_id = _string(body.get("group_id"), "group_id")
    fields = _fields(body, _SPECS[api])
    _check_version_fields(api, version, fields)
    principal = _nullable_string(body.get("principal"), "principal")
    return Request(api, version, request_id, group_id, fields, principal)


def _check_version_fields(api: str, version: int, fields: dict) -> None:
    """Fields whose presence depends on the version (Kafka's `versions` ranges that change the meaning)."""
    if api == "JoinGroup":
        if version == 0:
            fields["rebalance_timeout_ms"] = fields["session_timeout_ms"]
        elif fields["rebalance_timeout_ms"] < 0:
            raise BadRequest("rebalance_timeout_ms: must be given and not negative from v1")
        if version < 5:
            fields["group_instance_id"] = None
    elif api == "LeaveGroup":
        if version <= 2:
            if fields["member_id"] is None:
                raise BadRequest("member_id: missing (LeaveGroup v0-2 names one member)")
            fields["members"] = [{"member_id": fields["member_id"], "group_instance_id": None, "reason": None}]
        elif fields["members"] is None:
            raise BadRequest("members: missing (LeaveGroup v3+ takes a batch)")
    elif api == "OffsetCommit":
        generation = fields.pop("generation_id_or_member_epoch")
        alias = fields.pop("generation_id")
        fields["generation_id"] = generation if generation is not None else (-1 if alias is None else alias)
        if not 2 <= version <= 4:
            fields["retention_time_ms"] = -1
    elif api == "OffsetFetch" and version < 2 and fields["topics"] is None:
        raise BadRequest("topics: null needs OffsetFetch v2+")
    elif api in ("SyncGroup", "Heartbeat") and version < 3:
        fields["group_instance_id"] = None


# -- responses ---------------------------------------------------------------------------------------------------

def join_response(req: Request, error: int, *, generation: int = -1, protocol_type: str | None = None,
                  protocol_name: str | None = None, leader: str = "", skip_assignment: bool = False,
                  member_id: str = "", members: list[dict] | None = None) -> dict:
    return {
        "api": "JoinGroup", "request_id": req.request_id, "group_id": req.group_id, "throttle_time_ms": 0,
        "error_code": error, "generation_id": generation, "protocol_type": protocol_type,
        "protocol_name": protocol_name, "leader": leader, "skip_assignment": skip_assignment,
        "member_id": member_id, "members": members or [],
    }


def parked_join_response(group_id: str, request_id: str, error: int, **kw: Any) -> dict:
    """A JoinGroup answered later, from what was kept when it was parked."""
    return join_response(Request("JoinGroup", 0, request_id, group_id, {}), error, **kw)


def sync_response(group_id: str, request_id: str, error: int, protocol_type: str | None = None,
                  protocol_name: str | None = None, assignment: str = "") -> dict:
    return {
        "api": "SyncGroup", "request_id": request_id, "group_id": group_id, "throttle_time_ms": 0,
        "error_code": error, "protocol_type": protocol_type, "protocol_name": protocol_name,
        "assignment": assignment,
    }


def simple_response(req: Request, error: int, **extra: Any) -> dict:
    """Responses whose body is an error code plus some API-specific fields."""
    out: dict[str, Any] = {"api": req.api, "request_id": req.request_id}
    if req.api != "ListGroups":
        out["group_id"] = req.group_id
    out["throttle_time_ms"] = 0
    out["error_code"] = error
    out.update(extra)
    return out


def error_response(api: Any, request_id: str, group_id: Any, error: int, message: str) -> dict:
    """The answer to a request that could not be handled: the API's response shape with its defaults and the
    error code, plus `error_message` (our extension) saying what was wrong."""
    if api in API_VERSIONS:
        readable = isinstance(group_id, str) and api != "ListGroups"
        req = Request(api, 0, request_id, group_id if readable else "", {})
        if api == "JoinGroup":
            out = join_response(req, error)
        elif api == "SyncGroup":
            out = sync_response(req.group_id, request_id, error)
        else:
            out = simple_response(req, error, **_EMPTY_BODIES.get(api, {}))
    else:
        out = {"api": api if isinstance(api, str) else None, "request_id": request_id,
               "group_id": group_id if isinstance(group_id, str) else None, "error_code": error}
    out["error_message"] = message
    return out


_EMPTY_BODIES: dict[str, dict[str, Any]] = {
    "LeaveGroup": {"members": []},
    "OffsetCommit": {"topics": []},
    "OffsetFetch": {"topics": []},
    "OffsetDelete": {"topics": []},
    "DescribeGroups": {"group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": [],
                       "authorized_operations": -2147483648},
    "ListGroups": {"groups": []},
}
