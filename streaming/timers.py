"""The timer file: each state bucket's earliest group deadline, which the source turns into timer rows.

The query runs without Spark timeouts (see `streaming.stateful.coordinator_function`), so a bucket is only called
when it has input. Each bucket call records its earliest pending deadline here (`merge_deadlines`), and the
source's `latestOffset` reads the file (`read_deadlines`) on every trigger: a bucket whose deadline has passed gets a
timer row in the next batch. The file is `<checkpoint>/coordinator-timers.json`, `{"earliest": ms, "buckets":
{bucket: ms}}`; `earliest` is for operators.

The state task writes it before its batch commits. That is safe because it is only a schedule: if the batch fails
and is replayed, the core is deterministic and the replay writes the same deadlines again, and a deadline that
turns out early only causes a call that finds nothing due. Writes are atomic (a rename) for the source, which reads
concurrently, and serialised with a lock file for state tasks of other shuffle partitions.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
from typing import Mapping

log = logging.getLogger(__name__)

TIMER_FILE = "coordinator-timers.json"


def merge_deadlines(path: str, update: Mapping[int, int | None]) -> None:
    """Fold {bucket: earliest deadline} into the timer file (None removes a bucket: nothing pending there)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        buckets = {str(b): d for b, d in (read_deadlines(path) or {}).items()}
        for bucket, deadline in update.items():
            if deadline is None:
                buckets.pop(str(bucket), None)
            else:
                buckets[str(bucket)] = int(deadline)
        body = json.dumps({"earliest": min(buckets.values(), default=None), "buckets": buckets}).encode()
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".timers")
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, path)


def read_deadlines(path: str) -> dict[int, int] | None:
    """{bucket: deadline} from the timer file ({} when there is none yet); None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return {int(b): int(d) for b, d in json.loads(f.read())["buckets"].items()}
    except FileNotFoundError:
        return {}
    except (ValueError, KeyError, TypeError, AttributeError):
        log.warning("unreadable timer file %s", path)
        return None
