"""Drill: kill -9 the driver at random points under client load, restart from the checkpoint, check nothing broke.

    python -m deploy.drills.kill_driver [--kills 3] [--points random,mid-rebalance,mid-commit] [--groups 4]
        [--members 3] [--session-timeout-ms 60000] [--seed 7] [--bootstrap-servers HOST:PORT] [--workdir DIR]
        [--standby [--standby-kills N]] [--consumer-group-members 3]

A fleet of simulated consumers (deploy/drills/fleet.py) joins, syncs, heartbeats and commits through the job. At
each kill point the job's whole process group gets SIGKILL and is started again on the same checkpoint right away,
while the clients keep sending. Kill points:
- `random`: after a random 2-8 s of load;
- `mid-rebalance`: a new member joins a group; the kill comes while JoinGroup/SyncGroup requests are unanswered and
  a micro-batch is in flight (offsets logged, not committed);
- `mid-commit`: while an OffsetCommit is unanswered and a micro-batch is in flight.
At the end the clients stop, every request must get its answer, and OffsetFetch must return every acknowledged
commit. Checks: no committed offset lost, generations never go back, every request answered, duplicates only
byte-identical, and sessions not expired by the outage itself (members heartbeat throughout; Kafka restarts their
session timers when a coordinator loads the group).

With `--consumer-group-members N`, a KIP-848 consumer group runs beside the fleet through the whole drill: N
unmodified librdkafka consumers (`group.protocol=consumer`) through a gateway in front of the job's topics
(deploy/drills/consumer_group.py); they must keep their partitions and go on consuming across every kill, their
commits acknowledged again after it, and no partition owned by two of them at once.

With `--standby`, a second driver waits on the same checkpoint and takes over at each kill, the killed one coming
back as the next standby; with `--standby-kills N` only the first N kills, and the ones after restart the killed
driver in place: one run covers both ways back.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from deploy.drills.consumer_group import ConsumerGroupLoad
from deploy.drills.fleet import Fleet
from deploy.drills.harness import Checkpoint, Environment, JobProcess, log
from deploy.drills.verdict import Verdict

POINTS = ("random", "mid-rebalance", "mid-commit")


def wait_for_kill_point(point: str, fleet: Fleet, checkpoint: Checkpoint, rng: random.Random,
                        timeout_s: float) -> str:
    """Drive the load until `point` is reached (or `timeout_s`); return what the moment looked like."""
    if point == "random":
        fleet.run_for(rng.uniform(2, 8))
    else:
        if point == "mid-rebalance":
            group = rng.choice(sorted({m.group for m in fleet.members}))
            fleet.add_member(group)
            condition = fleet.rebalancing
        else:
            condition = fleet.commit_in_flight
        if not fleet.run_until(lambda: condition() and checkpoint.batch_in_flight(), timeout_s):
            fleet.run_until(condition, 5)
    return (f"batch in flight={checkpoint.batch_in_flight()} rebalancing={fleet.rebalancing()} "
            f"commit in flight={fleet.commit_in_flight()}")


def run(points: list[str], groups: int, members: int, session_timeout_ms: int, seed: int, workdir: Path,
        bootstrap: str | None = None, start_timeout_s: float = 300.0, standby: bool = False,
        consumer_group_members: int = 0, standby_kills: int | None = None) -> Verdict:
    rng = random.Random(seed)
    # The consumer group's assignor sees a topic created for it within a second (the default is 5 s).
    env = Environment(workdir, bootstrap,
                      props={"topic.metadata.refresh.interval.ms": "1000"} if consumer_group_members else None)
    # With a standby, a second driver on the same checkpoint waits, warm, until the active one's lease lapses
    # (streaming/recovery/lease.py); after each kill it takes over, and the killed one comes back as the standby.
    spare = JobProcess(env.props, env.workdir / "standby", env.job.spark_conf) if standby else None
    # How many kills (the first ones) the standby takes over; after those, the killed driver restarts in place.
    taken_over = len(points) if standby_kills is None else standby_kills
    fleet = None
    consumers = None
    try:
        env.job.start()
        env.job.wait_running(start_timeout_s)
        log(f"job running on {env.bootstrap}, checkpoint {env.checkpoint}")
        if spare is not None:
            spare.start().wait_standby(start_timeout_s)
            log("standby ready")
        fleet = Fleet(env.wire(), [f"g{i}" for i in range(groups)], members, session_timeout_ms=session_timeout_ms,
                      rebalance_timeout_ms=session_timeout_ms, heartbeat_interval_ms=1000,
                      commit_interval_ms=1000, seed=seed)
        if not fleet.run_until(fleet.all_stable, start_timeout_s):
            log("warning: not every member became Stable before the first kill")
        if consumer_group_members:
            consumers = ConsumerGroupLoad(env.bootstrap, env.props, env.workdir, consumer_group_members)
            if fleet.run_until(consumers.balanced, start_timeout_s):
                consumers.mark_formed()
                fleet.run_for(2)  # the members consume and commit before the first kill
            else:
                log("warning: the consumer group did not form before the first kill")
        killed: list[float] = []
        checkpoint = Checkpoint(env.checkpoint)
        recover: list[float] = []
        expired_before = 0
        expired_by_outage = 0
        notes = []
        for i, point in enumerate(points):
            moment = wait_for_kill_point(point, fleet, checkpoint, rng, timeout_s=60)
            killed_at = time.monotonic()
            killed.append(killed_at)
            env.job.kill()
            takeover = spare is not None and i < taken_over
            then = "the standby takes over" if takeover else "restarting"
            log(f"kill {i + 1}/{len(points)} ({point}): {moment}; {then}")
            notes.append(f"kill {i + 1} ({point}): {moment}")
            expired_before = len(fleet.ledger.expired_while_stable)
            if takeover:
                env.job, spare = spare, env.job
            else:
                env.job.start()
            # Recovered = the first answer to a request sent after the kill.
            recovered = fleet.run_until(
                lambda: any(fleet.ledger.sent[r].at > killed_at for r in fleet.ledger.first_at
                            if fleet.ledger.first_at[r] > killed_at), start_timeout_s)
            recover.append(time.monotonic() - killed_at if recovered else float("nan"))
            log(f"recovered in {recover[-1]:.1f} s")
            if takeover and i + 1 < min(len(points), taken_over):
                # After the measurement, so the new standby's cold start does not share the CPU with the takeover;
                # the members keep heartbeating meanwhile.
                spare.start()
                fleet.run_until(lambda: spare.is_standby() or not spare.alive(), start_timeout_s)
                spare.wait_standby(0)  # its own errors: the job exited, or never stood by
            # Give the members a session timeout's worth of load so an expiry caused by the outage shows up.
            fleet.run_for(min(10.0, session_timeout_ms / 1000))
            expired_by_outage += len(fleet.ledger.expired_while_stable) - expired_before
        fleet.run_until(fleet.all_stable, 60)
        if not fleet.quiesce(start_timeout_s):
            log("warning: some requests still unanswered after the quiet period")
        committed = fleet.fetch_committed(120)
        verdict = Verdict.from_fleet("kill -9 the driver: " + ", ".join(points), fleet, committed)
        if consumers is not None:
            last = killed[-1] if killed else 0.0
            # the members' commits after the last kill go through the driver now running
            fleet.run_until(lambda: all(any(t > last for t in c.committed) for c in consumers.logs), 60)
            group_checks, group_notes = consumers.checks(killed)
            verdict.checks.update(group_checks)
            verdict.notes += group_notes
        verdict.time_to_recover_s = recover
        verdict.sessions_expired_by_outage = expired_by_outage
        verdict.notes = notes + verdict.notes
        return verdict
    finally:
        if consumers is not None:
            consumers.close()  # while a driver still answers their leave
        if fleet is not None:
            fleet.wire.close()
        if spare is not None:
            spare.stop()
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.drills.kill_driver", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--points", default=",".join(POINTS), help="kill points, cycled: " + ", ".join(POINTS))
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--session-timeout-ms", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bootstrap-servers", help="a Kafka cluster; default: an embedded tansu broker")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--standby", action="store_true",
                        help="run a standby driver on the same checkpoint, which takes over at each kill")
    parser.add_argument("--standby-kills", type=int,
                        help="with --standby: the standby takes over the first N kills only, the rest restart")
    parser.add_argument("--consumer-group-members", type=int, default=0,
                        help="also run a KIP-848 consumer group of this many librdkafka consumers through a gateway")
    parser.add_argument("--json", action="store_true", help="also print the verdict as one JSON line")
    args = parser.parse_args(argv)
    cycle = [p.strip() for p in args.points.split(",") if p.strip()]
    if any(p not in POINTS for p in cycle):
        parser.error(f"--points: choose from {POINTS}")
    points = [cycle[i % len(cycle)] for i in range(args.kills)]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="drill-kill-driver-"))
    verdict = run(points, args.groups, args.members, args.session_timeout_ms, args.seed, workdir,
                  args.bootstrap_servers, standby=args.standby,
                  consumer_group_members=args.consumer_group_members, standby_kills=args.standby_kills)
    print(verdict.table())
    if args.json:
        print(verdict.to_json())
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
