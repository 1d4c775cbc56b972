"""Reset targets and log offsets against a real tansu broker (no coordinator needed): Kafka's reset
specifications, clamping into [earliest, log end], and log ends read from fetch high watermarks."""

import argparse
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from admin.cli import build_parser, new_offsets
from admin.groups import LogOffsets

pytestmark = pytest.mark.broker


@pytest.fixture
def topic(broker):
    """Partition 0: 10 records with timestamps 1000, 2000, ... 10000; partition 1: empty."""
    name = f"reset-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(name, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker, linger_ms=20)  # batched: tansu's ListOffsets may lie
    for i in range(10):
        producer.send(name, value=b"x", partition=0, timestamp_ms=(i + 1) * 1000)
    producer.flush()
    producer.close()
    return name


@pytest.fixture
def offsets(broker):
    lo = LogOffsets(broker)
    yield lo
    lo.close()


def spec(*args: str) -> argparse.Namespace:
    return build_parser().parse_args(["--bootstrap-server", "x", "--reset-offsets", "--group", "g", "--all-topics",
                                      *args])


def test_log_ends_come_from_fetch_high_watermarks(topic, offsets):
    assert offsets.partitions(topic) == [0, 1]
    assert offsets.log_end([(topic, 0), (topic, 1)]) == {(topic, 0): 10, (topic, 1): 0}
    assert offsets.earliest([(topic, 0)]) == {(topic, 0): 0}


@pytest.mark.parametrize("args, expected", [
    (["--to-earliest"], 0),
    (["--to-latest"], 10),
    (["--to-current"], 4),
    (["--to-offset", "7"], 7),
    (["--to-offset", "99"], 10),  # clamped to the log end
    (["--shift-by", "-9"], 0),  # clamped to the earliest
    (["--shift-by", "3"], 7),
])
def test_reset_specifications(topic, offsets, args, expected):
    assert new_offsets(spec(*args), [(topic, 0)], {(topic, 0): 4}, offsets) == {(topic, 0): expected}


def test_to_datetime_finds_the_first_record_at_or_after_it(topic, offsets):
    target = new_offsets(spec("--to-datetime", "1970-01-01T00:00:03.500+00:00"), [(topic, 0), (topic, 1)], {},
                         offsets)
    assert target == {(topic, 0): 3, (topic, 1): 0}


def test_to_datetime_after_the_last_record_goes_to_the_log_end(topic, offsets):
    target = new_offsets(spec("--to-datetime", "1970-01-01T01:00:00+00:00"), [(topic, 0)], {}, offsets)
    assert target == {(topic, 0): 10}
