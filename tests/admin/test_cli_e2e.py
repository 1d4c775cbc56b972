"""The admin CLI against the real coordinator and broker, on a group of real consumers: every command's output
checked, in the order an operator would use them (describe a live group, stop it, reset, delete)."""

from __future__ import annotations

import io
import json
import uuid

import pytest

from admin.cli import main
from tests.client.e2e_support import Worker, consumed, new_topic, produce, run, settled, wait_until  # noqa: F401

pytestmark = [pytest.mark.spark, pytest.mark.broker]


class Cli:
    def __init__(self, run) -> None:
        self.base = ["--bootstrap-server", run.bootstrap, "--requests-topic", run.topics.requests,
                     "--responses-topic", run.topics.responses, "--records-topic", run.topics.records]

    def __call__(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(self.base + list(args), out=out, err=err)
        print(f"$ groupcoord-consumer-groups {' '.join(args)}\n{out.getvalue()}{err.getvalue()}")
        return code, out.getvalue(), err.getvalue()

    def json(self, *args: str) -> list[dict]:
        code, out, _ = self(*args, "--output", "json")
        assert code == 0
        return json.loads(out)


def test_operator_session(run, tmp_path):
    cli = Cli(run)
    topic = new_topic(run.bootstrap, 3)
    group = f"orders-{uuid.uuid4().hex[:6]}"
    expected = produce(run.bootstrap, topic, 3, 30, "m")
    workers = [Worker(run, topic, group, f"app-{i}", partition_assignment_strategy=("range",)) for i in range(2)]
    try:
        wait_until(lambda: settled(workers, 3) and {v for _, v in consumed(workers)} >= expected, what="consumed")

        def caught_up() -> bool:
            rows = cli.json("--describe", "--group", group)
            return len(rows) == 3 and all(r["lag"] == 0 for r in rows)

        wait_until(caught_up, what="offsets committed")
        assert group in cli("--list")[1].split()

        code, out, _ = cli("--describe", "--group", group)
        assert code == 0
        assert out.splitlines()[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                               "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
        rows = cli.json("--describe", "--offsets", "--group", group)
        members = {w.consumer.member.generation.member_id for w in workers}
        assert [(r["partition"], r["current_offset"], r["log_end_offset"]) for r in rows] == [(0, 10, 10), (1, 10, 10),
                                                                                                 (2, 10, 10)]
        assert {r["consumer_id"] for r in rows} == members

        code, out, _ = cli("--describe", "--members", "--verbose", "--group", group)
        assert out.splitlines()[1].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        rows = cli.json("--describe", "--members", "--verbose", "--group", group)
        assert sorted(r["num_partitions"] for r in rows) == [1, 2]
        assert {r["client_id"] for r in rows} == {"app-0", "app-1"}

        (state,) = cli.json("--describe", "--state", "--group", group)
        assert (state["state"], state["assignment_strategy"], state["num_members"]) == ("Stable", "range", 2)

        code, _, err = cli("--reset-offsets", "--group", group, "--all-topics", "--to-earliest", "--execute")
        assert code == 1 and "inactive, but the current state is Stable" in err
    finally:
        for w in workers:
            w.close()

    wait_until(lambda: cli.json("--describe", "--state", "--group", group)[0]["state"] == "Empty", what="Empty")
    code, out, err = cli("--describe", "--group", group)
    assert code == 0 and f"Consumer group '{group}' has no active members." in err

    dry = cli.json("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert [r["new_offset"] for r in dry] == [0, 0, 0]
    assert [r["current_offset"] for r in cli.json("--describe", "--group", group)] == [10, 10, 10]  # dry run
    cli("--reset-offsets", "--group", group, "--all-topics", "--shift-by", "-3", "--execute")
    cli("--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--to-offset", "99", "--execute")
    assert [r["current_offset"] for r in cli.json("--describe", "--group", group)] == [10, 7, 7]  # 99 clamped

    code, out, _ = cli("--delete-offsets", "--group", group, "--topic", f"{topic}:1")
    assert code == 0 and "Successful" in out
    assert [r["partition"] for r in cli.json("--describe", "--group", group)] == [0, 2]

    picture = tmp_path / "history.png"
    code, out, _ = cli("--history", "--group", group, "--picture", str(picture))
    assert code == 0 and picture.read_bytes()[:4] == b"\x89PNG"
    history = cli.json("--history", "--group", group)
    assert {r["client_id"] for r in history} >= {"app-0", "app-1"}
    assert history[-1]["state"] == "Empty"
    assert [r["generation"] for r in history] == sorted(r["generation"] for r in history)

    code, out, _ = cli("--delete", "--group", group)
    assert code == 0 and f"Deletion of requested consumer groups ('{group}') was successful." in out
    code, _, err = cli("--describe", "--group", group)
    assert code == 1 and f"Consumer group '{group}' does not exist." in err
