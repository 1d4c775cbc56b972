"""The job's outputs: the Kafka producer the state task writes with, and the summary rows the metrics are made of.

The state task produces its output itself (`KafkaOutput.send`), right after each bucket's core calls, instead of
handing rows to a separate writer stage: that saves a Python worker hop, an Arrow round trip through the JVM and a
Row object per output record, and a response leaves as soon as its bucket is computed rather than after the whole
state operator has finished (measured: about 0.8 s of a 2 s micro-batch). Output rows are `OutputRow`s.

At-least-once: `flush` returns only when every record handed to `send` is acknowledged, and raises otherwise, so
the task fails and Spark retries it, before the batch can commit (`applyInPandasWithState` flushes after each
call, `transformWithState` once at the end of its task). The producer is idempotent, so a retried send can neither
duplicate nor reorder a partition's records: the records topic is compacted, and its latest value per key must be
the one written last. A batch replayed after a crash is produced again; the core is
deterministic and Spark replays the batch with the same input, state and timestamp, so the second copy is
byte-identical and clients drop it by `request_id`.

What reaches the query's sink (Spark's `noop`) is one summary row per state key and batch (`SUMMARY_SCHEMA`), which
the query's `observe` sums into the metrics. A Python sink for them would cost every batch another Python round trip
in the state task and one on the driver.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from kafka.partitioner.default import murmur2

from state.api import GroupState
from streaming.kafka_io.kafka_clients import cached_producer

GROUP_STATES = tuple(s.value for s in GroupState)
FAST_APIS = {"Heartbeat": "heartbeats", "OffsetCommit": "commits"}
"""The requests gateways answer from a group's view (`state.views.fast_answers`), and their summary columns' names."""
FAST_COUNTED_AS = {"TxnOffsetCommit": "OffsetCommit"}
"""A fast answer of these APIs counts in the column of another: a TxnOffsetCommit is a commit."""

SUMMARY_COUNTS = ["responses", "records", "dead_letters", "groups_called", "groups_with_timer", "members_expired",
                  "timer_rows", *(f"groups_to_{s}" for s in GROUP_STATES), *(f"fast_{a}" for a in FAST_APIS.values()),
                  *(f"mispredicted_{a}" for a in FAST_APIS.values()), "call_us", "produce_us"]
SUMMARY_COLUMNS = ["kind", "bucket", "deadline", *SUMMARY_COUNTS]
SUMMARY_SCHEMA = "kind STRING, bucket INT, deadline LONG, " + ", ".join(f"{c} LONG" for c in SUMMARY_COUNTS)
"""One row per state key per call, summed per batch by the query's `observe`. `deadline` is the bucket's earliest
pending deadline (None: no timer); `timer_rows` is 1 when the source's timer row called the bucket (Spark counts it
as an input row); `groups_to_<state>` count the group metadata records that put a group in that state;
`fast_heartbeats`/`fast_commits` count the requests a gateway answered from a group's view and the coordinator checked
(a Liveness request's members count as heartbeats, TxnOffsetCommits as commits), `mispredicted_...` those it decided
otherwise; `call_us` is the
call's own time (reading its rows, the core, the state row) and `produce_us` the time to hand its output to the
producer, and with `applyInPandasWithState` to flush it (`transformWithState` flushes once per task, in
`GroupRows.close`, outside any call): with Spark's `addBatch` they split a batch into read + shuffle, state and
sink."""


class OutputRow(NamedTuple):
    """One record a state call produces. `sink` picks the topic: `response` -> responses topic (key = group_id),
    `record` -> records topic (value None = tombstone), `dead_letter` -> dead-letter topic (the original key and
    bytes; `reason` and the source `partition` and `offset` in headers), `view` -> views topic (key = group_id,
    value None = the group is gone), `deadline` -> timers topic."""

    sink: str
    key: bytes | None
    value: bytes | None
    reason: str | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class KafkaOutput:
    """Where the state task produces, with which client (`streaming.kafka_io.kafka_clients.chosen_client`). Picklable
    (it is shipped to the workers); the producer itself is created lazily and cached per worker process.

    `send` hands records to the producer, which sends them in the background (a response leaves within its linger
    time); `flush` waits until every record sent since the last flush is acknowledged, and raises if one failed. The
    state task flushes before it ends, so no batch commits with output unacknowledged."""

    client_config: dict[str, object]
    topics: dict[str, str]  # sink name -> topic
    client: str = "kafka-python"

    def send(self, rows: Sequence[OutputRow]) -> None:
        if not rows:
            return
        records = [(self.topics[row.sink], _bytes(row.key), _bytes(row.value),
                    _headers(row.sink, row.reason, row.partition, row.offset)) for row in rows]
        if self.client == "confluent":
            from streaming.kafka_io import librdkafka

            librdkafka.produce(self.client_config, records)
        else:
            _produce_kafka_python(self.client_config, records)

    def flush(self) -> None:
        if self.client == "confluent":
            from streaming.kafka_io import librdkafka

            librdkafka.flush(self.client_config)
        else:
            _flush_kafka_python(self.client_config)


def _headers(sink: str, reason: str | None, partition: int | None, offset: int | None) -> list | None:
    """A dead letter carries why and where it came from."""
    if sink != "dead_letter":
        return None
    return [("reason", (reason or "").encode()), ("source.partition", str(partition).encode()),
            ("source.offset", str(offset).encode())]


_unacknowledged: list = []
"""kafka-python's futures of the records sent since the last flush, in this process."""


def _produce_kafka_python(config: dict[str, object], records: Sequence[tuple]) -> None:
    """Send `(topic, key, value, headers)` records. Keyed records go where Kafka's default partitioner puts them
    (`_key_hash`)."""
    producer = cached_producer(config)
    partitions = {topic: len(producer.partitions_for(topic)) for topic in {r[0] for r in records}}
    _unacknowledged.extend(producer.send(topic, key=key, value=value, headers=headers,
                                         partition=None if key is None else _key_hash(key) % partitions[topic])
                           for topic, key, value, headers in records)


def _flush_kafka_python(config: dict[str, object]) -> None:
    cached_producer(config).flush()
    futures = list(_unacknowledged)
    _unacknowledged.clear()
    for future in futures:
        if future.failed():
            raise RuntimeError(f"producing to Kafka failed: {future.exception!r}") from future.exception


@functools.lru_cache(maxsize=1 << 16)
def _key_hash(key: bytes) -> int:
    """Kafka's default partitioner for a keyed record is this mod the topic's partition count (`murmur2`, as Java's
    and kafka-python's). Cached, because the same groups' keys recur in every batch and kafka-python computes it in
    pure Python: about a quarter of a `send` call."""
    return murmur2(key) & 0x7FFFFFFF


def _bytes(value: object) -> bytes | None:
    return None if value is None else bytes(value)
