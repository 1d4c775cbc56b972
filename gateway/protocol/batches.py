"""Kafka's record batches in a fetched `Records` field, walked and never decoded: a batch's header says its base
offset, its length and its last offset delta (Kafka's `DefaultRecordBatch`). What the share wing answers with
(`gateway.share.log`) and what the gateway's own reads of a log return (`gateway.upstream.log_reads`)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

_BATCH_HEADER = 61
"""A v2 record batch's header size: nothing shorter is a whole batch."""
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class LogBatch:
    base: int
    last: int
    data: bytes


def log_batches(records: bytes) -> list[LogBatch]:
    """The whole record batches of a fetched `Records` field (a last batch cut short by the size limit is left
    out, as clients leave it). Message sets older than v2 (magic 0, 1) are one offset per entry."""
    out = []
    pos, size = 0, len(records)
    view = memoryview(records)
    while pos + 17 <= size:
        base, length = _OFFSET_AND_LENGTH.unpack_from(records, pos)
        end = pos + 12 + length
        if length < 0 or end > size:
            break
        magic = records[pos + 16]
        if magic >= 2:
            if pos + _BATCH_HEADER > size:
                break
            last = base + _LAST_OFFSET_DELTA.unpack_from(records, pos + 23)[0]
        else:
            last = base
        out.append(LogBatch(base, last, bytes(view[pos:end])))
        pos = end
    return out
