"""Kafka's framing: a 4-byte big-endian size, then the message. What the gateway reads before it knows anything.

Routing needs only a request's fixed prefix (api key, api version, correlation id: the first 8 bytes of every
request header version), so forwarded requests are never decoded; everything the gateway does decode or encode
goes through kafka-python's message classes.
"""

from __future__ import annotations

import asyncio
import struct

MAX_REQUEST_BYTES = 104_857_600
"""Kafka's `socket.request.max.bytes` default: a larger size prefix closes the connection unread."""

STREAM_BUFFER_BYTES = 16 << 20
"""asyncio's stream buffer limit for the gateway's connections. With the default 64 KiB, reading a multi-MiB fetch
answer pauses and resumes the socket every 128 KiB: kafka-python's consumer read 0.84x of its direct rate through
the gateway with it, 0.88x with this (`bench.gateway_bench`, 64 MiB, same machine)."""

_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The peer broke the protocol: the connection is closed, as a Kafka broker closes it."""


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> bytes | None:
    """The next message without its size prefix; None at a clean end of stream."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise FrameError("connection closed inside a size prefix") from None
        return None
    (size,) = _SIZE.unpack(head)
    if size < 0 or size > max_bytes:
        raise FrameError(f"frame size {size} outside [0, {max_bytes}]")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        raise FrameError(f"connection closed inside a {size}-byte frame") from None


def request_prefix(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request."""
    if len(frame) < _PREFIX.size:
        raise FrameError(f"a {len(frame)}-byte request has no header")
    return _PREFIX.unpack_from(frame)


def correlation_id(frame: bytes) -> int:
    """Of a response (its header starts with it)."""
    if len(frame) < _SIZE.size:
        raise FrameError("a response without a header")
    return _SIZE.unpack_from(frame)[0]


def framed(payload: bytes) -> list[bytes]:
    """Size prefix and payload, for `writelines` (no copy of the payload)."""
    return [_SIZE.pack(len(payload)), payload]

