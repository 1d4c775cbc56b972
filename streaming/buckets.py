"""Groups hashed into state buckets, the `applyInPandasWithState` keys (`streaming.stateful` says why).

Its own module because the source computes a bucket for every routed row, and the source's planning runs in a
Python process of its own that a query (re)start waits for: importing `streaming.stateful` there would load pandas
for nothing (about 0.26 s of every start).
"""

from __future__ import annotations

import zlib


def bucket_of(group_id: str, buckets: int) -> int:
    """The group's bucket: CRC-32 of its UTF-8 bytes mod `buckets` (stable across processes and releases)."""
    return zlib.crc32(group_id.encode()) % buckets
