"""`groupcoord-consumer-groups --checkpoint PATH`: a stopped query's groups read from its checkpoint agree with what
the running coordinator answered, for either state operator."""

from __future__ import annotations

import base64
import io

import pytest

from admin.cli import main
from assignors.consumer_protocol import Assignment, encode_assignment
from state.errors import Errors
from streaming.query import OPERATORS
from tests.client.e2e_support import new_topic, produce
from tests.support import protocol as p

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("operator", OPERATORS)
def test_the_checkpoint_agrees_with_the_running_coordinator(coordinator, operator):
    run = coordinator({"state.operator": operator})
    topic = new_topic(run.bootstrap, 3)
    produce(run.bootstrap, topic, 3, 12, "m")
    session = 300_000  # the member must still be there when the query stops
    leader = run.request(p.join("offline", session_timeout_ms=session))["member_id"]
    joined = run.request(p.join("offline", leader, session_timeout_ms=session))
    generation = joined["generation_id"]
    mine = base64.b64encode(encode_assignment(Assignment(((topic, (0, 1, 2)),)))).decode()
    assert run.request(p.sync("offline", leader, generation, {leader: mine}))["error_code"] == Errors.NONE
    run.request(p.commit("offline", leader, generation, {(topic, 0): 4, (topic, 1): 1}))
    run.request(p.commit("simple", "", -1, {(topic, 2): 3}))  # a group without members: Empty
    # a transaction's offset of partition 2, pending: no marker ends it (as the gateway writes a TxnOffsetCommit,
    # here outside a transaction)
    pending = run.request({"api": "TxnOffsetCommit", "group_id": "offline", "transactional_id": "tx-offline",
                           "producer_id": 4242, "producer_epoch": 0, "generation_id": generation,
                           "member_id": leader, "topics": [{"name": topic, "partitions": [
                               {"partition_index": 2, "committed_offset": 9}]}]})
    assert [q["error_code"] for t in pending["topics"] for q in t["partitions"]] == [Errors.NONE]

    live_base = ["--bootstrap-server", run.bootstrap, "--requests-topic", run.topics.requests,
                 "--responses-topic", run.topics.responses]
    questions = [("--describe", "--group", "offline"), ("--describe", "--members", "--verbose", "--group", "offline"),
                 ("--describe", "--group", "simple"), ("--list", "--state"), ("--describe", "--all-groups")]
    live = [cli(*live_base, *q) for q in questions]
    assert "offline" in live[3][1] and " 4 " in live[0][1]
    header, *partitions = live[0][1].split("\n")[1:4 + 1]
    assert header.split()[-1] == "PENDING-TRANSACTION"  # shown where a group has pending offsets
    assert [row.split()[2] for row in partitions if row.split()[-1] == "yes"] == ["2"]
    assert "PENDING-TRANSACTION" not in live[2][1]
    run.stop()

    checkpoint = ["--checkpoint", run.props["checkpoint.location"], "--bootstrap-server", run.bootstrap]
    assert [cli(*checkpoint, *q) for q in questions] == live

    code, out, _ = cli("--checkpoint", run.props["checkpoint.location"], "--describe", "--group", "offline")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [(r[2], r[3], r[4], r[5], r[-1]) for r in rows] == [
        ("0", "4", "-", "-", "-"), ("1", "1", "-", "-", "-"),
        ("2", "-", "-", "-", "yes")]  # no broker asked: log ends unknown; partition 2's transaction pending
    code, _, err = cli("--checkpoint", run.props["checkpoint.location"], "--delete", "--group", "offline")
    assert code == 1 and "takes only --list or --describe" in err


def test_a_path_that_holds_no_checkpoint_is_an_error_not_an_empty_answer(spark, tmp_path):
    missing = tmp_path / "no" / "such" / "path"
    assert cli("--checkpoint", str(missing), "--list") == (1, "", f"\nError: checkpoint {missing} does not exist\n")
    (tmp_path / "tansu.log").write_text("a directory with files, but no query ever ran on it")
    code, out, err = cli("--checkpoint", str(tmp_path), "--describe", "--group", "x")
    assert (code, out) == (1, "")
    assert err == f"\nError: {tmp_path} is not a Spark checkpoint: it has no metadata file\n"
