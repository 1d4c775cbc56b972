"""The Python workers' heap is frozen once per task, and unfrozen now and then so that old garbage is freed."""

import gc

import pytest

from streaming.spark_runtime import worker_heap


@pytest.fixture
def heap(monkeypatch):
    monkeypatch.setattr(worker_heap, "_tasks", 0)
    monkeypatch.setattr(worker_heap, "_last_task", None)
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_the_heap_alive_at_a_tasks_start_is_frozen(heap):
    kept = [object() for _ in range(10)]
    worker_heap.freeze_at_task(1)
    assert gc.get_freeze_count() >= len(kept)


def _frozen(obj: object) -> bool:
    """Whether the collector's permanent generation holds `obj` (`gc.get_objects` lists every other generation).
    Asked of the object itself, not of `gc.get_freeze_count()`: in a whole test run other threads free frozen
    objects at any moment, so the count can drop between two readings."""
    return not any(o is obj for o in gc.get_objects())


def test_later_calls_in_the_same_task_freeze_nothing_more(heap):
    worker_heap.freeze_at_task(1)
    allocated_since = [[] for _ in range(100)]
    worker_heap.freeze_at_task(1)
    assert not _frozen(allocated_since)
    worker_heap.freeze_at_task(2)
    assert _frozen(allocated_since)


def test_every_so_many_tasks_the_heap_is_unfrozen_for_a_full_collection(heap):
    for task in range(1, worker_heap.FULL_COLLECTION_EVERY):
        worker_heap.freeze_at_task(task)
    assert gc.get_freeze_count() > 0
    worker_heap.freeze_at_task(worker_heap.FULL_COLLECTION_EVERY)
    assert gc.get_freeze_count() == 0


@pytest.mark.spark
def test_a_spark_task_freezes_its_workers_heap_once(spark):
    def probe(batches):
        import gc

        import pandas as pd

        from streaming.spark_runtime.worker_heap import freeze_survivors

        for _ in batches:
            pass
        gc.unfreeze()
        freeze_survivors()
        first = gc.get_freeze_count()
        garbage = [[] for _ in range(1000)]
        freeze_survivors()
        second = gc.get_freeze_count()
        del garbage
        yield pd.DataFrame({"first": [first], "second": [second]})

    row = spark.range(1, numPartitions=1).mapInPandas(probe, "first long, second long").collect()[0]
    assert row.first > 0
    assert row.second == row.first
