"""The deadline index of a bucket (pure: plain dicts stand where Spark's state variables run in the job)."""

from __future__ import annotations

from streaming.group_stores.deadline_index import SLOT_MS, DeadlineIndex, registration


class Slots:
    """A `SlotStore` in a dict, counting reads and writes as the job's state calls would be."""

    def __init__(self) -> None:
        self.schedule: bytes | None = None
        self.slots: dict[int, bytes] = {}
        self.reads = self.writes = 0

    def read_schedule(self) -> bytes | None:
        self.reads += 1
        return self.schedule

    def write_schedule(self, packed: bytes | None) -> None:
        self.writes += 1
        self.schedule = packed

    def read_slot(self, slot: int) -> bytes | None:
        self.reads += 1
        return self.slots.get(slot)

    def write_slot(self, slot: int, packed: bytes | None) -> None:
        self.writes += 1
        if packed is None:
            self.slots.pop(slot, None)
        else:
            self.slots[slot] = packed


def filed(store: Slots, *entries: tuple[str, int]) -> None:
    index = DeadlineIndex(store)
    for group_id, deadline in entries:
        index.file(group_id, deadline)
    index.flush()


def test_groups_come_due_in_deadline_order_once_each():
    store = Slots()
    filed(store, ("b", 2_500), ("a", 1_200), ("c", 9_000), ("é-group", 1_200))
    index = DeadlineIndex(store)
    assert index.earliest() == 1_200
    assert index.pop_due(1_199) == []
    assert index.pop_due(2_500) == [("a", 1_200), ("é-group", 1_200), ("b", 2_500)]
    assert index.pop_due(2_500) == []
    index.flush()
    again = DeadlineIndex(store)
    assert again.earliest() == 9_000 and again.pop_due(10_000) == [("c", 9_000)]
    again.flush()
    assert store.schedule is None and store.slots == {}


def test_a_call_reads_only_the_slots_with_something_due():
    store = Slots()
    filed(store, *((f"g{i}", i * SLOT_MS) for i in range(1, 100)))
    store.reads = 0
    index = DeadlineIndex(store)
    assert [g for g, _ in index.pop_due(3 * SLOT_MS)] == ["g1", "g2", "g3"]
    assert store.reads == 1 + 3  # the schedule, then the three due slots
    index.flush()
    assert DeadlineIndex(store).earliest() == 4 * SLOT_MS


def test_an_entry_due_later_in_its_slot_stays_filed():
    store = Slots()
    filed(store, ("early", 5_100), ("late", 5_900))
    index = DeadlineIndex(store)
    assert index.pop_due(5_500) == [("early", 5_100)]
    index.flush()
    assert DeadlineIndex(store).earliest() == 5_900


def test_a_deadline_moving_later_keeps_its_entry_and_an_earlier_one_is_filed_anew():
    # A heartbeat moves the deadline later: nothing to write.
    assert registration(registered=10_000, deadline=13_000, now_ms=5_000) == (10_000, False)
    # A join timer earlier than the filed session deadline: filed anew.
    assert registration(registered=10_000, deadline=7_000, now_ms=5_000) == (7_000, True)
    # The filed entry came due (popped by this call): filed anew wherever the deadline now is.
    assert registration(registered=4_000, deadline=13_000, now_ms=5_000) == (13_000, True)
    assert registration(registered=None, deadline=13_000, now_ms=5_000) == (13_000, True)
    # No deadline: nothing to file.
    assert registration(registered=None, deadline=None, now_ms=5_000) == (None, False)


def test_the_schedule_holds_each_slots_earliest_entry_however_the_entries_came():
    """A rebuild files thousands of groups in one slot in one call: the slot's earliest deadline is kept as each is
    filed (not recomputed over the slot). Whatever the order of filing and popping, in one call or across calls, the
    earliest deadline and what comes due are those of the entries filed and not yet popped."""
    import random

    rng = random.Random(35)
    for _ in range(200):
        store, now, live = Slots(), 10_000, []
        for _call in range(rng.randint(1, 6)):
            index = DeadlineIndex(store)
            for _op in range(rng.randint(0, 40)):
                if rng.random() < 0.8:
                    entry = (now + rng.randint(-2 * SLOT_MS, 5 * SLOT_MS), f"g{rng.randint(0, 20)}")
                    index.file(entry[1], entry[0])
                    live.append(entry)
                else:
                    due = index.pop_due(now)
                    assert sorted(due, key=lambda e: (e[1], e[0])) == due
                    assert sorted((d, g) for g, d in due) == sorted(e for e in live if e[0] <= now)
                    live = [e for e in live if e[0] > now]
                assert index.earliest() == min((d for d, _ in live), default=None)
            index.flush()
            assert DeadlineIndex(store).earliest() == min((d for d, _ in live), default=None)
            now += rng.randint(0, 3 * SLOT_MS)
