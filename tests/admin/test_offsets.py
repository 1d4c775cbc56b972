"""Reset targets and log offsets against a real tansu broker: Kafka's reset specifications, clamping into
[earliest, log end], log ends read from fetch high watermarks, and `--export` / `--from-file` with the core
in-process (tests.support.loopback) for the group."""

import argparse
import io
import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from admin.cli import build_parser, main
from admin.reset import new_offsets
from admin.groups import LogOffsets
from client import protocol
from tests.support.loopback import LoopbackCoordinator

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


def test_by_duration_counts_back_from_now(topic, offsets):
    # "now" is 10.5 s after the epoch: an hour back finds the first record, 6.5 s back the one at 4,000 ms.
    at = 10_500
    assert new_offsets(spec("--by-duration", "PT1H"), [(topic, 0)], {}, offsets, now_ms=lambda: at) == {(topic, 0): 0}
    assert new_offsets(spec("--by-duration", "PT6.5S"), [(topic, 0)], {}, offsets, now_ms=lambda: at) == {
        (topic, 0): 3}


def test_a_plan_replaces_the_scope_and_is_clamped(topic, offsets):
    plan = {(topic, 0): 99, (topic, 1): 5}
    assert new_offsets(spec("--from-file", "unused.csv"), [], {}, offsets, plan) == {(topic, 0): 10, (topic, 1): 0}


def test_export_then_from_file_resets_what_the_plan_says(broker, topic, offsets, tmp_path):
    """The operator's round trip: a dry run exported as CSV, edited, then executed from the file."""
    coordinator = LoopbackCoordinator()
    transport = coordinator.transport()
    for group in ("a", "b"):
        transport.request(group, protocol.offset_commit(group, -1, "", None, {(topic, 0): (4, "")}), 5)

    def cli(*args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(["--bootstrap-server", "127.0.0.1:1", "--reset-offsets", *args], transport=transport,
                    log_offsets=offsets, out=out, err=err)
        return code, out.getvalue(), err.getvalue()

    try:
        assert cli("--group", "a", "--topic", f"{topic}:0", "--to-offset", "7", "--export") == (
            0, f"{topic},0,7\n", "")
        code, exported, _ = cli("--group", "a", "--group", "b", "--topic", f"{topic}:0", "--shift-by", "2",
                                "--export")
        assert code == 0 and exported == f"a,{topic},0,6\nb,{topic},0,6\n"
        plan = tmp_path / "plan.csv"
        plan.write_text(f"a,{topic},0,2\n")
        code, out, err = cli("--group", "a", "--group", "b", "--from-file", str(plan), "--execute")
        assert code == 0 and "Error: No reset plan for group b found" in err
        assert out.split("\n")[1:3] == ["GROUP                          TOPIC                          PARTITION  "
                                         "NEW-OFFSET", f"a{' ' * 30}{topic}{' ' * (31 - len(topic))}0{' ' * 10}2"]
        assert transport.request("a", protocol.offset_fetch("a", None), 5)["topics"][0]["partitions"][0][
            "committed_offset"] == 2
        assert cli("--group", "a", "--from-file", str(tmp_path / "missing.csv"))[2].startswith(
            "\nError: Cannot read the reset plan")
        # The tool's own broker clients, made with --command-config's settings.
        settings = tmp_path / "client.properties"
        settings.write_text("client.id=ops-tool\nrequest.timeout.ms=20000\n")
        out = io.StringIO()
        assert main(["--bootstrap-server", broker, "--reset-offsets", "--group", "a", "--topic",
                     topic, "--to-earliest", "--export", "--command-config", str(settings)], transport=transport,
                    out=out, err=io.StringIO()) == 0
        assert out.getvalue() == f"{topic},0,0\n{topic},1,0\n"
    finally:
        coordinator.close()
