"""The timer file the state calls write and the source reads (no Spark, no broker)."""

from __future__ import annotations

import json
import threading

from streaming.timers import merge_deadlines, read_deadlines


def test_merging_sets_moves_and_removes_bucket_deadlines(tmp_path):
    path = str(tmp_path / "checkpoint" / "timers.json")
    assert read_deadlines(path) == {}  # no file yet: nothing scheduled
    merge_deadlines(path, {3: 5_000, 7: 9_000})
    merge_deadlines(path, {3: 6_000})
    assert read_deadlines(path) == {3: 6_000, 7: 9_000}
    merge_deadlines(path, {7: None})
    assert read_deadlines(path) == {3: 6_000}
    assert json.loads((tmp_path / "checkpoint" / "timers.json").read_text())["earliest"] == 6_000


def test_an_unreadable_file_reads_as_none(tmp_path):
    path = tmp_path / "timers.json"
    path.write_text("{torn")
    assert read_deadlines(str(path)) is None
    merge_deadlines(str(path), {1: 10})  # a write replaces it
    assert read_deadlines(str(path)) == {1: 10}


def test_concurrent_writers_lose_no_bucket(tmp_path):
    """State tasks of different shuffle partitions write their own buckets at the same time."""
    path = str(tmp_path / "timers.json")

    def write(buckets: range) -> None:
        for bucket in buckets:
            merge_deadlines(path, {bucket: 1_000 + bucket})

    threads = [threading.Thread(target=write, args=(range(start, 200, 4),)) for start in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert read_deadlines(path) == {bucket: 1_000 + bucket for bucket in range(200)}
