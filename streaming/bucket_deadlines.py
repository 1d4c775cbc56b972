"""When a bucket of groups must be called again: the one place in the job that says so.

Every group has a next deadline (`GroupStep.next_deadline_ms`: the earliest of its timers), and the query runs no
batch without input, so a bucket whose groups have deadlines must be called for them. Five parts of the job take
part in that, and they agree because each asks this module rather than deciding for itself:

- the stores keep each group's deadline and name the groups that are due (`group_stores.bucket_blobs` directly,
  `group_stores.group_rows` through `group_stores.deadline_index`);
- the state call steps a group without requests only when its deadline is due, and publishes its bucket's
  deadline on the timers topic (`streaming.stateful`);
- the driver reads that topic (`kafka_io.timer_schedule`) and the source calls the buckets that are due
  (`kafka_io.source`: their timer rows, recorded in the offset log).

The rules:

- **Due** (`is_due`): a deadline has come at `now` when `deadline <= now`, the instant the core fires a timer
  (`state.handling.timers.is_due`); no deadline is never due.
- **Earliest** (`earliest`): a bucket's deadline is the earliest of its groups' (None: no group has one), as a
  group's is the earliest of its timers (`state.handling.timers.earliest`).
- **Published** (`publishes`): a call publishes its bucket's deadline when the call changed it, and in a resumed
  batch (the first new one after a restart) whatever it is, because a restarted driver's schedule starts empty.
- **Called** (`buckets_to_call`): a query run's first new batch calls every bucket, since nothing published before
  the run is read (the timers topic is read from its end: tansu does not compact it, so its history only grows);
  every later batch calls the buckets whose published deadline is due (`BucketSchedule.due`).
- **On the timers topic** (`deadline_record`, `read_deadline_record`): the key is the bucket number as text, the
  value the deadline in ms as text, or a tombstone when the bucket has no deadline.

A deadline that turns out early (a group's deadline moved later since it was published or filed) costs a call that
finds nothing due, never a missed expiry; a bucket is never called late for want of publishing.
"""

from __future__ import annotations

from typing import Iterable

from state.api import earliest as _earliest
from state.api import is_due as _core_is_due


def is_due(deadline_ms: int | None, now_ms: int) -> bool:
    """Whether a deadline (None: none) has come at `now_ms`."""
    return deadline_ms is not None and _core_is_due(deadline_ms, now_ms)


def earliest(deadlines: Iterable[int | None]) -> int | None:
    """A bucket's deadline: the earliest of its groups' deadlines (None for a group without one)."""
    return _earliest(deadlines)


def publishes(before: int | None, after: int | None, resumed: bool) -> bool:
    """Whether a call publishes its bucket's deadline: it moved from `before` to `after`, or the batch is resumed."""
    return resumed or after != before


def buckets_to_call(due: Iterable[int], buckets: int, first_of_run: bool) -> list[int]:
    """The buckets a batch calls for their deadlines: all `buckets` in a run's first new batch, else those `due`."""
    return list(range(buckets)) if first_of_run else sorted(due)


RETENTION_RECHECK = b"offsets.retention shortened"
"""The key of the timer rows of a query run's first new batch when the run's `offsets.retention.minutes` is shorter
than the one the checkpoint's last batch ran with (the source compares them, `kafka_io.source`): such a call steps
every group of its bucket once, so that each group's retention check is armed again under the shorter retention,
as Kafka applies its configuration at every check. A longer retention needs nothing: a check armed early removes
nothing and is armed again."""


def deadline_record(bucket: int, deadline_ms: int | None) -> tuple[bytes, bytes | None]:
    """The timers topic's (key, value) for a bucket's deadline; a None value is a tombstone (no deadline)."""
    return str(bucket).encode(), None if deadline_ms is None else str(deadline_ms).encode()


def read_deadline_record(key: bytes | None, value: bytes | None) -> tuple[int, int | None]:
    """(bucket, deadline or None) of a timers topic record; ValueError when it is not one."""
    try:
        return int(key), None if value is None else int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"not a bucket's deadline: key {key!r}, value {value!r}") from None


class BucketSchedule:
    """The published deadline of every bucket, as the timers topic said it last: what the driver calls buckets by."""

    def __init__(self) -> None:
        self._deadlines: dict[int, int] = {}

    def set(self, bucket: int, deadline_ms: int | None) -> None:
        if deadline_ms is None:
            self._deadlines.pop(bucket, None)
        else:
            self._deadlines[bucket] = deadline_ms

    def due(self, now_ms: int) -> list[int]:
        """The buckets whose deadline has come at `now_ms`, in order."""
        return sorted(bucket for bucket, deadline in self._deadlines.items() if is_due(deadline, now_ms))
