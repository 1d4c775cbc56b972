"""The Kafka sink: a Python `DataSourceStreamWriter` producing the coordinator's output rows.

Rows are `(sink, key, value, reason, partition, offset, deadline)` (`OUTPUT_SCHEMA`); `sink` picks the topic:
`response` -> responses topic (key = group_id), `record` -> records topic (value None = tombstone),
`dead_letter` -> dead-letter topic (original key and bytes, the reason and source position in headers), and
`timer` rows are not produced but collected: each task returns the groups' next deadlines in its commit message,
and `commit` merges them into the timer file that the source's tick reads.

At-least-once: a batch replayed after a crash is produced again. The core is deterministic and Spark replays the
batch with the same input, state and timestamp, so the second copy is byte-identical and clients drop it by
`request_id`.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage

from streaming.kafka_clients import cached_producer, client_config
from streaming.source import lower_keys

OUTPUT_SCHEMA = ("sink STRING, key BINARY, value BINARY, reason STRING, partition INT, offset LONG, "
                 "deadline LONG")

SINKS = ("response", "record", "dead_letter")


@dataclass
class Written(WriterCommitMessage):
    counts: dict[str, int] = field(default_factory=dict)
    deadlines: dict[str, int | None] = field(default_factory=dict)


class KafkaSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "coordinator-kafka-sink"

    def schema(self) -> str:
        return OUTPUT_SCHEMA

    def streamWriter(self, schema, overwrite: bool) -> "KafkaStreamWriter":
        return KafkaStreamWriter(dict(self.options))


class KafkaStreamWriter(DataSourceStreamWriter):
    def __init__(self, options: Mapping[str, str]) -> None:
        options = lower_keys(options)
        self.client_config = client_config(options)
        self.topics = {"response": options["topic.responses"], "record": options["topic.records"],
                       "dead_letter": options["topic.dead.letters"]}
        self.timer_file = options.get("timerfile") or None

    def write(self, rows: Iterator) -> Written:
        producer = cached_producer(self.client_config)
        written = Written(counts={s: 0 for s in SINKS})
        for row in rows:
            sink = row.sink
            if sink == "timer":
                written.deadlines[row.key.decode()] = row.deadline
                continue
            headers = None
            if sink == "dead_letter":
                headers = [("reason", (row.reason or "").encode()),
                           ("source.partition", str(row.partition).encode()),
                           ("source.offset", str(row.offset).encode())]
            producer.send(self.topics[sink], key=_bytes(row.key), value=_bytes(row.value), headers=headers)
            written.counts[sink] += 1
        producer.flush()
        return written

    def commit(self, messages: Sequence[Written | None], batchId: int) -> None:
        if self.timer_file:
            merge_deadlines(self.timer_file, [m.deadlines for m in messages if m])

    def abort(self, messages: Sequence[Written | None], batchId: int) -> None:
        """Nothing to undo: Kafka writes are not transactional; the batch is retried and its output repeated."""


def _bytes(value: object) -> bytes | None:
    return None if value is None else bytes(value)


def merge_deadlines(path: str, updates: Sequence[Mapping[str, int | None]]) -> None:
    """Fold per-group next deadlines into the timer file `{"earliest": ms, "groups": {group: ms}}` (None removes a
    group); written atomically, because the source reads it concurrently."""
    if not any(updates):
        return
    try:
        with open(path, "rb") as f:
            groups: dict[str, int] = json.loads(f.read()).get("groups", {})
    except (FileNotFoundError, ValueError):
        groups = {}
    for update in updates:
        for group, deadline in update.items():
            if deadline is None:
                groups.pop(group, None)
            else:
                groups[group] = deadline
    body = json.dumps({"earliest": min(groups.values(), default=None), "groups": groups}).encode()
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".timers")
    with os.fdopen(fd, "wb") as f:
        f.write(body)
    os.replace(tmp, path)
