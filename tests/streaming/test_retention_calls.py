"""The retention check calls only the groups it removes something of (issue 35), through the real query.

Kafka's coordinator checks every group every `offsets.retention.check.interval.ms`; here a group's check is its
timer, and a due timer is a call through the query. With every group's check at every instant, each check called
every group of the state store (about 60 s of state calls per 50,000 groups, every ten minutes by default). A group
is now called at the first check that removes something of it (`state.offsets.retention`)."""

from __future__ import annotations

import time

from tests.support.kafka import read_topic

GROUPS = 300
INTERVAL_MS = 2_000


def commit(group_id: str, **extra) -> dict:
    return {"api": "OffsetCommit", "request_id": f"commit-{group_id}", "group_id": group_id,
            "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 7}]}], **extra}


def requests(progress) -> int:
    """A batch's requests: its input rows but the timer rows that called buckets for their deadlines."""
    coordinator = progress.observedMetrics.get("coordinator")
    return progress.numInputRows - (coordinator["timer_rows"] if coordinator is not None else 0)


def test_a_check_calls_only_the_group_whose_offset_expires(coordinator, broker):
    """300 simple groups whose offsets expire in a week, and one whose v2 commit asked for a second: over three
    checks, only that one group is called (its offset expires and the group, left Empty without offsets, is
    deleted); before, each check called all 301."""
    # no topic-metadata publications (0: off): every batch after the commits is one the timers called
    run = coordinator({"offsets.retention.check.interval.ms": str(INTERVAL_MS),
                       "topic.metadata.refresh.interval.ms": "0"})
    run.send(*[commit(f"kept-{i}") for i in range(GROUPS)])
    run.send(commit("expiring", api_version=2, retention_time_ms=1_000))
    for group_id in [f"kept-{i}" for i in range(GROUPS)] + ["expiring"]:
        assert run.responses.wait_for(f"commit-{group_id}")["topics"][0]["partitions"][0]["error_code"] == 0
    run.wait(lambda: sum(requests(p) for p in run.query.recentProgress) >= GROUPS + 1 or None)  # reported
    committed = max(p.batchId for p in run.query.recentProgress if requests(p))
    deleted = (b'{"version":2,"group":"expiring"}', None)
    run.wait(lambda: deleted in [(r.key, r.value) for r in read_topic(broker, run.topics.records)])
    end = time.time() + 3 * INTERVAL_MS / 1000  # and three more checks
    run.wait(lambda: time.time() > end or None, timeout_s=60)
    later = [p for p in run.query.recentProgress if p.batchId > committed and "coordinator" in p.observedMetrics]
    assert later and not [p for p in later if requests(p)]
    called = [p.observedMetrics["coordinator"]["groups_called"] for p in later]
    print(f"groups called after the commits: {sum(called)} in {len(called)} batches ({[n for n in called if n]})")
    assert sum(called) == 1
    run.stop()
    tombstoned = {r.key for r in read_topic(broker, run.topics.records) if r.value is None}
    assert tombstoned == {b'{"version":2,"group":"expiring"}',
                          b'{"version":1,"group":"expiring","topic":"t","partition":0}'}


def test_a_query_started_with_a_shorter_retention_calls_every_group_once_and_expired_offsets_go(coordinator,
                                                                                                   broker):
    """Kafka applies `offsets.retention.minutes` at every check. Here a group's check is armed under the retention
    of the call that armed it, so a query restarted on its checkpoint with a shorter retention left every group's
    check at the old instant (a week on). Now the checkpoint's offset log records the retention, and the first new
    batch of a run with a shorter one calls every group once: 40 simple groups that committed two hours before
    lose their offsets (and, left without offsets, go) at the next check under a one-hour retention; 40 that
    committed now keep theirs and are not called again."""
    import json

    from tests.support.kafka import producer

    run = coordinator({"offsets.retention.check.interval.ms": str(INTERVAL_MS),
                       "topic.metadata.refresh.interval.ms": "0"})
    old, fresh = [f"old-{i}" for i in range(40)], [f"fresh-{i}" for i in range(40)]
    out = producer(broker)
    two_hours_ago = int(time.time() * 1000) - 2 * 3600 * 1000
    for group_id in old:  # arrived two hours ago: the commit counts from then
        out.send(run.topics.requests, key=group_id.encode(), value=json.dumps(commit(group_id)).encode(),
                 timestamp_ms=two_hours_ago)
    out.flush()
    run.send(*[commit(group_id) for group_id in fresh])
    for group_id in old + fresh:
        assert run.responses.wait_for(f"commit-{group_id}")["topics"][0]["partitions"][0]["error_code"] == 0
    run.wait(lambda: sum(requests(p) for p in run.query.recentProgress) >= len(old + fresh) or None)
    run.stop()
    assert not [r for r in read_topic(broker, run.topics.records) if r.value is None]  # a week's retention

    run.props["offsets.retention.minutes"] = "60"
    run.start()
    expected = {f'{{"version":1,"group":"{g}","topic":"t","partition":0}}'.encode() for g in old} | {
        f'{{"version":2,"group":"{g}"}}'.encode() for g in old}
    end = time.time() + 60  # 30 checks: a bound for a failing run, not a timing expectation
    run.wait(lambda: expected <= {r.key for r in read_topic(broker, run.topics.records) if r.value is None}
             or time.time() > end or None, timeout_s=120)
    settle = time.time() + 3 * INTERVAL_MS / 1000  # and three more checks
    run.wait(lambda: time.time() > settle or None, timeout_s=60)
    batches = [p for p in run.query.recentProgress if "coordinator" in p.observedMetrics]
    run.stop()
    tombstoned = {r.key for r in read_topic(broker, run.topics.records) if r.value is None}
    assert tombstoned == expected
    called = [p.observedMetrics["coordinator"]["groups_called"] for p in batches]
    print(f"groups called after the restart: {called}")
    assert called[0] == len(old + fresh)  # the first new batch: every group once
    assert sum(called[1:]) == len(old)  # then each expired group at its check, and no other
