"""When a bucket of groups is called again (`streaming.bucket_deadlines`), as a specification: the rules one by one,
then the parts of the job that take part (the stores, the deadline index, the state call, the timers topic's
schedule) agreeing at the instant a deadline comes. Pure: the real core, no Spark, no broker."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

import streaming

from state.api import StoredGroup
from state.handling.timers import is_due as core_is_due
from streaming.bucket_deadlines import (
    BucketSchedule,
    buckets_to_call,
    deadline_record,
    earliest,
    is_due,
    publishes,
    read_deadline_record,
)
from streaming.group_stores.bucket_blobs import ENVELOPE_VERSION, pack_groups
from streaming.kafka_io.sink import SUMMARY_COLUMNS, OutputRow
from streaming.stateful import Input, call
from tests.streaming.test_group_stores import CONFIG, BlobBucket, RowBucket, inputs, stable_member
from tests.support import protocol as p

# --- due -----------------------------------------------------------------------------------------------------------


def test_a_deadline_is_due_at_its_instant_and_after_it_never_before():
    assert not is_due(1_000, 999)
    assert is_due(1_000, 1_000) and is_due(1_000, 60_000)


def test_no_deadline_is_ever_due():
    assert not is_due(None, 2**62)


@pytest.mark.parametrize("deadline, now", [(1_000, 999), (1_000, 1_000), (1_000, 1_001)])
def test_a_bucket_is_due_exactly_when_the_core_fires_the_timer(deadline, now):
    assert is_due(deadline, now) == core_is_due(deadline, now)


# --- earliest ------------------------------------------------------------------------------------------------------


def test_a_buckets_deadline_is_the_earliest_of_its_groups_deadlines():
    assert earliest([5_000, None, 3_000, 4_000]) == 3_000


def test_a_bucket_whose_groups_have_no_deadline_has_none():
    assert earliest([]) is None and earliest([None, None]) is None


# --- published -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("before, after, resumed, published", [
    (1_000, 1_000, False, False),  # unchanged: nothing to tell the driver
    (1_000, 2_000, False, True),  # later
    (2_000, 1_000, False, True),  # earlier
    (None, 1_000, False, True),  # a first deadline
    (1_000, None, False, True),  # none any more: a tombstone
    (None, None, False, False),
    (1_000, 1_000, True, True),  # a resumed batch: the restarted driver's schedule is empty, so always
    (None, None, True, True),
])
def test_a_call_publishes_its_buckets_deadline_when_it_changed_and_in_a_resumed_batch(before, after, resumed,
                                                                                         published):
    assert publishes(before, after, resumed) is published


# --- called --------------------------------------------------------------------------------------------------------


def test_a_query_runs_first_new_batch_calls_every_bucket():
    assert buckets_to_call([2], buckets=4, first_of_run=True) == [0, 1, 2, 3]


def test_every_later_batch_calls_the_due_buckets_in_order():
    assert buckets_to_call([3, 1], buckets=4, first_of_run=False) == [1, 3]
    assert buckets_to_call([], buckets=4, first_of_run=False) == []


# --- on the timers topic -------------------------------------------------------------------------------------------


def test_a_deadline_travels_as_text_and_no_deadline_as_a_tombstone():
    assert deadline_record(7, 1_700_000_000_123) == (b"7", b"1700000000123")
    assert deadline_record(7, None) == (b"7", None)
    assert read_deadline_record(*deadline_record(7, 1_234)) == (7, 1_234)
    assert read_deadline_record(*deadline_record(7, None)) == (7, None)


@pytest.mark.parametrize("key, value", [(b"not a bucket", b"1"), (b"1", b"soon"), (None, b"1")])
def test_a_record_that_is_no_buckets_deadline_is_refused(key, value):
    with pytest.raises(ValueError, match="not a bucket's deadline"):
        read_deadline_record(key, value)


def test_the_schedule_names_the_buckets_whose_published_deadline_has_come():
    schedule = BucketSchedule()
    for bucket, deadline in ((0, 5_000), (1, 1_000), (2, None)):
        schedule.set(bucket, deadline)
    assert schedule.due(999) == []
    assert schedule.due(1_000) == [1]
    assert schedule.due(5_000) == [0, 1]
    schedule.set(1, None)  # a tombstone: nothing pending there any more
    assert schedule.due(5_000) == [0]


# --- every part agrees ---------------------------------------------------------------------------------------------


@pytest.fixture(params=[RowBucket, BlobBucket], ids=["transformWithState", "applyInPandasWithState"])
def bucket(request):
    return request.param()


def test_both_stores_name_the_same_due_groups_and_earliest_deadline(bucket):
    deadlines = {"a": 1_000, "b": 2_500, "c": None}
    if isinstance(bucket, BlobBucket):
        bucket.state.update((ENVELOPE_VERSION, 16, pack_groups(
            {g: (StoredGroup(b"{}"), d) for g, d in deadlines.items()})))
    else:
        store = bucket.open()
        for group_id, deadline in deadlines.items():
            store.put(group_id, StoredGroup(b"{}"), deadline, now_ms=0)
        store.finish()
    assert bucket.open().earliest() == earliest(deadlines.values()) == 1_000
    assert list(bucket.open().due(999)) == []
    assert list(bucket.open().due(1_000)) == ["a"]  # at the instant, as the core fires it
    assert sorted(bucket.open().due(2_500)) == ["a", "b"]


class Driver:
    """What the job does around a bucket's calls: each call's output kept (`streaming.stateful.Output`), its
    published deadline read into the driver's schedule as the timers topic would carry it, and the bucket called with
    a timer row whenever that schedule says it is due, as the source calls it."""

    BUCKET = 3

    def __init__(self, bucket) -> None:
        self.bucket = bucket
        self.schedule = BucketSchedule()
        self.rows: list[OutputRow] = []
        self.published: list[int | None] = []

    def send(self, rows) -> None:
        self.rows += rows

    def flush(self) -> None:
        pass

    def call(self, rows, now_ms: int) -> dict:
        self.rows = []
        summary = dict(zip(SUMMARY_COLUMNS, call("group", self.BUCKET, rows, now_ms, CONFIG, {}, self,
                                                 self.bucket.open)))
        for row in self.rows:
            if row.sink == "deadline":
                bucket, deadline = read_deadline_record(row.key, row.value)
                self.schedule.set(bucket, deadline)
                self.published.append(deadline)
        return summary

    def trigger(self, now_ms: int) -> dict | None:
        """A trigger of the source: the bucket's call for its deadline if the schedule says it is due."""
        return self.call(inputs(timer_row=True), now_ms) if self.BUCKET in self.schedule.due(now_ms) else None


