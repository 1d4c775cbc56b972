"""The consumers of sized fetches a process keeps (`streaming.kafka_io.librdkafka.cached_consumer` with `max_bytes`):
the most recently used sizes per purpose. No broker: a consumer connects only when it reads."""

from __future__ import annotations

from streaming.kafka_io import librdkafka

CONFIG = {"bootstrap_servers": "127.0.0.1:9"}  # nothing listens there; nothing here reads


def test_a_purpose_keeps_its_most_recent_sizes_and_never_closes_another_purpose_s():
    sizes = [librdkafka.FETCH_BYTES_MIN * (i + 1) for i in range(librdkafka.SIZED_KEPT + 2)]
    watch = librdkafka.cached_consumer("test-watch", CONFIG, 10, sizes[0])
    first = librdkafka.cached_consumer("test-read", CONFIG, 10, sizes[0])
    for size in sizes[1:]:
        librdkafka.cached_consumer("test-read", CONFIG, 10, size)
    assert librdkafka.cached_consumer("test-watch", CONFIG, 10, sizes[0]) is watch
    assert librdkafka.cached_consumer("test-read", CONFIG, 10, sizes[-1]) is \
        librdkafka.cached_consumer("test-read", CONFIG, 10, sizes[-1])
    assert librdkafka.cached_consumer("test-read", CONFIG, 10, sizes[0]) is not first  # evicted, made again
    assert len(librdkafka._sized["test-read"]) == librdkafka.SIZED_KEPT
