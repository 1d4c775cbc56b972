"""The JSON wire format: decoding requests into their typed classes, building and encoding responses.

A request is one JSON object: `api`, optional `api_version`, `request_id`, `group_id` and the snake_case fields of
Kafka's `<Api>Request` at that version (docs/wire-format.md), declared once in `schemas.messages`. It is decoded
once, straight into its class, by msgspec, which checks every type and range the class declares, so handlers read
typed attributes and never see a mistyped value. A request msgspec refuses (or one too large to skip the size
checks, or JSON only Python's decoder reads) is decoded again by `parse`, which walks the same classes field by
field in a fixed order and says exactly what is wrong; that is the error response (when its `request_id` can be
read), and the request changes nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Union, get_type_hints

import msgspec
from msgspec import UNSET
from msgspec import inspect as mi

from schemas.messages import (
    API_VERSIONS,
    BASE64,
    MAX_BYTES_FIELD,
    MAX_STRING_BYTES,
    REQUESTS,
    RESPONSES,
    ErrorResponse,
    GroupRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Request,
    Response,
    SyncGroupResponse,
    Versions,
)
from state.errors import INVALID_REQUEST, UNSUPPORTED_VERSION, Errors

__all__ = ["API_VERSIONS", "BadRequest", "Request", "decode_request", "parse", "encode", "error_response"]

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


class BadRequest(Exception):
    """The request cannot be handled; `code` is the Kafka error code of the answer, `body` the request's JSON
    object when it could be read (to answer with its `request_id`)."""

    def __init__(self, reason: str, code: Errors = INVALID_REQUEST, body: dict | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.body = body


_DECODER = msgspec.json.Decoder(Union[tuple(REQUESTS.values())])  # type: ignore[misc]
_ENCODER = msgspec.json.Encoder()


def encode(message: Any) -> bytes:
    """The one JSON encoding of what the core emits: compact, fields in declaration order, UTF-8."""
    return _ENCODER.encode(message)


def decode_request(raw: bytes | None) -> Request:
    """The request of a record value, typed and at its version; BadRequest says why not (with `body` set when the
    value is a JSON object, so that the caller can answer it).

    Small values (most of them) are decoded by msgspec alone: a value of at most MAX_STRING_BYTES bytes cannot hold
    a longer string or a larger byte field, so its class's types are the whole check."""
    if raw is not None and len(raw) <= MAX_STRING_BYTES:
        try:
            request = _DECODER.decode(raw)
        except msgspec.DecodeError:  # also msgspec.ValidationError: `parse` says what is wrong
            pass
        else:
            try:
                return _at_version(request, _version(request.api, request.api_version))
            except BadRequest as exc:
                exc.body = {"api": request.api, "request_id": request.request_id, "group_id": request.group_id}
                raise
    body = decode_json(raw)
    try:
        return parse(body)
    except BadRequest as exc:
        exc.body = body
        raise


def decode_json(raw: bytes | None) -> dict:
    """The JSON object of a record value, read as Python's decoder reads it; BadRequest when there is none."""
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
    """Validate a decoded request field by field (the envelope, then the class's fields in declaration order);
    BadRequest carries the error code to answer with."""
    api = body.get("api")
    if not isinstance(api, str) or api not in API_VERSIONS:
        raise BadRequest(f"unknown api {api!r}")
    request_id = readable_request_id(body)
    if request_id is None:
        raise BadRequest("request_id: missing or not a string")
    version = body.get("api_version", UNSET)
    if version is not UNSET and (not isinstance(version, int) or isinstance(version, bool)):
        raise BadRequest("api_version: expected an integer")
    version = _version(api, version)
    cls = REQUESTS[api]
    envelope: dict[str, Any] = {"request_id": request_id, "api_version": version}
    if issubclass(cls, GroupRequest):
        envelope["group_id"] = _string(body.get("group_id"), "group_id")
    fields = _fields(body, _FIELDS[api])
    request = _at_version(cls(**envelope, **fields), version)
    principal = _nullable_string(body.get("principal"), "principal")
    return msgspec.structs.replace(request, principal=principal) if principal is not None else request


