"""Which groups' heartbeats wait for a newer view (the hold, docs/gateway.md), seen by every process of a gateway.

A KIP-848 heartbeat that declares something, forwarded to the coordinator, holds its group's heartbeat answers
until the coordinator has answered it and the view that answering step wrote has been read (`gateway.fast.fast_path`).
With several processes on one address (`--processes`), another member's heartbeat may reach another process: it
must be held too, or it is told nothing changed and hears of the new target a heartbeat interval later. So the
hold lives in a table all processes map (a file in the gateway's private directory, `gateway.front.processes`): one row
per process, a slot per group (a hash of its id), each slot the number of such requests the process is forwarding
and when it last saw one answered (CLOCK_MONOTONIC, one clock for every process of the host). A process writes only
its own row (from its event loop alone: no lock), and reads every row; a process that restarts clears its row,
so a killed one holds nothing for ever. Two groups sharing a slot hold each other: a heartbeat then waits for a
view it did not need (at most the hold's wait), never the reverse. One process: an anonymous mapping, one row.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from pathlib import Path

SLOTS = 1 << 14
_SLOT = struct.Struct("<i4xd")
"""(requests forwarded and not yet answered, when the last one was answered: monotonic seconds, 0 for never)."""
_ROW_BYTES = SLOTS * _SLOT.size


def table_bytes(rows: int) -> int:
    return rows * _ROW_BYTES


class Holds:
    def __init__(self, path: Path | None = None, rows: int = 1, row: int = 0) -> None:
        """`path`: the shared table (`table_bytes(rows)` long) of `rows` processes, of which this is `row`; None:
        this process's alone."""
        self._rows = rows
        self._base = row * _ROW_BYTES
        if path is None:
            self._map = mmap.mmap(-1, table_bytes(rows))
        else:
            with open(path, "r+b") as table:
                self._map = mmap.mmap(table.fileno(), table_bytes(rows))
        self._map[self._base:self._base + _ROW_BYTES] = bytes(_ROW_BYTES)

    @staticmethod
    def _slot(group_id: str) -> int:
        return (zlib.crc32(group_id.encode("utf-8")) % SLOTS) * _SLOT.size

    def forwarding(self, group_id: str) -> None:
        """A request that may change the group is forwarded by this process."""
        at = self._base + self._slot(group_id)
        count, answered = _SLOT.unpack_from(self._map, at)
        _SLOT.pack_into(self._map, at, count + 1, answered)

    def answered(self, group_id: str, now: float) -> None:
        """The coordinator answered one of them (or it failed) at monotonic time `now`."""
        at = self._base + self._slot(group_id)
        count, _ = _SLOT.unpack_from(self._map, at)
        _SLOT.pack_into(self._map, at, max(count - 1, 0), now)

    def holds(self, group_id: str, read_as_of: float) -> bool:
        """Whether a process forwards a request that may change the group, or saw one answered after the
        follower round that began at `read_as_of` (the views read then may not hold the answering step's)."""
        slot = self._slot(group_id)
        for row in range(self._rows):
            count, answered = _SLOT.unpack_from(self._map, row * _ROW_BYTES + slot)
            if count > 0 or (answered and answered > read_as_of):
                return True
        return False

    def close(self) -> None:
        self._map.close()
