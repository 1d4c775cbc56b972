"""Keep PySpark's per-task garbage collection cheap in the Python workers.

PySpark's worker daemon runs a full `gc.collect()` after every task of a reused worker
(`spark.python.worker.reuse=true`). A worker that has imported pandas, pyarrow, kafka-python and the core and holds
its cached Kafka clients has about 100,000 long-lived objects, so each of those collections walked them all: about
50 ms on an idle 2-core machine and over 100 ms under load, three times a micro-batch (two read tasks and the state
task), and on the critical path whenever the next task went to a worker that was still collecting. py-spy found it
at 28% of all Python worker CPU at 1,500 requests/s.

`freeze_survivors` runs as our code starts in a task. Whatever is alive then has survived the daemon's full
collection after the previous task (modules, classes, cached clients), and it moves to the collector's permanent
generation (`gc.freeze`, constant time), so later collections only walk what was allocated since. Objects that
become cyclic garbage after they were frozen would never be freed, so every `FULL_COLLECTION_EVERY` tasks the heap
is unfrozen instead, and the next collection walks and frees everything once.
"""

from __future__ import annotations

import gc

from pyspark import TaskContext

FULL_COLLECTION_EVERY = 500
_tasks = 0
_last_task: int | None = None


def freeze_survivors() -> None:
    """Call as our code starts in a task: see `freeze_at_task`."""
    context = TaskContext.get()
    freeze_at_task(context.taskAttemptId() if context is not None else None)


def freeze_at_task(task: int | None) -> None:
    """At the first call in each task (`task`: its attempt id): freeze the heap as it is, or every
    `FULL_COLLECTION_EVERY` tasks unfreeze it. Later calls in the same task (the state function runs once per key)
    do nothing, so the garbage of a task's earlier keys is not frozen."""
    global _tasks, _last_task
    if task is not None and task == _last_task:
        return
    _last_task = task
    _tasks += 1
    if _tasks % FULL_COLLECTION_EVERY:
        gc.freeze()
    else:
        gc.unfreeze()
