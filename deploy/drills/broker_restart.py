"""Drill: the broker comes back with the job's topics recreated empty; the job must report the data loss.

    python -m deploy.drills.broker_restart [--fail-on-data-loss true|false|both] [--workdir DIR]

tansu keeps everything in memory, so restarting it on the same port is a broker that lost every topic. The drill
forms a group, commits offsets, restarts the broker, recreates the four topics empty (as an operator or an
auto-create would), and sends new requests. The checkpoint says the job has read the requests topic up to some
offset the new topic does not have: records were lost, and offsets will be reused by new records.

- `fail.on.data.loss=true`: the query must stop with an error that says data was lost (offsets went back / are
  gone), within `--report-timeout-s`.
- `fail.on.data.loss=false`: the job must log a warning that says so and carry on: new requests are answered.
Either way "silently" is the failure: the job running on without a word, skipping or waiting for offsets that will
not come back.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

from client import protocol as wire
from deploy.drills.fleet import Fleet
from deploy.drills.harness import Environment, create_topics, log
from deploy.drills.verdict import Verdict

DATA_LOSS = re.compile(r"(?i)data[ _-]?loss|failOnDataLoss|fail\.on\.data\.loss|offsets? .*(went back|gone|reset)")
SUPERVISED = "the query stopped on its producer first; started again, as a supervisor would"


def run(fail_on_data_loss: bool, workdir: Path, report_timeout_s: float = 120.0,
        start_timeout_s: float = 300.0) -> Verdict:
    mode = "true" if fail_on_data_loss else "false"
    env = Environment(workdir, props={"fail.on.data.loss": mode})
    fleet = None
    try:
        env.job.start()
        env.job.wait_running(start_timeout_s)
        fleet = Fleet(env.wire(), ["before"], 2, session_timeout_ms=120000, rebalance_timeout_ms=120000)
        fleet.run_until(fleet.all_stable, start_timeout_s)
        fleet.run_for(3)
        fleet.quiesce(start_timeout_s)
        before = len(fleet.ledger.sent)
        fleet.wire.close()
        log_offset = len(env.job.log_text())

        env.broker.restart_empty()
        create_topics(env.props)
        restarted = time.monotonic()
        log(f"broker restarted empty on {env.bootstrap}; topics recreated; fail.on.data.loss={mode}")

        # New traffic: a new group on the new, empty topics.
        fleet = Fleet(env.wire(), ["after"], 1, session_timeout_ms=120000, rebalance_timeout_ms=120000)
        reported_at = None
        supervised = False
        deadline = restarted + report_timeout_s
        while time.monotonic() < deadline:
            fleet.tick(100)
            text = env.job.log_text()[log_offset:]
            if reported_at is None and DATA_LOSS.search(text):
                reported_at = time.monotonic()
            if fail_on_data_loss and not env.job.alive():
                if reported_at is None and not supervised:
                    # A batch writing as the broker went away stops the query on its producer first (the broker
                    # lost the idempotent producer's state: UNKNOWN_PRODUCER_ID, fatal); a supervisor starts the
                    # job again, and its replay of that batch finds the offsets gone.
                    supervised = True
                    log_offset = 0
                    env.job.start()
                    deadline = time.monotonic() + report_timeout_s  # the start is not the report's time
                    log(SUPERVISED)
                    continue
                break
            if not fail_on_data_loss and reported_at and fleet.all_stable():
                break
        text = env.job.log_text()[log_offset:]
        match = DATA_LOSS.search(text)
        verdict = Verdict(f"broker restarted empty, fail.on.data.loss={mode}")
        verdict.requests_sent = before + len(fleet.ledger.sent)
        verdict.answered = verdict.requests_sent - len(fleet.ledger.unanswered())
        verdict.lost = len(fleet.ledger.unanswered()) if not fail_on_data_loss else 0
        verdict.duplicated = len(fleet.ledger.duplicated())
        verdict.non_identical_duplicates = len(fleet.ledger.non_identical())
        verdict.checks["data loss reported in the job's log"] = match is not None
        if supervised:
            verdict.notes.append(SUPERVISED)
        if match:
            # Prefer the error or warning line itself over a traceback line that merely names the check.
            message = re.search(r"(?im)^.*(error|exception|warn)\w*[:\s].*data[ _-]?loss.*$", text)
            line = message.group(0) if message else \
                text[text.rfind("\n", 0, match.start()) + 1:text.find("\n", match.end())]
            verdict.notes.append(f"reported: {line.strip()[:300]}")
            verdict.time_to_recover_s = [(reported_at or time.monotonic()) - restarted]
        if fail_on_data_loss:
            verdict.checks["query stopped (failOnDataLoss=true)"] = not env.job.alive()
        else:
            verdict.checks["query carried on and answered new requests"] = env.job.alive() and fleet.all_stable()
        if not match:
            verdict.notes.append("the job said nothing about the lost data within "
                                 f"{report_timeout_s:.0f} s (alive={env.job.alive()})")
        return verdict
    finally:
        if fleet is not None:
            fleet.wire.close()
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.drills.broker_restart",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--fail-on-data-loss", choices=["true", "false", "both"], default="both")
    parser.add_argument("--report-timeout-s", type=float, default=120.0)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    modes = {"true": [True], "false": [False], "both": [True, False]}[args.fail_on_data_loss]
    ok = True
    for mode in modes:
        workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="drill-broker-"))) / f"fail-{str(mode).lower()}"
        verdict = run(mode, workdir, args.report_timeout_s)
        print(verdict.table())
        ok &= verdict.passed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
