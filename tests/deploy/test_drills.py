"""Short versions of the recovery drills in deploy/drills: each runs the job as its own process (so it can be
kill -9'd), prints its verdict table, and the test asserts the correctness verdicts (nothing lost, no non-identical
duplicates, no offset lost, generations never back), never timings.
"""

from __future__ import annotations

import pytest

from deploy.drills import broker_restart, checkpoint_lost, kill_driver, share_group, transactions

# Generous: on a 2-core machine shared with other Spark jobs one JVM start can take minutes.
pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.timeout(1500),
              pytest.mark.xdist_group("driver-jvm")]  # tests/conftest.py


def _assert_correct(verdict) -> None:
    print(verdict.table())
    failed = [name for name, ok in verdict.correctness().items() if not ok]
    assert not failed, f"{failed}\n{verdict.table()}"


def test_checkpoint_lost_is_rebuilt_from_the_records_topic(broker, tmp_path):
    assert checkpoint_lost.rebuild_entry_point() == "flag"
    _assert_correct(checkpoint_lost.run(groups=2, members=2, workdir=tmp_path, bootstrap=broker))


def test_broker_restarted_empty_is_reported_as_data_loss(tmp_path):
    verdict = broker_restart.run(True, tmp_path, report_timeout_s=45)
    print(verdict.table())
    assert verdict.checks.get("data loss reported in the job's log"), verdict.table()
    _assert_correct(verdict)


def test_a_standby_takes_over_a_kill_minus_nine_and_a_restart_the_next_losing_nothing(broker, tmp_path):
    """The driver is killed -9 mid-rebalance and a standby takes over; then the new active one is killed -9
    mid-commit and restarts from the checkpoint. Also a KIP-848 consumer group (3 librdkafka consumers through a
    gateway): across both it keeps its members and their partitions, goes on consuming and committing, and no
    partition is owned by two members at once (`_assert_correct` checks those lines of the verdict)."""
    verdict = kill_driver.run(["mid-rebalance", "mid-commit"], groups=1, members=2, session_timeout_ms=30000, seed=5,
                              workdir=tmp_path, bootstrap=broker, standby=True, standby_kills=1,
                              consumer_group_members=3)
    _assert_correct(verdict)
    assert verdict.requests_sent > 0 and verdict.answered == verdict.requests_sent
    assert verdict.sessions_expired_by_outage == 0, verdict.table()
    assert len(verdict.time_to_recover_s) == 2, verdict.table()
    standby_log = (tmp_path / "standby" / "job-1.log").read_text()
    assert "standby: another driver runs the query" in standby_log
    assert "took the lease" in standby_log and "group coordinator running" in standby_log, \
        "the standby, not a restart, answered after the first kill"
    restarted_log = (tmp_path / "standby" / "job-2.log").read_text()
    assert "group coordinator running" in restarted_log, "the killed active driver was not restarted in place"


def test_share_consumers_across_a_standby_takeover_a_gateway_kill_and_a_rebuild(broker, tmp_path):
    """Issue 34: three unmodified confluent-kafka ShareConsumers (explicit mode: accept, reject and release on
    purpose) consume and acknowledge while the driver is killed -9 (a standby takes over) and then the gateway holding
    the share-partitions is killed -9; then the members close, the query is rebuilt from the records topic on a new
    checkpoint, and they consume the rest against it. Nothing accepted is delivered again after its acknowledgement
    was answered, nothing is lost, no count falls or passes the limit, and the rebuilt query holds the same
    share-partition state (start offset, state epoch, state batches with their delivery counts) as the query that
    survived the kills."""
    checks, notes = share_group.run(["driver", "gateway"], members=3, partitions=2, records=400, lease_ms=10_000,
                                    workdir=tmp_path, bootstrap=broker, standby=True, rebuild=True)
    report = "\n".join([*(f"{'PASS' if ok else 'FAIL'} {name}" for name, ok in checks.items()), *notes])
    print(report)
    assert "a rebuild from the records topic holds the same share-partition state" in checks, report
    assert "the standby, not a restart, took over at each driver kill" in checks, report
    assert all(checks.values()), report


def test_exactly_once_across_a_standby_takeover_gateway_kills_and_a_rebuild(broker, tmp_path):
    """Issue 32: an unmodified confluent-kafka exactly-once application (consume, produce, send offsets, commit,
    through a gateway) while the driver is killed -9 (a standby takes over) and then the gateway twice (started
    again at the same address), input still arriving: every input offset is in exactly one committed transaction's
    output (the output's markers read raw), the committed offset is the input's end, and after the query is rebuilt
    from the records topic on a new checkpoint, the same. (The application does not re-bootstrap: librdkafka 2.16's
    re-bootstrap, when its one broker is down, can leave send_offsets_to_transaction waiting for ever; see
    deploy/drills/eos_app.py.)"""
    verdict = transactions.run(tmp_path, records=1000, bootstrap=broker, rate=20.0, gateway_kills=2)
    _assert_correct(verdict)  # the drill's own checks included
    assert any("after the rebuild" in name for name in verdict.checks), verdict.table()
    assert len(verdict.time_to_recover_s) == 3, verdict.table()  # the driver's kill and the gateway's two
