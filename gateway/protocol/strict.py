"""What Kafka's request parser refuses and kafka-python's decoder lets through.

Kafka's generated readers throw on a null in a field that is not nullable at the request's version (a string or an
array whose length is negative), and on a string longer than 32,767 bytes, which a flexible version's varint length
can carry; the broker then closes the connection. kafka-python reads all of these: a null as None, a count below -1
as an empty array, a long string as it is. Handed on, they became requests the coordinator answered (a commit with
`topics: []` and no error). `decode` refuses them as Kafka does, so the connection closes (`FrameError`).
"""

from __future__ import annotations

from typing import Any

from gateway.protocol.frames import FrameError

MAX_STRING_BYTES = 0x7FFF
"""Kafka's bound on any string field, whatever the length's encoding."""


def decode(cls: Any, frame: bytes, version: int) -> Any:
    """The request of class `cls` in `frame` (with its header) at `version`; FrameError where Kafka's parser would
    have refused it."""
    request = cls.decode(frame, version=version, header=True)
    _check_struct(cls._struct, request, version, cls.__name__)
    if not cls.flexible_version_q(version):
        # Only a non-flexible version's 4-byte counts can be below -1, and kafka-python reads them as []: such a
        # request does not read back to the bytes it came in (a flexible version's varint counts cannot).
        if not frame.endswith(request.encode(version=version)):
            raise FrameError(f"{cls.__name__} v{version}: an array with a negative count")
    return request


def _check_struct(struct: Any, value: Any, version: int, where: str) -> None:
    for name, nullable, kind, inner in _plan(struct, version):
        item = getattr(value, name, None)
        if item is None:
            if not nullable:
                raise FrameError(f"non-nullable field {where}.{name} was serialized as null")
        elif kind == "string":
            if len(item) > MAX_STRING_BYTES // 4 and len(item.encode("utf-8")) > MAX_STRING_BYTES:
                raise FrameError(f"string field {where}.{name} had invalid length {len(item.encode('utf-8'))}")
        elif kind == "structs":
            path = f"{where}.{name}"
            for element in item:
                _check_struct(inner, element, version, path)
        elif kind == "strings":
            for element in item:
                if element is None or len(element.encode("utf-8")) > MAX_STRING_BYTES:
                    raise FrameError(f"string field {where}.{name} had an invalid element")
        elif kind == "struct":
            _check_struct(inner, item, version, f"{where}.{name}")


_PLANS: dict[tuple[int, int], tuple[tuple[str, bool, str, Any], ...]] = {}


def _plan(struct: Any, version: int) -> tuple[tuple[str, bool, str, Any], ...]:
    """The fields of `struct` at `version` that Kafka's reader checks: (name, may be null, kind, nested struct);
    made once per message part and version (the message classes live as long as the process)."""
    known = _PLANS.get((id(struct), version))
    if known is not None:
        return known
    plan = []
    for field in struct.fields.values():
        if not field.for_version_q(version):
            continue
        may_be_null = field.nullable_for_version_q(version) or field.tagged_field_q(version)
        if field.is_struct_array():
            plan.append((field.name, may_be_null, "structs", field.array_of))
        elif field.is_array():
            plan.append((field.name, may_be_null, "strings" if field.array_of.type_str == "string" else "", None))
        elif field.is_struct():
            plan.append((field.name, True, "struct", field))
        elif field.type_str in ("string", "bytes"):
            plan.append((field.name, may_be_null, "string" if field.type_str == "string" else "", None))
    _PLANS[(id(struct), version)] = known = tuple(plan)
    return known
