"""What Kafka's request parser refuses and kafka-python's decoder lets through.

Kafka's generated readers throw on a null in a field that is not nullable at the request's version (a string or an
array whose length is negative), and on a string longer than 32,767 bytes, which a flexible version's varint length
can carry; the broker then closes the connection. kafka-python reads all of these: a null as None, a count below -1
as an empty array, a long string as it is. Handed on, they became requests the coordinator answered (a commit with
`topics: []` and no error). `decode` refuses them as Kafka does, so the connection closes (`FrameError`).
"""

from __future__ import annotations

from typing import Any

from gateway.front.frames import FrameError

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
    for field in struct.fields.values():
        if not field.for_version_q(version):
            continue
        item = getattr(value, field.name, None)
        name = f"{where}.{field.name}"
        if item is None:
            if field.type_str in ("string", "bytes") or field.is_array():
                if not field.nullable_for_version_q(version) and not field.tagged_field_q(version):
                    raise FrameError(f"non-nullable field {name} was serialized as null")
            continue
        if field.type_str == "string" and len(item.encode("utf-8")) > MAX_STRING_BYTES:
            raise FrameError(f"string field {name} had invalid length {len(item.encode('utf-8'))}")
        if field.is_struct_array():
            for element in item:
                _check_struct(field.array_of, element, version, name)
        elif field.is_array() and field.array_of.type_str == "string":
            for element in item:
                if element is None or len(element.encode("utf-8")) > MAX_STRING_BYTES:
                    raise FrameError(f"string field {name} had an invalid element")
        elif field.is_struct():
            _check_struct(field, item, version, name)
