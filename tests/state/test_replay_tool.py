"""`python -m state.replay` on the hand-written scenario in tests/state/scenarios/."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from state.errors import Errors
from state.replay import main
from tests.state.schemas import validate_record, validate_response

SCENARIO = Path(__file__).parent / "scenarios" / "two_consumers.jsonl"
ROOT = Path(__file__).resolve().parents[2]


def run(args: list[str], stdin: str = "") -> tuple[int, list[dict], str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin), out, err
    try:
        code = main(args)
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_two_consumers_scenario():
    code, events, _ = run([str(SCENARIO), "--records", "--config", "group.initial.rebalance.delay.ms=1000"])
    assert code == 0
    for e in events:
        if "response" in e:
            validate_response(e["response"])
        if "record" in e:
            validate_record(e["record"]["key"], e["record"]["value"])
    responses = {e["response"]["request_id"]: (e["at_ms"], e["response"]) for e in events if "response" in e}
    # the initial delay (1000 ms) was extended once because b joined during it
    assert responses["a-2"][0] == responses["b-2"][0] == 2010
    assert responses["b-3"][0] == 2700  # the follower's SyncGroup is answered with the leader's
    assert responses["admin-1"][1]["groups"][0]["group_state"] == "Stable"
    assert responses["a-6"][1]["error_code"] == Errors.REBALANCE_IN_PROGRESS  # b's session expired at 15000: rebalance
    assert responses["a-7"][1]["generation_id"] == 2
    assert responses["admin-3"][1]["topics"][0]["partitions"][0]["committed_offset"] == 42
    assert responses["admin-4"][1]["error_code"] == Errors.NONE
    assert responses["admin-5"][1]["groups"] == []
    assert any("dead_letter" in e for e in events)
    assert any(e.get("record", {}).get("value") is None for e in events)


def test_time_going_back_is_an_input_error():
    code, _, err = run([], '{"at_ms": 10}\n{"at_ms": 5}\n')
    assert code == 2 and "time goes back" in err


def test_runs_as_a_module_with_a_config_file(tmp_path):
    props = tmp_path / "coordinator.properties"
    props.write_text("# comment\ngroup.initial.rebalance.delay.ms=1000\n")
    out = subprocess.run([sys.executable, "-m", "state.replay", str(SCENARIO), "--config-file", str(props)],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    code, events, _ = run([str(SCENARIO), "--config", "group.initial.rebalance.delay.ms=1000"])
    assert [json.loads(line) for line in out.splitlines()] == events


def test_raw_lines_and_bad_lines():
    lines = "\n".join([
        '{"at_ms": 0, "raw": "{\\"api\\":\\"Produce\\",\\"request_id\\":\\"p\\",\\"group_id\\":\\"g\\"}"}',
        '{"at_ms": 1, "request": {"api": "ListGroups", "request_id": "l"}}',
    ])
    code, events, _ = run([], lines + "\n")
    assert code == 0
    assert [sorted(e) for e in events] == [["at_ms", "dead_letter"], ["at_ms", "response"], ["at_ms", "response"]]
    assert events[1]["response"]["error_code"] == Errors.INVALID_REQUEST
    code, _, err = run([], '{"at_ms": "soon"}\n')
    assert code == 2 and "line 1" in err
    code, _, err = run(["--config", "no-equals-sign"], "")
    assert code == 2 and "key=value" in err
    code, _, err = run(["--config", "group.max.size=lots"], "")
    assert code == 2 and "bad configuration value" in err
