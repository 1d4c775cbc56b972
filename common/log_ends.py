"""Where a Kafka partition's log ends, as fetch responses say it (for readers that follow a topic to its end).

Used by the job (its source, the group directory, the timer schedule, the lease) and by the gateway's view follower.
"""

from __future__ import annotations

import time
import weakref
from typing import Mapping

from kafka import KafkaConsumer, TopicPartition

PAST_THE_END = 1 << 62
"""Where a log-end read fetches on a broker that answers a fetch past a partition's end with its end and no error
(tansu): there it lists none of the partition's record batches (`_answers_past_the_end`)."""

_past_the_end: "weakref.WeakKeyDictionary[KafkaConsumer, bool]" = weakref.WeakKeyDictionary()
_last_past_the_end: "weakref.WeakKeyDictionary[KafkaConsumer, int]" = weakref.WeakKeyDictionary()


def high_watermarks(consumer: KafkaConsumer, positions: Mapping[TopicPartition, int],
                    timeout_s: float = 10.0) -> dict[TopicPartition, int]:
    """The high watermark of each partition, as carried in fetch responses.

    tansu's ListOffsets (`end_offsets`) can under-report the log end when a producer batched records, so the end is
    learned by fetching at the last known position (`positions`, usually the previous high watermark) with no wait:
    the response carries the true high watermark and at most `max_partition_fetch_bytes` of data, which is dropped.

    On tansu a fetch below a partition's end lists every record batch of the partition (about 1 us each, under the
    store's lock that every produce waits for), so a log-end read at the last known end cost more the longer the
    topic, whenever records had arrived since: the gateway's ten a second over the requests topic slowed every
    produce of a long soak (issue 37). Where the broker answers a fetch past the end with the end and no error, as
    tansu does (Kafka answers OFFSET_OUT_OF_RANGE), every partition is fetched there instead, which lists nothing;
    which one it is is asked once per consumer (`_answers_past_the_end`).
    """
    tps = list(positions)
    consumer.assign(tps)
    deadline = time.monotonic() + timeout_s
    rounds = 2
    if tps and _answers_past_the_end(consumer, tps[0], deadline, timeout_s):
        # Past the end, this call's position differs from the last call's (`_past_the_end_position`), so an answer
        # fetched before the call is discarded (kafka-python keeps a response only at the current position): one
        # round is fresh. The job plans a batch ten times a second with a read of the requests topic's ends; the
        # second round was a third of an idle query's CPU.
        position = _past_the_end_position(consumer)
        positions = {tp: position for tp in tps}
        rounds = 1
    # kafka-python sends the next fetch as soon as it parses one, so the first answer parsed here may have been
    # fetched before this call, at the same position (so not discarded), and carry an old end: the group directory
    # once listed a group deleted a batch before. The second round's answer was fetched during the call.
    for _ in range(rounds):
        for tp in tps:
            consumer.seek(tp, positions[tp])
            # kafka-python keeps the last high watermark; clear it so a stale value is never mistaken for a fresh one.
            consumer._subscription.assignment[tp].highwater = None
        marks = _poll_marks(consumer, tps, deadline, timeout_s)
    return marks


def _past_the_end_position(consumer: KafkaConsumer) -> int:
    """`PAST_THE_END` and one below it, in turn: a different position from the consumer's last log-end read."""
    position = PAST_THE_END if _last_past_the_end.get(consumer) != PAST_THE_END else PAST_THE_END - 1
    _last_past_the_end[consumer] = position
    return position


def _answers_past_the_end(consumer: KafkaConsumer, tp: TopicPartition, deadline: float, timeout_s: float) -> bool:
    """Whether the broker answers a fetch past `tp`'s end with its high watermark and no error (tansu), rather than
    OFFSET_OUT_OF_RANGE (Kafka: kafka-python then resets the position, or raises without a reset policy)."""
    known = _past_the_end.get(consumer)
    if known is None:
        consumer.seek(tp, PAST_THE_END)
        _last_past_the_end[consumer] = PAST_THE_END
        consumer._subscription.assignment[tp].highwater = None
        try:
            while consumer.highwater(tp) is None and consumer.position(tp) == PAST_THE_END:
                consumer.poll(timeout_ms=5, max_records=1)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no fetch response for {tp} within {timeout_s} s")
            known = consumer.highwater(tp) is not None and consumer.position(tp) == PAST_THE_END
        except TimeoutError:
            raise
        except Exception:  # OffsetOutOfRangeError where the consumer has no reset policy
            known = False
        _past_the_end[consumer] = known
    return known


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
