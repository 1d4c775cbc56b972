"""The group directory for ListGroups: the latest group record per group, read from the records topic.

ListGroups spans every group, so no single group's state can answer it. Each Python worker keeps one
`state.views.directory.GroupDirectory` and, before answering, applies the records topic up to its high watermark (read
from fetch responses, not ListOffsets: see `streaming.kafka_io.kafka_clients.high_watermarks`). The answer reflects the
records of all completed micro-batches; the current batch's own records are not yet written.
"""

from __future__ import annotations

import threading
from typing import Any

from streaming.kafka_io.kafka_clients import catch_up

_lock = threading.Lock()
_directories: dict[str, tuple[Any, dict[int, int]]] = {}


def current_directory(source: dict[str, Any]):
    """The directory for `source` = {"topic": records topic, "config": kafka-python settings}, caught up."""
    from state.api import GroupDirectory

    topic, config = source["topic"], source["config"]
    with _lock:
        directory, positions = _directories.setdefault(topic, (GroupDirectory(), {}))
        catch_up("directory", config, topic, positions, lambda record: directory.apply(record.key, record.value))
        return directory