def resumed(rows: list[Input]) -> list[Input]:
    return [replace(row, resumed=True) for row in rows]


def test_a_bucket_is_called_at_the_instant_its_earliest_deadline_comes_and_never_late(bucket):
    """A member heartbeats at 1,200 with a 1,500 ms session, then goes quiet: its member expires at the first
    trigger at or after 2,700, whichever store keeps the group. The row store filed the group at its first deadline
    (1,500) and a heartbeat does not re-file it, so its bucket is called once early, steps nothing, and publishes the
    real deadline (`group_stores.deadline_index`); the bucket row publishes 2,700 at once."""
    joined = stable_member(bucket, "g", 1_500)
    driver = Driver(bucket)
    driver.call(resumed(inputs(timer_row=True)), 1_000)  # a run's first batch calls every bucket, which publishes
    assert driver.published == [1_500]
    driver.call(inputs(p.heartbeat("g", joined["member_id"], joined["generation_id"]), at_ms=1_200), 1_200)
    expired_at = None
    for now in range(1_300, 3_001, 100):
        summary = driver.trigger(now)
        if summary is not None and summary["members_expired"]:
            expired_at = now
            break
        assert summary is None or summary["groups_called"] == 0  # an early call steps nothing
    assert expired_at == 2_700
    assert 2_700 in driver.published


def test_a_resumed_call_publishes_an_unchanged_deadline_and_a_plain_one_does_not(bucket):
    stable_member(bucket, "g", 60_000)
    driver = Driver(bucket)
    driver.call(inputs(timer_row=True), 1_000)
    assert driver.published == []
    driver.call(resumed(inputs(timer_row=True)), 1_000)
    assert driver.published == [bucket.open().earliest()] and driver.published[0] is not None


def test_no_other_part_of_the_job_asks_the_core_about_deadlines():
    """The stores, the index, the state call, the timers topic and the source ask `streaming.bucket_deadlines`,
    which alone asks the core (`state.handling.timers`' `is_due` and `earliest`)."""
    root = Path(streaming.__file__).parent
    asking = [str(path.relative_to(root)) for path in sorted(root.rglob("*.py"))
              if path.name != "bucket_deadlines.py"
              and re.search(r"^from state\.api import .*\b(is_due|earliest)\b", path.read_text(), flags=re.M)]
    assert asking == []
