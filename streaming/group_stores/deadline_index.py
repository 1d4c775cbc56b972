"""Which groups of a bucket have a deadline due: an index kept beside the per-group rows.

With one state row per group (`streaming.group_stores.group_rows`), a bucket call must find its due groups without
reading every group of the bucket. The index files each group under the one-second slot of a deadline, and a small
schedule lists the bucket's slots with the earliest deadline filed in each: a call reads the schedule (one state
read), then only the slots that hold something due.

Registration is lazy, because a heartbeat moves its group's deadline later every time and rewriting the index on
each would double the state calls of the commonest request. A group is filed again only when its deadline moves
*earlier* than where it is filed (a rebalance arming a join timer, a new group). A deadline that moved later leaves
its entry where it was: when that entry comes due, the caller finds the group not due yet and files it again at its
real deadline. Each group row remembers the deadline it is filed under (`registered`), so an entry that no longer
matches it (the group was filed again earlier, or deleted) is recognised as stale and dropped.

Pure: the caller supplies the storage (`SlotStore`), so the index runs the same over Spark's `MapState` and
`ValueState` and over plain dicts in tests. Deterministic: the same calls leave the same bytes.
"""

from __future__ import annotations

import struct
from typing import Iterator, Protocol

from streaming.bucket_deadlines import earliest, is_due

SLOT_MS = 1_000
"""Width of a slot: deadlines in one slot are read together when the first of them comes due."""

_PAIR = struct.Struct(">qq")  # schedule: slot, earliest deadline filed in it
_ENTRY = struct.Struct(">qH")  # slot entry: deadline, length of the UTF-8 group id that follows


class SlotStore(Protocol):
    """Where a bucket's index lives: one schedule value and one value per slot."""

    def read_schedule(self) -> bytes | None: ...

    def write_schedule(self, packed: bytes | None) -> None: ...

    def read_slot(self, slot: int) -> bytes | None: ...

    def write_slot(self, slot: int, packed: bytes | None) -> None: ...


def slot_of(deadline_ms: int) -> int:
    return deadline_ms // SLOT_MS


class DeadlineIndex:
    """One bucket's index during one call: read lazily, changed in memory, written back by `flush`."""

    def __init__(self, store: SlotStore) -> None:
        self._store = store
        packed = store.read_schedule()
        self._schedule: dict[int, int] = dict(_unpack_pairs(packed)) if packed else {}
        self._slots: dict[int, list[tuple[int, str]]] = {}
        self._first: dict[int, int | None] = {}
        """slot -> the earliest deadline of its entries in `_slots`, once computed: `file` keeps it by comparing the
        one deadline it adds, where recomputing it over the whole slot made filing N groups in one slot O(N²) (a
        rebuild files every group of a bucket in the same slot or two: ~20% of a loading batch's state calls)."""
        self._dirty: set[int] = set()
        self._schedule_dirty = False

    def earliest(self) -> int | None:
        """The earliest deadline filed in the bucket (it may be early: see the module's docstring)."""
        return earliest(self._schedule.values())

    def pop_due(self, now_ms: int) -> list[tuple[str, int]]:
        """Remove and return every (group_id, filed deadline) due at `now_ms`, earliest first."""
        due: list[tuple[str, int]] = []
        for slot in sorted(s for s, first in self._schedule.items() if is_due(first, now_ms)):
            entries = self._entries(slot)
            due += [(group_id, deadline) for deadline, group_id in entries if is_due(deadline, now_ms)]
            self._set(slot, [(d, g) for d, g in entries if not is_due(d, now_ms)])
        due.sort(key=lambda entry: (entry[1], entry[0]))
        return due

    def file(self, group_id: str, deadline_ms: int) -> None:
        """File `group_id` under `deadline_ms` (the caller records it as the group's `registered` deadline)."""
        slot = slot_of(deadline_ms)
        entries = self._entries(slot)
        first = self._first[slot] if slot in self._first else earliest(d for d, _ in entries)
        entries.append((deadline_ms, group_id))
        self._note(slot, deadline_ms if first is None or deadline_ms < first else first)

    def flush(self) -> None:
        for slot in sorted(self._dirty):
            entries = self._slots[slot]
            self._store.write_slot(slot, _pack_entries(entries) if entries else None)
        if self._schedule_dirty:
            self._store.write_schedule(_pack_pairs(sorted(self._schedule.items())) if self._schedule else None)
        self._dirty.clear()
        self._schedule_dirty = False

    def _entries(self, slot: int) -> list[tuple[int, str]]:
        if slot not in self._slots:
            packed = self._store.read_slot(slot) if slot in self._schedule else None
            self._slots[slot] = list(_unpack_entries(packed)) if packed else []
        return self._slots[slot]

    def _set(self, slot: int, entries: list[tuple[int, str]]) -> None:
        self._slots[slot] = entries
        self._note(slot, earliest(d for d, _ in entries))

    def _note(self, slot: int, first: int | None) -> None:
        """The slot's entries changed and `first` is now the earliest of them."""
        self._first[slot] = first
        self._dirty.add(slot)
        if self._schedule.get(slot) != first:
            self._schedule_dirty = True
            if first is None:
                del self._schedule[slot]
            else:
                self._schedule[slot] = first


def registration(registered: int | None, deadline: int | None, now_ms: int) -> tuple[int | None, bool]:
    """The deadline a group stays filed under after a step, and whether it must be filed anew.

    `registered`: where the group was filed before the step (an entry due at `now_ms` has been popped by now, so
    it no longer counts); `deadline`: the group's next deadline after the step. Filed anew only when the deadline
    is earlier than where it is filed, or it is filed nowhere."""
    if is_due(registered, now_ms):
        registered = None
    if deadline is None or (registered is not None and registered <= deadline):
        return registered, False
    return deadline, True


def _pack_pairs(pairs: list[tuple[int, int]]) -> bytes:
    return b"".join(_PAIR.pack(a, b) for a, b in pairs)


def _unpack_pairs(packed: bytes) -> Iterator[tuple[int, int]]:
    yield from _PAIR.iter_unpack(packed)


def _pack_entries(entries: list[tuple[int, str]]) -> bytes:
    parts = []
    for deadline, group_id in entries:
        name = group_id.encode()
        parts += [_ENTRY.pack(deadline, len(name)), name]
    return b"".join(parts)


def _unpack_entries(packed: bytes) -> Iterator[tuple[int, str]]:
    at, size = 0, _ENTRY.size
    while at < len(packed):
        deadline, length = _ENTRY.unpack_from(packed, at)
        at += size
        yield deadline, packed[at:at + length].decode()
        at += length
