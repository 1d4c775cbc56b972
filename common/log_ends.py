"""Where a Kafka partition's log ends, as fetch responses say it (for readers that follow a topic to its end).

Used by the job (its source, the group directory, the timer schedule, the lease) and by the gateway's view follower.
"""

from __future__ import annotations

import time
from typing import Mapping

from kafka import KafkaConsumer, TopicPartition


def high_watermarks(consumer: KafkaConsumer, positions: Mapping[TopicPartition, int],
                    timeout_s: float = 10.0) -> dict[TopicPartition, int]:
    """The high watermark of each partition, as carried in fetch responses.

    tansu's ListOffsets (`end_offsets`) can under-report the log end when a producer batched records, so the end is
    learned by fetching at the last known position (`positions`, usually the previous high watermark) with no wait:
    the response carries the true high watermark and at most `max_partition_fetch_bytes` of data, which is dropped.
    """
    tps = list(positions)
    consumer.assign(tps)
    deadline = time.monotonic() + timeout_s
    # kafka-python sends the next fetch as soon as it parses one, so the first answer parsed here may have been
    # fetched before this call, at the same position (so not discarded), and carry an old end: the group directory
    # once listed a group deleted a batch before. The second round's answer was fetched during the call.
    for _ in range(2):
        for tp in tps:
            consumer.seek(tp, positions[tp])
            # kafka-python keeps the last high watermark; clear it so a stale value is never mistaken for a fresh one.
            consumer._subscription.assignment[tp].highwater = None
        marks = _poll_marks(consumer, tps, deadline, timeout_s)
    return marks


def _poll_marks(consumer: KafkaConsumer, tps: list[TopicPartition], deadline: float,
                timeout_s: float) -> dict[TopicPartition, int]:
    """Poll until every partition in `tps` has a high watermark again."""
    while True:
        consumer.poll(timeout_ms=5, max_records=1)
        marks = {tp: consumer.highwater(tp) for tp in tps}
        if all(mark is not None for mark in marks.values()):
            return marks  # type: ignore[return-value]
        if time.monotonic() > deadline:
            missing = [str(tp) for tp, mark in marks.items() if mark is None]
            raise TimeoutError(f"no fetch response for {missing} within {timeout_s} s")
