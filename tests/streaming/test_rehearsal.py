"""A standby's rehearsal (`streaming.query.rehearse`) runs the query's plan and changes nothing: no responses,
records or dead letters, the real checkpoint untouched, and the requests still there for the real query."""

from __future__ import annotations

from pathlib import Path

import pytest

from state.errors import Errors
from streaming.query import rehearse

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_a_rehearsal_changes_nothing_and_the_real_query_answers_afterwards(coordinator):
    run = coordinator(start=False)
    heartbeat = {"api": "Heartbeat", "request_id": "before-takeover", "group_id": "g1", "member_id": "m",
                 "generation_id": 1}
    run.send(heartbeat)
    rehearse(run.spark, run.props)
    checkpoint = Path(run.props["checkpoint.location"])
    assert not checkpoint.exists() or not any(checkpoint.iterdir()), "the rehearsal used a scratch checkpoint"
    topics = run.topics
    for topic in (topics.responses, topics.records, topics.dead_letters):
        assert run.read(topic) == [], f"the rehearsal wrote to {topic}"
    assert not [q for q in run.spark.streams.active if q.name.endswith("-rehearsal")], "the rehearsal stopped"

    run.start()
    assert run.responses.wait_for("before-takeover")["error_code"] == Errors.UNKNOWN_MEMBER_ID