def _version(api: str, version: Any) -> int:
    low, high = API_VERSIONS[api]
    if version is UNSET:
        return high
    if not low <= version <= high:
        raise BadRequest(f"{api} v{version} is not supported (v{low}-v{high})", UNSUPPORTED_VERSION)
    return version


# -- what a version changes: Kafka's `versions` ranges that change the meaning -----------------------------------

def _ignored_fields(cls: type[Request]) -> tuple[tuple[str, Versions, Any], ...]:
    """(name, versions, default) of the fields the core drops at a version that lacks them."""
    hints = get_type_hints(cls, include_extras=True)
    return tuple((f.name, meta, f.default) for f in msgspec.structs.fields(cls)
                 for meta in getattr(hints[f.name], "__metadata__", ()) if isinstance(meta, Versions) and meta.ignored)


_IGNORED = {api: _ignored_fields(cls) for api, cls in REQUESTS.items()}


def _at_version(request: Request, version: int) -> Request:
    """The request as the handlers read it at `version`: the version set, what it lacks at its defaults, and the
    rules that depend on it checked."""
    changes: dict[str, Any] = {}
    if request.api_version is UNSET:
        changes["api_version"] = version
    for name, versions, default in _IGNORED[request.api]:
        if version not in versions and getattr(request, name) != default:
            changes[name] = default
    if isinstance(request, JoinGroupRequest):
        if version == 0:
            changes["rebalance_timeout_ms"] = request.session_timeout_ms
        elif request.rebalance_timeout_ms < 0:
            raise BadRequest("rebalance_timeout_ms: must be given and not negative from v1")
    elif isinstance(request, LeaveGroupRequest):
        if version <= 2:
            if request.member_id is UNSET:
                raise BadRequest("member_id: missing (LeaveGroup v0-2 names one member)")
            changes["members"] = (MemberIdentity(request.member_id),)
        elif request.members is UNSET:
            raise BadRequest("members: missing (LeaveGroup v3+ takes a batch)")
    elif isinstance(request, OffsetCommitRequest):
        if request.generation_id_or_member_epoch is UNSET:
            changes["generation_id_or_member_epoch"] = (-1 if request.generation_id is UNSET
                                                        else request.generation_id)
    elif isinstance(request, OffsetFetchRequest) and version < 2 and request.topics is None:
        raise BadRequest("topics: null needs OffsetFetch v2+")
    return msgspec.structs.replace(request, **changes) if changes else request


# -- field checkers, made from the classes: each returns the value or raises BadRequest ----------------------------

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


def _boolean(v: Any, path: str) -> bool:
    if not isinstance(v, bool):
        raise BadRequest(f"{path}: expected true or false")
    return v


def _bytes(pattern: str, max_length: int) -> Checker:
    """Base64 text, kept as text: the core stores and forwards these bytes without decoding them."""
    valid = re.compile(pattern).search

    def check(v: Any, path: str) -> str:
        if not isinstance(v, str):
            raise BadRequest(f"{path}: expected a base64 string")
        if len(v) > max_length:
            raise BadRequest(f"{path}: larger than {MAX_BYTES_FIELD} bytes")
        if not valid(v):
            raise BadRequest(f"{path}: not valid base64")
        return v

    return check


def _matching(pattern: str) -> Checker:
    """A string of a fixed form (a topic id: Kafka's Uuid as text)."""
    valid = re.compile(pattern).search

    def check(v: Any, path: str) -> str:
        if not isinstance(v, str) or not valid(v):
            raise BadRequest(f"{path}: expected a string matching {pattern}")
        return v

    return check


def _array(item: Checker) -> Checker:
    def check(v: Any, path: str) -> tuple:
        if not isinstance(v, list):
            raise BadRequest(f"{path}: expected an array")
        return tuple(item(x, f"{path}[{i}]") for i, x in enumerate(v))

    return check


def _nullable(inner: Checker) -> Checker:
    return lambda v, path: None if v is None else inner(v, path)


def _struct(cls: type, spec: dict[str, tuple[Checker, Any]]) -> Checker:
    def check(v: Any, path: str) -> Any:
        if not isinstance(v, dict):
            raise BadRequest(f"{path}: expected an object")
        return cls(**_fields(v, spec, path + "."))

    return check


