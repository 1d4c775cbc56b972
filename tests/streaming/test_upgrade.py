"""`coordinator upgrade`: a checkpoint of release 0.1.0 (a state row per bucket: tests/fixtures/bucket-checkpoint,
made by tests/fixtures/make_bucket_checkpoint.py) becomes a checkpoint of this release, every group as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kafka import KafkaProducer

from state.errors import Errors
from streaming.recovery.checkpoint import CheckpointError, check, inspect
from streaming.recovery.upgrade import upgrade
from tests.support import protocol as p
from tests.support.coordinator import files_not_sparks, new_run

pytestmark = [pytest.mark.spark, pytest.mark.broker]

FIXTURES = Path(__file__).parent.parent / "fixtures"


def tree(path: Path) -> dict[str, bytes]:
    return {f.relative_to(path).as_posix(): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


@pytest.fixture
def release_0_1(spark, broker, tmp_path):
    """A copy of the fixture's checkpoint, and a run on its topics (the fixture's names: the checkpoint names them)."""
    old = tmp_path / "old-checkpoint"
    shutil.copytree(FIXTURES / "bucket-checkpoint", old)
    run = new_run(spark, broker, tmp_path, {
        "topic.requests": "requests", "topic.responses": "responses", "topic.records": "records",
        "topic.dead.letters": "dead-letters", "checkpoint.location": str(old)}, start=False)
    yield run, old
    run.close()


def rebuild_requests_topic(broker: str) -> None:
    """The requests the fixture's query read, at the same offsets (tansu keeps nothing across runs)."""
    producer = KafkaProducer(bootstrap_servers=broker)
    for line in (FIXTURES / "bucket-checkpoint.requests.jsonl").read_text().splitlines():
        record = json.loads(line)
        sent = producer.send("requests", key=record["key"].encode(), value=record["value"].encode(),
                             partition=record["partition"]).get(timeout=30)
        assert sent.offset == record["offset"], "the requests topic must be new"
    producer.close()


def test_a_checkpoint_of_release_0_1_is_refused_with_the_command_that_upgrades_it(spark, release_0_1):
    run, old = release_0_1
    with pytest.raises(CheckpointError, match=r"made by release 0\.1\.0.*`coordinator upgrade --from "):
        check(spark, run.props)


def test_the_upgrade_carries_every_group_over_and_leaves_the_old_checkpoint_alone(spark, broker, release_0_1,
                                                                                    tmp_path):
    run, old = release_0_1
    rebuild_requests_topic(broker)
    before = tree(old)
    new = tmp_path / "new-checkpoint"
    run.props["checkpoint.location"] = str(new)
    # pending-c's JoinGroup is in batch 13, planned but never committed: the new checkpoint's first batch reads it.
    assert upgrade(spark, run.props, str(old)) == 2
    assert tree(old) == before
    assert inspect(spark, str(new)).operator_name == "transformWithStateInPySparkExec"

    run.start()  # `coordinator run` on the new checkpoint
    members = json.loads((FIXTURES / "bucket-checkpoint.members.json").read_text())["stable-a"]
    for member_id in members["members"]:  # the same members, generation and sessions (restarted at the upgrade)
        assert run.request(p.heartbeat("stable-a", member_id, members["generation"]))["error_code"] == Errors.NONE
    assert p.committed(run.request(p.fetch("stable-a", {"orders": [0, 1]}))) == {("orders", 0): 42,
                                                                                 ("orders", 1): 7}
    assert p.committed(run.request(p.fetch("empty-b", {"orders": [2]}))) == {("orders", 2): 5}
    described = run.request({"api": "DescribeGroups", "group_id": "stable-a"})
    assert described["group_state"] == "Stable" and len(described["members"]) == 2
    assert run.request({"api": "DescribeGroups", "group_id": "pending-c"})["group_state"] == "Empty"
    assert files_not_sparks(str(new)) == []

    run.stop()
    run.props["state.operator"] = "applyInPandasWithState"
    with pytest.raises(CheckpointError, match="state.operator=transformWithState"):
        check(spark, run.props)
