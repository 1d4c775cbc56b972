"""A rebuild of a population (issue 35), through the real query: 2,000 groups of 10 members with an offset each, in
the records topic as the job writes them, rebuilt into a new checkpoint. Every group comes back as the core loads it
from its records: the checkpoint's rows (read offline, as `groupcoord-consumer-groups --checkpoint` reads them) are
byte for byte what `state.api.load_group` makes of the records topic at the time the query loaded the group
(members, generation, leader, assignments, offsets, and every session deadline restarted at that time)."""

from __future__ import annotations

import json
import time

import pytest

from state.batch import decode_state, load_group, step_group
from state.config import CoordinatorConfig
from state.classic.records import group_record
from state.records import offset_record
from streaming.group_stores.state_reader import stored_groups
from streaming.recovery.rebuild import Latest, load_requests, rebuild
from tests.state.context import GroupContext
from tests.support.coordinator import lease_times
from tests.support.kafka import producer, read_topic

GROUPS = 2_000
MEMBERS = 10
RETENTION_CHECK_NEVER_MS = 10**12
"""A retention-check interval whose next instant (a multiple of it since the epoch) is in 2033."""


def population(**join: int) -> dict[str, list[tuple[bytes, bytes]]]:
    """group_id -> its records (a Stable group of MEMBERS with one committed offset per member), as the job writes
    them: the same group under GROUPS ids. `join`: the members' JoinGroup settings (`session=`)."""
    template = GroupContext(group_id="template")
    leader = template.stable_group(MEMBERS, **join)[0]
    template.commit({("orders", i): 100 + i for i in range(MEMBERS)}, leader, template.group.generation)
    group = template.group
    out = {}
    for g in range(GROUPS):
        group.group_id = f"g{g}"
        out[group.group_id] = [group_record(group, persist=True).encode()] + [
            offset_record(group.group_id, t, p, o).encode() for (t, p), o in sorted(group.offsets.items())]
    return out


def test_a_rebuilt_population_is_every_group_as_its_records_load_it(coordinator, spark, broker):
    run = coordinator(start=False)
    groups = population()
    out = producer(broker)
    for records in groups.values():
        for key, value in records:
            out.send(run.topics.records, key=key, value=value)
    out.flush()
    client = {"bootstrap_servers": broker}
    run.props["starting.offsets"] = rebuild(client, run.topics.records, run.topics.requests, "confluent")
    run.start()
    run.wait(lambda: sum(p.numInputRows for p in run.query.recentProgress) >= GROUPS or None, timeout_s=300)
    run.stop()

    loaded = stored_groups(spark, run.props["checkpoint.location"])
    # besides the job's own row (the topics the consumer groups' assignors see), exactly the groups written
    assert sorted(g for g in loaded if "topic-metadata" not in g) == sorted(groups)
    loaded = {g: loaded[g] for g in groups}
    # The reference: each group's load as the rebuild published it, stepped by the core offline at the time the
    # query stepped it (the stored clock) and with its arrival time, as the query passes them.
    starting = json.loads(run.props["starting.offsets"])[run.topics.requests]
    loads = {r.key.decode(): r for r in read_topic(broker, run.topics.requests)
             if r.offset >= starting[str(r.partition)] and r.value.startswith(b'{"api":"LoadGroup"')}
    assert sorted(loads) == sorted(groups)
    config = CoordinatorConfig.from_properties(run.props)

    def offline(group_id: str, clock_ms: int):
        load = loads[group_id]
        return step_group(group_id, None, [load.value], clock_ms, config, request_times_ms=[load.timestamp]).stored(
            None)

    differ = [g for g, stored in loaded.items() if stored != offline(g, decode_state(stored).clock_ms)]
    assert differ == []
    # ... and that is the group written: Stable, its members and generation, an offset per member, fresh sessions.
    first = decode_state(loaded["g0"])
    written = decode_state(load_group("g0", groups["g0"], first.clock_ms, config))
    assert first.state.value == "Stable" and len(first.members) == MEMBERS
    assert (first.generation, sorted(first.members), first.leader) == (
        written.generation, sorted(written.members), written.leader)
    assert {tp: o.offset for tp, o in first.offsets.items()} == {("orders", i): 100 + i for i in range(MEMBERS)}
    sessions = {first.timers[f"heartbeat:{m}"] for m in first.members}
    assert len(sessions) == 1 and sessions.pop() > loads["g0"].timestamp  # sessions restarted at the load


