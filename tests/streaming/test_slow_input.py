"""The query, whole, with its input slow to read (issue 37): a broker of its own that is paused (SIGSTOP) again and
again for seconds while requests keep arriving, so that the query's reads, its plans of the next batch and its
writes all meet a broker that does not answer. Under sustained load the query once stopped on such a wait
(`TimeoutError: ... not readable within 120.0 s`); it must wait, carry on when the broker answers again, and lose
nothing: every request answered once the broker is back, every commit kept, the query still running.

The reader on its own is covered by tests/streaming/test_source_reader.py (a range slow to become readable)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from streaming.kafka_io.embedded import start_broker
from tests.support.coordinator import new_run
from tests.support.protocol import commit, committed, fetch

GROUPS = 4
PAUSES, PAUSE_S, BETWEEN_S = 5, 3.0, 1.5


@pytest.fixture
def paused_broker():
    """A tansu broker of the test's own (the session's is shared), and its pid to pause; resumed and stopped after."""
    own = start_broker()
    try:
        yield own
    finally:
        os.kill(own.process.pid, signal.SIGCONT)
        own.stop()


def test_the_query_waits_out_a_broker_that_stops_answering_and_answers_every_request_after(spark, tmp_path,
                                                                                          paused_broker):
    run = new_run(spark, paused_broker.bootstrap_servers, tmp_path)
    try:
        first = run.request({"request_id": "warm", **commit("g0", "", -1, {("orders", 0): 0})})
        assert [p["error_code"] for t in first["topics"] for p in t["partitions"]] == [0]
        sent: list[dict] = []
        stop = threading.Event()

        def send() -> None:
            i = 0
            while not stop.is_set():
                request = {"request_id": f"slow-{i}", **commit(f"g{i % GROUPS}", "", -1, {("orders", i % 3): i})}
                run.send(request)  # waits out a pause in its flush, as any producer would
                sent.append(request)
                i += 1
                time.sleep(0.02)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        pid = paused_broker.process.pid
        for _ in range(PAUSES):
            time.sleep(BETWEEN_S)
            os.kill(pid, signal.SIGSTOP)
            time.sleep(PAUSE_S)
            os.kill(pid, signal.SIGCONT)
        time.sleep(BETWEEN_S)
        stop.set()
        sender.join(120)
        assert not sender.is_alive()

        answers = [run.responses.wait_for(r["request_id"], timeout_s=600) for r in sent]
        assert len(sent) > PAUSES
        assert [a["request_id"] for a in answers
                if [p["error_code"] for t in a["topics"] for p in t["partitions"]] != [0]] == []
        last: dict[str, dict[tuple[str, int], int]] = {}
        for r in sent:
            p = r["topics"][0]["partitions"][0]
            last.setdefault(r["group_id"], {})[("orders", p["partition_index"])] = p["committed_offset"]
        for group, offsets in last.items():
            kept = committed(run.request(fetch(group, {"orders": [0, 1, 2]})))
            assert {tp: o for tp, o in kept.items() if tp in offsets} == offsets
        assert run.query is not None and run.query.isActive and run.query.exception() is None
    finally:
        run.close()
