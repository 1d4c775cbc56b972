"""The CLI's commands that need only the coordinator, run against the real core in-process (tests.support.loopback),
plus Kafka's option rules."""

import io
import json

import pytest

from admin.cli import command_config, main
from admin.groups import UnknownLogOffsets
from client import protocol
from state.config import CoordinatorConfig
from tests.support.loopback import LoopbackCoordinator


@pytest.fixture
def coordinator():
    c = LoopbackCoordinator()
    yield c
    c.close()


def cli(coordinator, *args):
    out, err = io.StringIO(), io.StringIO()
    code = main(["--bootstrap-server", "127.0.0.1:1", *args], transport=coordinator.transport(),
                log_offsets=UnknownLogOffsets(), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_list_and_delete_groups(coordinator):
    t = coordinator.transport()
    for group in ("b", "a"):
        t.request(group, protocol.offset_commit(group, -1, "", None, {("t", 0): (5, "")}), 5)
    assert cli(coordinator, "--list") == (0, "a\nb\n", "")
    code, out, _ = cli(coordinator, "--delete", "--group", "a", "--group", "missing")
    assert code == 1
    assert out == ("Deletion of requested consumer groups ('a') was successful.\n"
                   "Deletion of some consumer groups failed:\n"
                   "* Group 'missing' could not be deleted due to: The group id does not exist.\n")
    assert cli(coordinator, "--list", "--output", "json")[1].split() == [
        "[", "{", '"group":', '"b",', '"protocol_type":', '"",', '"state":', '"Empty",', '"type":', '"Classic"', "}",
        "]"]


@pytest.mark.parametrize("args, message", [
    (["--describe"], "Option --group or --all-groups must be specified"),
    (["--reset-offsets", "--group", "g", "--to-earliest"], "needs one of the following scopes"),
    (["--reset-offsets", "--group", "g", "--all-topics"], "needs a reset specification"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--topic", "t", "--to-latest"], "cannot be used with"),
    (["--delete-offsets", "--group", "g"], "needs --topic"),
    (["--list", "--picture", "x.png"], "only valid with --history"),
    (["--delete", "--group", "g", "--state"], "--state is only valid with --describe or --list"),
    (["--describe", "--group", "g", "--type"], "--type is only valid with --list"),
    (["--describe", "--group", "g", "--state", "stable"], "--describe does not take a value for --state"),
    (["--describe", "--group", "g", "--export"], "--export is only valid with --reset-offsets"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--export", "--output", "json"],
     "cannot be used with --output json"),
    (["--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1h"], "is not an ISO-8601 duration"),
])
def test_kafka_option_rules(coordinator, args, message):
    code, _, err = cli(coordinator, *args)
    assert code == 1 and message in err


def test_command_config_takes_kafka_python_settings_both_clients_know(tmp_path):
    good = tmp_path / "client.properties"
    good.write_text("# ops\nsecurity.protocol=PLAINTEXT\nrequest.timeout.ms = 20000\nclient.id: ops-tool\n"
                    "bootstrap.servers=ignored:1\n")
    assert command_config(str(good)) == {"security_protocol": "PLAINTEXT", "request_timeout_ms": 20000,
                                         "client_id": "ops-tool"}


@pytest.mark.parametrize("text, message", [
    ("sasl.jaas.config=org.apache...\nacks=all\n", "unknown settings acks, sasl.jaas.config; the tool takes"),
    (None, "Cannot read --command-config"),
])
def test_a_command_config_the_tool_cannot_use_is_refused(coordinator, tmp_path, text, message):
    path = tmp_path / "client.properties"
    if text is not None:
        path.write_text(text)
    code, _, err = cli(coordinator, "--list", "--command-config", str(path))
    assert code == 1 and message in err


def test_list_with_state_and_type_prints_and_filters_as_kafka():
    coordinator = LoopbackCoordinator(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    t = coordinator.transport()
    try:
        for group in ("a", "b"):
            t.request(group, protocol.offset_commit(group, -1, "", None, {("t", 0): (5, "")}), 5)
        joined = t.request("s", protocol.join_group("s", "", "i1", "c", "/h", 10_000, 10_000, [("range", b"")]), 5)
        member, generation = joined["member_id"], joined["generation_id"]
        t.request("s", protocol.sync_group("s", generation, member, "i1", "range", {member: b""}), 5)

        def row(*cells: str) -> str:  # Kafka's printf: the GROUP column max(15, longest id) + 10 wide, then %-20s
            return cells[0].ljust(25) + "".join(" " + c.ljust(20) for c in cells[1:]) + "\n"

        assert cli(coordinator, "--list", "--state") == (
            0, row("GROUP", "STATE") + row("a", "Empty") + row("b", "Empty") + row("s", "Stable"), "")
        assert cli(coordinator, "--list", "--state", "stable")[1] == row("GROUP", "STATE") + row("s", "Stable")
        assert cli(coordinator, "--list", "--type", "--state", "Stable,EMPTY")[1] == (
            row("GROUP", "TYPE", "STATE") + row("a", "Classic", "Empty") + row("b", "Classic", "Empty")
            + row("s", "Classic", "Stable"))
        assert cli(coordinator, "--list", "--type", "consumer")[1] == row("GROUP", "TYPE")
        code, _, err = cli(coordinator, "--list", "--state", "stable,bogus")
        assert code == 1 and "Invalid state list 'stable,bogus'. Valid states are: PreparingRebalance, " in err
    finally:
        coordinator.close()


def consumer_group(coordinator, group: str = "cg") -> None:
    """A KIP-848 consumer group of one member holding a 3-partition topic, as librdkafka joins one."""
    t = coordinator.transport()
    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    coordinator.handle("topics", json.dumps({"api": "TopicMetadata", "request_id": "", "version": 1, "topics": [
        {"topic_id": topic_id, "name": "t", "partitions": 3}]}).encode())
    joined = t.request(group, {"api": "ConsumerGroupHeartbeat", "group_id": group, "member_id": "m1",
                               "member_epoch": 0, "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["t"],
                               "topic_partitions": [], "client_id": "rdkafka", "client_host": "/127.0.0.1"}, 5)
    assert joined["member_epoch"] == 1


def test_list_and_describe_a_consumer_group(coordinator):
    consumer_group(coordinator)
    t = coordinator.transport()
    t.request("classic", protocol.offset_commit("classic", -1, "", None, {("t", 0): (5, "")}), 5)
    code, out, _ = cli(coordinator, "--list", "--type")
    assert code == 0 and [line.split() for line in out.splitlines()] == [
        ["GROUP", "TYPE"], ["cg", "Consumer"], ["classic", "Classic"]]
    assert cli(coordinator, "--list", "--type", "consumer")[1].split() == ["GROUP", "TYPE", "cg", "Consumer"]
    code, out, _ = cli(coordinator, "--describe", "--group", "cg", "--members", "--verbose")
    assert code == 0 and [line.split() for line in out.splitlines() if line] == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
         "TARGET-EPOCH", "TARGET-ASSIGNMENT"],
        ["cg", "m1", "/127.0.0.1", "rdkafka", "3", "1", "t(0,1,2)", "1", "t(0,1,2)"]]
    code, out, _ = cli(coordinator, "--describe", "--group", "cg", "--state", "--verbose")
    header, row = [line.split() for line in out.splitlines() if line]
    assert code == 0 and header[-2:] == ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
    assert row[-5:] == ["uniform", "Stable", "1", "1", "1"]
