"""Drill: the checkpoint is lost; rebuild the coordinator from the records topic, as Kafka loads a coordinator
from `__consumer_offsets`.

    python -m deploy.drills.checkpoint_lost [--groups 3] [--members 2] [--workdir DIR]

A fleet forms groups and commits offsets; the clients go quiet; the driver is killed and its checkpoint directory
deleted. The job is started again on a new, empty checkpoint with the build's rebuild entry point
(`coordinator rebuild`, or `coordinator run --rebuild-from-records`), which must load every group from the records
topic. Checks, as Kafka's load promises: every group comes back Stable (with its members, generation and leader)
or Empty; every acknowledged commit is returned by OffsetFetch; the members carry on with their member ids and
generation (their heartbeats succeed: sessions restart on load), and the control-topic requests answered before the
loss are not answered again with different bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from client import protocol as wire
from deploy.drills.fleet import Fleet
from deploy.drills.harness import ROOT, Environment, cli_supports, log
from deploy.drills.verdict import Verdict

REBUILD_FLAG = "--rebuild-from-records"


def rebuild_entry_point() -> str | None:
    """'subcommand', 'flag', or None when this build has no way to rebuild."""
    if cli_supports("rebuild", needle="records"):
        return "subcommand"
    if cli_supports("run", needle=REBUILD_FLAG):
        return "flag"
    return None


def describe_all(fleet: Fleet, groups: list[str], timeout_s: float) -> dict[str, dict]:
    rids = {fleet.send_admin(wire.describe_group(g)): g for g in groups}
    fleet.run_until(lambda: all(r in fleet.ledger.copies for r in rids), timeout_s)
    return {g: json.loads(fleet.ledger.copies[r][0]) for r, g in rids.items() if r in fleet.ledger.copies}


def summary(described: dict) -> tuple:
    return (described.get("group_state"), sorted(m["member_id"] for m in described.get("members", [])))


def run(groups: int, members: int, workdir: Path, bootstrap: str | None = None,
        start_timeout_s: float = 300.0) -> Verdict:
    verdict = Verdict("checkpoint lost: rebuild from the records topic")
    entry = rebuild_entry_point()
    if entry is None:
        verdict.checks["this build can rebuild from the records topic"] = False
        verdict.notes.append("no `coordinator rebuild` subcommand and no `run --rebuild-from-records` flag in "
                             "coordinator/cli.py: the state cannot be rebuilt (docs/drills.md, hooks)")
        return verdict
    env = Environment(workdir, bootstrap)
    fleet = None
    try:
        env.job.start()
        env.job.wait_running(start_timeout_s)
        names = [f"g{i}" for i in range(groups)]
        fleet = Fleet(env.wire(), names, members, session_timeout_ms=120000, rebalance_timeout_ms=120000)
        fleet.run_until(fleet.all_stable, start_timeout_s)
        fleet.run_for(4)
        fleet.quiesce(start_timeout_s)
        before = describe_all(fleet, names, start_timeout_s)
        env.job.kill()
        shutil.rmtree(env.checkpoint)
        lost_at = time.monotonic()
        log(f"driver killed, checkpoint {env.checkpoint} deleted; rebuild entry point: {entry}")
        if entry == "subcommand":
            cmd = [sys.executable, "-m", "coordinator.cli", "rebuild", "--bootstrap-servers", env.bootstrap,
                   "--checkpoint-location", str(env.checkpoint)]
            cmd += [x for k, v in env.props.items() if k.startswith(("topic.", "group.", "offsets."))
                    for x in ("--set", f"{k}={v}")]
            out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=start_timeout_s)
            verdict.notes.append(f"coordinator rebuild exit {out.returncode}: {out.stdout.strip()[-300:]}")
        else:
            env.job.extra_args = [REBUILD_FLAG]
        env.job.start()
        env.job.wait_running(start_timeout_s)
        # The members resume where they were: heartbeats and commits with their ids and generation.
        expired_before = len(fleet.ledger.expired_while_stable)
        fleet.sending = True
        first = time.monotonic()
        fleet.run_until(lambda: any(t > first for t in fleet.ledger.first_at.values()), start_timeout_s)
        verdict.time_to_recover_s = [time.monotonic() - lost_at]
        fleet.run_for(5)
        fleet.quiesce(start_timeout_s)
        after = describe_all(fleet, names, start_timeout_s)
        committed = fleet.fetch_committed(start_timeout_s)
        full = Verdict.from_fleet(verdict.drill, fleet, committed)
        full.time_to_recover_s = verdict.time_to_recover_s
        full.sessions_expired_by_outage = len(fleet.ledger.expired_while_stable) - expired_before
        restored = [g for g in names if g in after and summary(after[g]) == summary(before.get(g, {}))]
        full.checks["groups back Stable/Empty with the same members"] = len(restored) == len(names)
        full.notes += [f"{g}: before {summary(before.get(g, {}))} after {summary(after.get(g, {}))}"
                       for g in names if g not in restored]
        full.notes = verdict.notes + full.notes
        return full
    finally:
        if fleet is not None:
            fleet.wire.close()
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.drills.checkpoint_lost",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=3)
    parser.add_argument("--members", type=int, default=2)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    verdict = run(args.groups, args.members, args.workdir or Path(tempfile.mkdtemp(prefix="drill-checkpoint-")))
    print(verdict.table())
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