def _fields(body: dict, spec: dict[str, tuple[Checker, Any]], prefix: str = "") -> dict:
    out = {}
    for name, (check, default) in spec.items():
        if name in body:
            out[name] = check(body[name], prefix + name)
        elif default is _REQUIRED:
            raise BadRequest(f"{prefix}{name}: missing")
        elif default is not UNSET:
            out[name] = default
    return out


def _checker(t: mi.Type) -> Checker:
    """The checker of one msgspec type (the types `schemas.messages` uses)."""
    if isinstance(t, mi.Metadata):
        return _checker(t.type)
    if isinstance(t, mi.StrType):
        if t.pattern is None:
            return _string
        return _bytes(t.pattern, t.max_length) if t.pattern == BASE64 else _matching(t.pattern)
    if isinstance(t, mi.IntType):
        return _integer(t.ge, t.le)
    if isinstance(t, mi.BoolType):
        return _boolean
    if isinstance(t, (mi.VarTupleType, mi.ListType)):
        return _array(_checker(t.item_type))
    if isinstance(t, mi.StructType):
        return _struct(t.cls, _spec(t))
    if isinstance(t, mi.UnionType):
        inner = [u for u in t.types if not isinstance(u, mi.NoneType)]
        (only,) = inner
        return _nullable(_checker(only)) if len(inner) < len(t.types) else _checker(only)
    raise TypeError(f"no checker for {t}")


_ENVELOPE = {"request_id", "api_version", "principal", "group_id"}


def _spec(t: mi.StructType) -> dict[str, tuple[Checker, Any]]:
    return {f.name: (_checker(f.type), _REQUIRED if f.required else (UNSET if f.default is mi.NODEFAULT else f.default))
            for f in t.fields if f.name not in _ENVELOPE}


_FIELDS = {api: _spec(mi.type_info(cls)) for api, cls in REQUESTS.items()}  # type: ignore[arg-type]


# -- responses ---------------------------------------------------------------------------------------------------

def join_response(req: Request, error: int, **fields: Any) -> JoinGroupResponse:
    return JoinGroupResponse(request_id=req.request_id, group_id=req.group_id, error_code=error,  # type: ignore
                             **fields)


def parked_join_response(group_id: str, request_id: str, error: int, **fields: Any) -> JoinGroupResponse:
    """A JoinGroup answered later, from what was kept when it was parked."""
    return JoinGroupResponse(request_id=request_id, group_id=group_id, error_code=error, **fields)


def sync_response(group_id: str, request_id: str, error: int, protocol_type: str | None = None,
                  protocol_name: str | None = None, assignment: str = "") -> SyncGroupResponse:
    return SyncGroupResponse(request_id=request_id, group_id=group_id, error_code=error,
                             protocol_type=protocol_type, protocol_name=protocol_name, assignment=assignment)


def simple_response(req: Request, error: int, **fields: Any) -> Response:
    """Responses whose body is an error code plus some API-specific fields."""
    if req.api == "ListGroups":
        return RESPONSES["ListGroups"](request_id=req.request_id, error_code=error, **fields)  # type: ignore
    return RESPONSES[req.api](request_id=req.request_id, group_id=req.group_id,  # type: ignore[call-arg]
                              error_code=error, **fields)


def error_response(api: Any, request_id: str, group_id: Any, error: int, message: str) -> Response | ErrorResponse:
    """The answer to a request that could not be handled: the API's response shape with its defaults and the
    error code, plus `error_message` (our extension) saying what was wrong."""
    if isinstance(api, str) and api in RESPONSES:
        if api == "ListGroups":
            return RESPONSES[api](request_id=request_id, error_code=error, error_message=message)  # type: ignore
        return RESPONSES[api](request_id=request_id, group_id=group_id if isinstance(group_id, str) else "",
                              error_code=error, error_message=message)  # type: ignore[call-arg]
    return ErrorResponse(api=api if isinstance(api, str) else None, request_id=request_id,
                         group_id=group_id if isinstance(group_id, str) else None, error_code=error,
                         error_message=message)
