"""The group directory for ListGroups: the latest group record per group, read from the records topic.

ListGroups spans every group, so no single group's state can answer it. Each Python worker keeps one
`state.directory.GroupDirectory` and, before answering, applies the records topic up to its high watermark (read
from fetch responses, not ListOffsets: see `streaming.kafka_clients.high_watermarks`). The answer reflects the
records of all completed micro-batches; the current batch's own records are not yet written.
"""

from __future__ import annotations

import threading
from typing import Any

from kafka import TopicPartition

from streaming.kafka_clients import cached_consumer, high_watermarks

_lock = threading.Lock()
_directories: dict[str, tuple[Any, dict[int, int]]] = {}


def current_directory(source: dict[str, Any]):
    """The directory for `source` = {"topic": records topic, "config": kafka-python settings}, caught up."""
    from state.directory import GroupDirectory

    topic, config = source["topic"], source["config"]
    with _lock:
        directory, positions = _directories.setdefault(topic, (GroupDirectory(), {}))
        consumer = cached_consumer("directory", config, max_poll_records=10000)
        parts = consumer.partitions_for_topic(topic) or set()
        ends = high_watermarks(cached_consumer("directory-marks", config, fetch_max_wait_ms=1,
                                               max_partition_fetch_bytes=1024),
                               {TopicPartition(topic, p): positions.get(p, 0) for p in parts})
        pending = {tp: end for tp, end in ends.items() if positions.get(tp.partition, 0) < end}
        if pending:
            consumer.assign(list(pending))
            for tp in pending:
                consumer.seek(tp, positions.get(tp.partition, 0))
            while any(consumer.position(tp) < end for tp, end in pending.items()):
                for tp, records in consumer.poll(timeout_ms=200).items():
                    for record in records:
                        if record.offset < pending[tp]:
                            directory.apply(record.key, record.value)
            positions.update({tp.partition: end for tp, end in pending.items()})
        return directory