def test_loads_published_before_a_retention_check_leave_nothing_due(coordinator, spark, broker):
    """A million-member rebuild publishes its loads a minute or more before the query steps the last of them. Loads
    that arrived before a retention-check instant (every offsets.retention.check.interval.ms) and were stepped after
    it once left that check already due, and the batch after the loading one stepped every such group again
    (issue 35). Here the loads arrived one interval and more before the query runs: every group is stored with its
    next deadline after the time it was loaded, so only requests and real deadlines call it again."""
    run = coordinator(start=False)
    config = CoordinatorConfig.from_properties(run.props)
    groups = dict(list(population().items())[:200])
    loads = load_requests({key: Latest(value, 0, offset) for offset, (key, value)
                           in enumerate(r for records in groups.values() for r in records)})
    arrived = int(time.time() * 1000) - config.offsets_retention_check_interval_ms - 60_000
    out = producer(broker)
    for group_id, load in loads.items():
        out.send(run.topics.requests, key=group_id.encode(), value=load, timestamp_ms=arrived)
    out.flush()
    run.start()
    run.wait(lambda: sum(p.numInputRows for p in run.query.recentProgress) >= len(groups) or None, timeout_s=300)
    run.stop()

    loaded = {g: decode_state(s) for g, s in stored_groups(spark, run.props["checkpoint.location"]).items()
              if g in groups}
    assert sorted(loaded) == sorted(groups)
    due = [g for g, group in loaded.items() if min(group.timers.values()) <= group.clock_ms]
    assert due == []


@pytest.mark.timeout(1200)
@pytest.mark.xdist_group("driver-jvm")  # tests/conftest.py
def test_a_takeover_after_kill_9_brings_back_a_population_byte_for_byte(spark, broker, tmp_path):
    """Issue 35's takeover with a preloaded population: 2,000 groups of 10 members rebuilt by `coordinator run
    --rebuild-from-records`, a standby on its checkpoint, the active driver killed -9. Once the standby answers, every
    group in the checkpoint is byte for byte what it was before the kill, and what the core makes of its load from
    the records topic at the time the query loaded it (members, generation, offsets, every deadline): the
    takeover lost nothing and changed nothing (no group was due: the members' sessions are 10 minutes, so none
    expires while the test runs, and no retention check comes). The rebuild, finding the lease free, published every
    load before it took the lease (tests/streaming/test_lease.py has the rebuild that finds it held)."""
    from client import protocol
    from deploy.drills.fleet import Wire
    from deploy.drills.harness import JobProcess, create_topics, job_properties

    groups = population(session=600_000)
    # Retention checks come at multiples of the interval since the epoch (`state.handling.timers`): at the default
    # 10 minutes, a takeover that crossed one called every group in the standby's resumed first batch, which
    # restarts every session, as a failover does in Kafka (the checkpoint then differed in every group's deadlines).
    props = job_properties(broker, tmp_path / "checkpoint", overrides={
        "max.requests.per.trigger": "50000", "offsets.retention.check.interval.ms": str(RETENTION_CHECK_NEVER_MS)})
    create_topics(props)
    out = producer(broker)
    for records in groups.values():
        for key, value in records:
            out.send(props["topic.records"], key=key, value=value)
    out.flush()
    active = JobProcess(props, tmp_path / "active", extra_args=["--rebuild-from-records"])
    standby = JobProcess(props, tmp_path / "standby")
    wire = None
    try:
        active.start().wait_running()
        standby.start().wait_standby()
        deadline = time.monotonic() + 600
        while sum(m.get("requests_in") or 0 for m in active.metrics()) < GROUPS:
            assert time.monotonic() < deadline and active.alive(), active.log_text()[-3000:]
            time.sleep(0.5)
        before = stored_groups(spark, props["checkpoint.location"], groups)
        assert sorted(before) == sorted(groups)
        active.kill()
        wire = Wire(broker, props["topic.requests"], props["topic.responses"])
        request_id = wire.send(protocol.describe_group("not-in-the-population"))
        wire.flush()
        deadline = time.monotonic() + 600
        while not any(json.loads(raw).get("request_id") == request_id for raw in wire.poll(100)):
            assert time.monotonic() < deadline and standby.alive(), standby.log_text()[-3000:]
        assert "took the lease" in standby.log_text()
    finally:
        if wire is not None:
            wire.close()
        active.kill()
        standby.stop()
    after = stored_groups(spark, props["checkpoint.location"], groups)
    assert [g for g in groups if after.get(g) != before[g]] == []
    # the shared broker holds thousands of request records by then: the timeout is an upper bound, not a speed
    load_records = [r for r in read_topic(broker, props["topic.requests"], timeout_s=120)
                    if r.value.startswith(b'{"api":"LoadGroup"')]
    leased = lease_times(broker, props, active.proc.pid)
    assert len(load_records) == GROUPS and leased, (len(load_records), leased)
    assert max(r.timestamp for r in load_records) <= min(leased), \
        "the rebuild published its loads after it took the lease"
    assert "lost the lease" not in active.log_text()

    config = CoordinatorConfig.from_properties(props)
    loads = {r.key.decode(): r for r in load_records}
    assert sorted(loads) == sorted(groups)

    def offline(group_id: str, clock_ms: int):
        load = loads[group_id]
        return step_group(group_id, None, [load.value], clock_ms, config, request_times_ms=[load.timestamp]).stored(
            None)

    assert [g for g, stored in after.items() if stored != offline(g, decode_state(stored).clock_ms)] == []
    first = decode_state(after["g0"])
    assert first.state.value == "Stable" and len(first.members) == MEMBERS
    assert {tp: o.offset for tp, o in first.offsets.items()} == {("orders", i): 100 + i for i in range(MEMBERS)}
