"""What every message declaration shares: Kafka's field types, the `Versions` and `Extension` markers, and the
envelope classes every request and response derives from.

`schemas.messages` (the classic group APIs, the records, the tables) and `schemas.consumer_group` (KIP-848's)
declare their messages on top of these; everything here is re-exported by `schemas.messages`, where the rest of the
code imports it from.
"""

from typing import Annotated, Literal

from msgspec import UNSET, Meta, Struct, UnsetType

class Versions:
    """Kafka's `versions` of a field ("5+", "2-4", "1"); `ignored`: the core drops a value sent at another version."""

    __slots__ = ("low", "high", "ignored")

    def __init__(self, spec: str, ignored: bool = False) -> None:
        low, _, high = spec.partition("-")
        self.low = int(low.rstrip("+"))
        self.high = 32767 if spec.endswith("+") else int(high or low)
        self.ignored = ignored

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __str__(self) -> str:
        if self.high == 32767:
            return f"v{self.low}+"
        return f"v{self.low}" if self.low == self.high else f"v{self.low}-{self.high}"


class Extension:
    """A field that is ours, not Kafka's (see the module docstring); `why` goes into the JSON Schema."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


MAX_STRING_BYTES = 32767
"""Kafka strings are int16-length-prefixed."""
MAX_BYTES_FIELD = 1_048_576
"""Largest decoded byte field (`metadata`, `assignment`) we accept: Kafka's default max message size."""
BASE64 = r"^(?:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?|(?:[A-Za-z0-9+/]{4})+=+)(?!\n)$"
"""Exactly the texts `base64.b64decode(text, validate=True)` accepts (its strict mode), in a form both Python
and JSON Schema read."""

Int16 = Annotated[int, Meta(ge=-(2**15), le=2**15 - 1)]
Int32 = Annotated[int, Meta(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
Bytes = Annotated[str, Meta(pattern=BASE64, max_length=MAX_BYTES_FIELD * 4 // 3 + 4,
                            extra_json_schema={"contentEncoding": "base64"})]
"""Kafka's `bytes`, as base64 text: the core stores and forwards these bytes without decoding them."""
GroupStateName = Literal["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]
"""Kafka's classic group states; Dead only in DescribeGroups' answer for a group that does not exist."""
NO_AUTHORIZED_OPERATIONS = -2147483648
"""Kafka's INT32_MIN: authorized operations not requested (we have no ACLs)."""


class Message(Struct, frozen=True):
    """A nested struct of a message (Kafka's named struct types)."""


# -- requests ----------------------------------------------------------------------------------------------------

class Request(Struct, frozen=True, kw_only=True, tag_field="api"):
    """The envelope every control request carries (`api` is the tag: the class)."""

    request_id: Annotated[str, Extension("chosen by the client, echoed in the response")]
    api_version: Annotated[int | UnsetType, Extension("Kafka's version of the API; default the latest")] = UNSET
    principal: Annotated[str | None, Extension(
        "the principal the gateway authenticated (User:name); a member acts only for the principal that joined it"
    )] = None

    @property
    def api(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]

    @property
    def version(self) -> int:
        """The version this request is handled at (set by `state.wire` when it was not given)."""
        return self.api_version  # type: ignore[return-value]


class GroupRequest(Request, frozen=True, kw_only=True):
    group_id: str


# -- responses ---------------------------------------------------------------------------------------------------
# Every response carries every field of the latest version; the defaults are what an error response carries.
# `error_message` (ours) is last and left out unless set.

ErrorMessage = Annotated[str | UnsetType, Extension("why a request could not be handled")]


class Response(Struct, frozen=True, kw_only=True, tag_field="api"):
    request_id: str

    @property
    def api(self) -> str:
        return self.__struct_config__.tag  # type: ignore[return-value]


class GroupResponse(Response, frozen=True, kw_only=True):
    group_id: str
    throttle_time_ms: Int32 = 0
    error_code: Int16


class ViewOffset(Struct, frozen=True):
    """One committed offset of a group, as OffsetFetch answers it."""

    topic: str
    partition: Int32
    offset: Int64
    leader_epoch: Int32
    metadata: str


class ViewPosition(Struct, frozen=True):
    """Where the last request a step applied sits in the requests topic."""

    partition: Int32
    offset: Int64
