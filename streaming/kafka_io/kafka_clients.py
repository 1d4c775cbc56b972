"""kafka-python clients for the job: per-process caches, high watermarks, and which client library the job's hot
path uses (`kafka.client`: librdkafka through `streaming.kafka_io.librdkafka`, or kafka-python). Their settings are
the `kafka.*` properties passed through (`common.config.client_config`).

Spark pickles readers and writers and re-creates them in Python workers, so no socket may live in them. Clients
are created lazily and cached per process: with `spark.python.worker.reuse=true` a worker keeps its consumer and
producer across micro-batches, which removes a connection set-up from every task.
"""

from __future__ import annotations

import threading
from typing import Callable, Mapping, NamedTuple

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from common.config import CLIENT_KEY, client_config
from common.log_ends import high_watermarks

CLIENTS = ("auto", "confluent", "kafka-python")


def chosen_client(options: Mapping[str, str]) -> str:
    """`confluent` or `kafka-python`, as `kafka.client` in `options` (Spark options or properties) resolves."""
    choice = next((str(v).strip() for k, v in options.items() if k.lower() == CLIENT_KEY), "") or "auto"
    if choice not in CLIENTS:
        raise ValueError(f"{CLIENT_KEY} must be one of {', '.join(CLIENTS)}, got {choice!r}")
    if choice == "kafka-python":
        return choice
    try:
        from common.librdkafka_config import confluent_config, unmappable
    except ImportError:
        if choice == "confluent":
            raise ValueError(f"{CLIENT_KEY}=confluent but confluent-kafka is not installed "
                             "(pip install confluent-kafka)") from None
        return "kafka-python"
    config = client_config(options)
    if choice == "auto" and unmappable(config):
        return "kafka-python"
    confluent_config(config)  # refuses what librdkafka cannot take, naming it
    return "confluent"


_lock = threading.Lock()
_consumers: dict[tuple, KafkaConsumer] = {}
_producers: dict[tuple, KafkaProducer] = {}


def _cache_key(purpose: str, config: Mapping[str, object]) -> tuple:
    return (purpose, tuple(sorted((k, str(v)) for k, v in config.items())))


def cached_consumer(purpose: str, config: Mapping[str, object], **overrides: object) -> KafkaConsumer:
    """One group-less consumer per purpose and configuration in this process (assignment is manual)."""
    key = _cache_key(purpose, {**config, **overrides})
    with _lock:
        consumer = _consumers.get(key)
        if consumer is None:
            settings = {"enable_auto_commit": False, "group_id": None, "auto_offset_reset": "none", **config,
                        **overrides}
            consumer = _consumers[key] = KafkaConsumer(**settings)
        return consumer


def cached_producer(config: Mapping[str, object]) -> KafkaProducer:
    """One producer per configuration in this process; `linger_ms` batches a task's rows into few requests, and
    kafka-python's default idempotence (with `acks=all`) keeps a partition's records in order across retries."""
    key = _cache_key("producer", config)
    with _lock:
        producer = _producers.get(key)
        if producer is None:
            settings = {"linger_ms": 5, "batch_size": 256 * 1024, **config}
            producer = _producers[key] = KafkaProducer(**settings)
        return producer


class Read(NamedTuple):
    """A record as `catch_up` hands it over, whichever client read it (the fields of kafka-python's ConsumerRecord
    that its readers use)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def catch_up(purpose: str, config: Mapping[str, object], topic: str, positions: dict[int, int],
             apply: Callable[[ConsumerRecord | Read], None], client: str = "kafka-python") -> None:
    """Apply every record of `topic` from `positions` (partition -> next offset, updated in place; a partition not
    in it starts at 0) up to the high watermarks, with consumers cached for `purpose`. Used by readers that keep
    a topic's latest state in memory: the group directory, the timer schedule, the driver's group watch and a
    rebuild's read of the records topic. `client="confluent"` reads the records with librdkafka
    (`chosen_client`), which parses them in C: the whole records topic of a million members is read once at every
    driver start, where kafka-python took about 70 s."""
    consumer = cached_consumer(purpose, config, max_poll_records=10000)
    parts = consumer.partitions_for_topic(topic) or set()
    ends = high_watermarks(cached_consumer(f"{purpose}-marks", config, fetch_max_wait_ms=1,
                                           max_partition_fetch_bytes=1024),
                           {TopicPartition(topic, p): positions.get(p, 0) for p in parts})
    pending = {tp: end for tp, end in ends.items() if positions.get(tp.partition, 0) < end}
    if not pending:
        return
    if client == "confluent":
        from streaming.kafka_io import librdkafka

        for tp, end in pending.items():
            start = positions.get(tp.partition, 0)
            try:
                records = list(librdkafka.read_range(config, topic, tp.partition, start, end, wait_log_s=60,
                                                     purpose=purpose))
            except librdkafka.OffsetOutOfRange:  # the log starts later (retention): what is left is the topic
                start = librdkafka.log_start(config, topic, tp.partition)
                records = list(librdkafka.read_range(config, topic, tp.partition, start, end, wait_log_s=60,
                                                     purpose=purpose))
            for partition, offset, _, key, value in records:
                apply(Read(partition, offset, key, value))
            positions[tp.partition] = end
        return
    consumer.assign(list(pending))
    for tp in pending:
        consumer.seek(tp, positions.get(tp.partition, 0))
    while any(consumer.position(tp) < end for tp, end in pending.items()):
        for tp, records in consumer.poll(timeout_ms=200).items():
            for record in records:
                if record.offset < pending[tp]:
                    apply(record)
    positions.update({tp.partition: end for tp, end in pending.items()})
