"""`--reset-offsets`: Kafka's reset specifications, and the CSV reset plans of `--export` and `--from-file`.

Semantics are `ConsumerGroupCommand`'s: every target is clamped into [earliest, log end]; `--to-datetime` and
`--by-duration` go to the first record at or after the time (the log end when there is none); a plan is
`topic,partition,offset` lines when the command names exactly one `--group`, else `group,topic,partition,offset`
lines, so `--export` output can be fed back with `--from-file`.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import re
import time
from typing import Callable, Mapping

from admin.groups import LogOffsets

TopicPartition = tuple[str, int]
ResetPlan = dict[str, dict[TopicPartition, int]]
"""{group_id: {(topic, partition): offset}}"""


class ResetError(ValueError):
    """A reset specification or plan that cannot be used; the message says which and why."""


def new_offsets(args: argparse.Namespace, partitions: list[TopicPartition], committed: Mapping[TopicPartition, int],
                offsets: LogOffsets, plan: Mapping[TopicPartition, int] | None = None,
                now_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> dict[TopicPartition, int]:
    """The targets of `partitions` for the reset specification in `args` (`plan`: the group's `--from-file` rows,
    whose partitions replace `partitions`)."""
    if plan is not None:
        partitions = sorted(plan)
    earliest = offsets.earliest(partitions)
    latest = offsets.log_end(partitions)
    if plan is not None:
        target = dict(plan)
    elif args.to_earliest:
        target = dict(earliest)
    elif args.to_latest:
        target = dict(latest)
    elif args.to_current:
        target = {tp: committed.get(tp, latest[tp]) for tp in partitions}
    elif args.to_offset is not None:
        target = {tp: args.to_offset for tp in partitions}
    elif args.shift_by is not None:
        target = {tp: committed.get(tp, latest[tp]) + args.shift_by for tp in partitions}
    else:
        at_ms = (datetime_ms(args.to_datetime) if args.to_datetime
                 else now_ms() - duration_ms(args.by_duration))
        found = offsets.for_time(partitions, max(0, at_ms))  # before the epoch: every record is after it
        target = {tp: latest[tp] if found.get(tp) is None else found[tp] for tp in partitions}  # type: ignore[misc]
    return {tp: min(max(off, earliest[tp]), latest[tp]) for tp, off in target.items()}


def datetime_ms(text: str) -> int:
    """`YYYY-MM-DDTHH:mm:SS.sss`, optionally with a zone; Kafka reads a zone-less one in the local time zone."""
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ResetError(f"--to-datetime {text!r} is not YYYY-MM-DDTHH:mm:SS.sss[zone]") from None
    if when.tzinfo is None:
        when = when.astimezone()
    return int(when.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{1,9}))?S)?)?",
    re.IGNORECASE)


def duration_ms(text: str) -> int:
    """An ISO-8601 duration as Java's `Duration.parse` reads it (`PnDTnHnMn.nS`: days of 24 hours, signs allowed
    on the whole and on each part), in milliseconds."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper().endswith("T") or not any(m.group(i) for i in range(2, 6)):
        raise ResetError(f"--by-duration {text!r} is not an ISO-8601 duration like PT15M or P1DT12H")
    sign, days, hours, minutes, seconds, fraction = m.groups()
    seconds_ms = int(seconds or 0) * 1000
    if fraction:
        millis = int(fraction.ljust(9, "0")[:3])
        seconds_ms += -millis if seconds.startswith("-") else millis
    total = (int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000 + seconds_ms)
    return -total if sign == "-" else total


def read_plan(text: str, group_args: list[str]) -> ResetPlan:
    """A `--from-file` CSV. Three columns are one group's rows and need exactly one `--group` (Kafka's single-group
    format); otherwise every line is `group,topic,partition,offset`."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row and any(cell.strip() for cell in row)]
    single = len(group_args) == 1 and bool(rows) and len(rows[0]) == 3
    plan: ResetPlan = {}
    for number, row in enumerate(rows, 1):
        cells = [cell.strip() for cell in row]
        if single and len(cells) == 3:
            group, (topic, partition, offset) = group_args[0], cells
        elif not single and len(cells) == 4:
            group, topic, partition, offset = cells
        else:
            expected = "topic,partition,offset" if single else "group,topic,partition,offset"
            raise ResetError(f"--from-file line {number}: {','.join(row)!r} is not {expected}")
        try:
            plan.setdefault(group, {})[(topic, int(partition))] = int(offset)
        except ValueError:
            raise ResetError(f"--from-file line {number}: partition and offset must be integers") from None
    return plan


def write_plan(rows: list[tuple[str, str, int, int]], single_group: bool) -> str:
    """`--export`: the reset rows `(group, topic, partition, offset)` in the format `read_plan` reads back."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for group, topic, partition, offset in rows:
        writer.writerow((topic, partition, offset) if single_group else (group, topic, partition, offset))
    return out.getvalue()
