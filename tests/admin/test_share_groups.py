"""`groupcoord-share-groups` (kafka-share-groups.sh) against the real core in-process (tests.support.loopback):
list, describe offsets with the start offset and the lag, members, state, reset offsets of an empty group, delete
offsets and groups, with Kafka's columns and messages."""

from __future__ import annotations

import io
import json

import pytest

from admin.share_groups import lag, main
from tests.support.loopback import LoopbackCoordinator

FOO = "AAAAAAAAAAAAAAAAAAAAAQ"


class Offsets:
    """The brokers' side as the tool asks it: log ends and earliest offsets of `foo`'s two partitions."""

    def log_end(self, tps):
        return {tp: 100 for tp in tps}

    def earliest(self, tps):
        return {tp: 10 for tp in tps}

    def partitions(self, topic):
        return [0, 1]

    def close(self):
        pass


@pytest.fixture
def coordinator():
    c = LoopbackCoordinator()
    c.handle("", json.dumps({"api": "TopicMetadata", "version": 1,
                             "topics": [{"topic_id": FOO, "name": "foo", "partitions": 2}]}).encode())
    yield c
    c.close()


def cli(coordinator, *args):
    out, err = io.StringIO(), io.StringIO()
    code = main(["--bootstrap-server", "127.0.0.1:1", *args], transport=coordinator.transport(),
                log_offsets=Offsets(), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def heartbeat(coordinator, member: str, epoch: int, **extra):
    return coordinator.transport().request("s", {
        "api": "ShareGroupHeartbeat", "request_id": f"{member}-{epoch}", "group_id": "s", "member_id": member,
        "member_epoch": epoch, "client_id": "app", "client_host": "/10.0.0.1", **extra}, 5)


def test_list_describe_members_and_state(coordinator):
    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    assert cli(coordinator, "--list") == (0, "s\n", "")
    code, out, _ = cli(coordinator, "--list", "--state", "stable")
    assert out.split("\n")[0].split() == ["GROUP", "STATE"] and out.split("\n")[1].split() == ["s", "Stable"]
    code, out, _ = cli(coordinator, "--describe", "--group", "s", "--members", "--verbose")
    lines = [line.split() for line in out.strip().split("\n")]
    assert lines[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"]
    assert lines[1] == ["s", "m1", "/10.0.0.1", "app", "2", "1", "foo:0,1"]
    code, out, _ = cli(coordinator, "--describe", "--group", "s", "--state", "--verbose")
    assert out.strip().split("\n")[1].split()[-4:] == ["Stable", "1", "1", "1"]


def test_describe_offsets_start_offset_and_lag(coordinator):
    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    t = coordinator.transport()
    grant = t.request("s", {"api": "ShareGrant", "request_id": "g", "group_id": "s", "holder": "gw", "partitions": [
        {"topic_id": FOO, "partition": 0, "operation": "take", "epoch": -1}]}, 5)["partitions"][0]
    coordinator.handle("s", json.dumps({"api": "ShareUpdate", "request_id": "u", "group_id": "s", "holder": "gw",
                                        "partitions": [{
        "topic_id": FOO, "partition": 0, "grant_epoch": grant["epoch"], "state_epoch": 1, "start_offset": 40,
        "state_batches": [{"first_offset": 45, "last_offset": 49, "delivery_state": 2, "delivery_count": 1}]}]
    }).encode())
    code, out, _ = cli(coordinator, "--describe", "--group", "s")
    rows = [line.split() for line in out.strip().split("\n")]
    assert rows == [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], ["s", "foo", "0", "40", "55"],
                    ["s", "foo", "1", "-", "-"]]


def test_reset_needs_an_empty_group_then_alters_the_start_offsets(coordinator):
    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    code, _, err = cli(coordinator, "--reset-offsets", "--group", "s", "--topic", "foo", "--to-earliest", "--execute")
    assert code == 1 and "Share group 's' is not empty." in err
    heartbeat(coordinator, "m1", -1)
    code, out, _ = cli(coordinator, "--reset-offsets", "--group", "s", "--topic", "foo:1", "--to-earliest",
                       "--execute")
    assert code == 0 and out.strip().split("\n")[1].split() == ["s", "foo", "1", "10"]
    code, out, _ = cli(coordinator, "--describe", "--group", "s")
    assert ["s", "foo", "1", "10", "90"] in [line.split() for line in out.strip().split("\n")]


def test_delete_offsets_and_groups(coordinator):
    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    code, out, _ = cli(coordinator, "--delete", "--group", "s", "--group", "nope")
    assert code == 1 and "* Group 's' could not be deleted due to: The group is not empty" in out
    assert "* Group 'nope' could not be deleted due to: Group 'nope' is not a share group." in out
    heartbeat(coordinator, "m1", -1)
    code, out, _ = cli(coordinator, "--delete-offsets", "--group", "s", "--topic", "foo")
    assert code == 0 and out.split() == ["TOPIC", "STATUS", "foo", "Successful"]
    code, out, _ = cli(coordinator, "--delete", "--group", "s")
    assert (code, out) == (0, "Deletion of requested share groups ('s') was successful.\n")
    assert cli(coordinator, "--list") == (0, "", "")


def test_lag_is_what_remains_to_deliver():
    assert lag(100, 40, 5) == 55
    assert lag(None, 40, 5) is None and lag(100, -1, 0) is None


def test_a_stopped_querys_share_groups_read_from_its_state(coordinator):
    """`--checkpoint`: the stored groups answered by the core's own handlers (here the loopback's stored states,
    as the state data source would read them)."""
    from admin.offline import CheckpointTransport

    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    offline = CheckpointTransport({g: s for g, s in coordinator._states.items() if s is not None})
    out, err = io.StringIO(), io.StringIO()
    assert main(["--checkpoint", "/nowhere", "--describe", "--group", "s", "--members"], transport=offline,
                out=out, err=err) == 0
    assert [line.split()[:2] for line in out.getvalue().strip().split("\n")] == [["GROUP", "CONSUMER-ID"], ["s", "m1"]]
    out = io.StringIO()
    assert main(["--checkpoint", "/nowhere", "--list"], transport=offline, out=out, err=err) == 0
    assert out.getvalue() == "s\n"


def test_a_stopped_querys_share_partition_state_batch_by_batch(coordinator):
    """`--describe --state-batches` with `--checkpoint`: each share-partition's durable state (state epoch, start
    offset, the gateway holding it) and its in-flight batches with their delivery state and count, as the share
    coordinator's state holds them; a share-partition without batches is one row."""
    from admin.offline import CheckpointTransport

    heartbeat(coordinator, "m1", 0, subscribed_topic_names=["foo"])
    t = coordinator.transport()
    taken = t.request("s", {"api": "ShareGrant", "request_id": "g", "group_id": "s", "holder": "gw-1", "partitions": [
        {"topic_id": FOO, "partition": p, "operation": "take", "epoch": -1} for p in (0, 1)]}, 5)["partitions"]
    epochs = {p["partition"]: p["epoch"] for p in taken}
    # partition 0: 45-53 delivered once, 45-49 accepted, the rest released; then 50-53 again: 53 rejected
    updates = [(0, 40, [(45, 49, 2, 1), (50, 53, 0, 1)]), (0, 40, [(50, 52, 0, 2), (53, 53, 4, 2)]), (1, 7, [])]
    for p, start, batches in updates:
        coordinator.handle("s", json.dumps({
            "api": "ShareUpdate", "request_id": f"u{p}-{start}-{len(batches)}", "group_id": "s", "holder": "gw-1",
            "partitions": [{"topic_id": FOO, "partition": p, "grant_epoch": epochs[p], "state_epoch": 1,
                            "start_offset": start, "state_batches": [
                                {"first_offset": f, "last_offset": last, "delivery_state": state,
                                 "delivery_count": count} for f, last, state, count in batches]}]}).encode())
    t.request("s", {"api": "ShareGrant", "request_id": "r", "group_id": "s", "holder": "gw-1", "partitions": [
        {"topic_id": FOO, "partition": 1, "operation": "release", "epoch": epochs[1]}]}, 5)
    offline = CheckpointTransport({g: s for g, s in coordinator._states.items() if s is not None})
    out, err = io.StringIO(), io.StringIO()
    assert main(["--checkpoint", "/nowhere", "--describe", "--group", "s", "--state-batches"], transport=offline,
                out=out, err=err) == 0, err.getvalue()
    rows = [line.split() for line in out.getvalue().strip().split("\n")]
    assert rows == [
        ["GROUP", "TOPIC", "PARTITION", "STATE-EPOCH", "START-OFFSET", "HOLDER", "FIRST-OFFSET", "LAST-OFFSET",
         "DELIVERY-STATE", "DELIVERY-COUNT"],
        ["s", "foo", "0", "1", "40", "gw-1", "45", "49", "ACKNOWLEDGED", "1"],
        ["s", "foo", "0", "1", "40", "gw-1", "50", "52", "AVAILABLE", "2"],
        ["s", "foo", "0", "1", "40", "gw-1", "53", "53", "ARCHIVED", "2"],
        ["s", "foo", "1", "1", "7", "-", "-", "-", "-", "-"]]
    out, err = io.StringIO(), io.StringIO()
    assert main(["--checkpoint", "/nowhere", "--describe", "--group", "nope", "--state-batches"], transport=offline,
                out=out, err=err) == 1
    assert "Share group 'nope' does not exist." in err.getvalue()
    code, _, err_text = cli(coordinator, "--describe", "--group", "s", "--state-batches")
    assert code == 1 and "[state-batches] reads a stopped query's state" in err_text
