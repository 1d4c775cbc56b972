"""Fast checks of the deployment pieces that need no Spark: the --py-files zip, the cluster entry point running from
it, the launchers' property merge, and the drills' verdict logic."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from deploy.drills.fleet import Fleet, Sent
from deploy.drills.verdict import Verdict
from deploy.spark import package

ROOT = Path(__file__).resolve().parents[2]


def _from_the_zip(zip_path: Path, cwd: Path, code: str) -> subprocess.CompletedProcess:
    """`code` in a Python that has the dependencies but not the project, as on the Kubernetes image: the project's
    editable install is taken off the import path, so only the zip (and deploy/spark, the entry's folder) provide it."""
    prelude = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in f.__module__]; "
               "sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", prelude + code, str(zip_path), str(ROOT / "deploy" / "spark")],
                          cwd=cwd, capture_output=True, text=True, env=env)


def test_zip_holds_the_job_and_its_pure_python_dependencies_reproducibly(tmp_path):
    first, second = tmp_path / "a.zip", tmp_path / "b.zip"
    assert package.build(first) == package.build(second)
    names = zipfile.ZipFile(first).namelist()
    for needed in ("schemas/messages.py", "state/batch.py", "assignors/__init__.py", "common/config.py",
                   "streaming/query.py", "coordinator/cli.py", "kafka/__init__.py",
                   "conf/coordinator.properties", "conf/spark-defaults.conf"):
        assert needed in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith(("tests/", "client/", "admin/", "deploy/"))]
    assert hashlib.sha256(first.read_bytes()).hexdigest() == package.build(first)


def test_entry_point_runs_from_the_zip_with_its_default_configuration(tmp_path):
    zip_path = tmp_path / "coordinator-pyfiles.zip"
    package.build(zip_path)
    ran = _from_the_zip(zip_path, tmp_path, "import entry; entry._point_config_at_real_files(); "
                        "from common import config; print(config.__file__); print(config.load()['topic.requests'])")
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout.split()
    assert ".zip" in out[0], out  # imported from the zip, not from the checkout
    assert out[1] == "group-coordinator-requests"


def test_the_job_runs_from_the_zip_which_ships_no_gateway(tmp_path):
    zip_path = tmp_path / "coordinator-pyfiles.zip"
    package.build(zip_path)
    ran = _from_the_zip(zip_path, tmp_path, "import entry, importlib.util\n"
                        "print('gateway importable:', importlib.util.find_spec('gateway') is not None, flush=True)\n"
                        "try:\n    entry.main(['--help'])\nexcept SystemExit:\n    pass\n"
                        "entry.main(['run', '--help'])")
    assert "gateway importable: False" in ran.stdout, ran.stdout + ran.stderr  # the image as the test made it
    assert "{run,upgrade}" in ran.stdout  # no gateway command where there is no gateway
    assert ran.returncode == 0 and "usage: coordinator run" in ran.stdout, ran.stderr


def test_launchers_merge_spark_properties_later_files_winning(tmp_path):
    site = tmp_path / "site.conf"
    site.write_text("spark.executor.memory 3g\n")
    script = (f'source "{ROOT}/deploy/spark/common.sh"; merge_properties "{site}"; cat "$merged_props"; '
              'rm -f "$merged_props"')
    merged = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    keys = [line.split()[0] for line in merged.splitlines() if line.strip() and not line.startswith("#")]
    assert "spark.master" not in keys and "spark.driver.host" not in keys
    assert "spark.sql.shuffle.partitions" in keys
    memory = [line.split()[1] for line in merged.splitlines() if line.startswith("spark.executor.memory")]
    assert memory[-1] == "3g"  # java.util.Properties: the last occurrence wins


class _NoWire:
    pass


def test_verdict_flags_lost_requests_offsets_generations_and_different_duplicates():
    fleet = Fleet(_NoWire(), ["g"], 1)
    ledger = fleet.ledger
    for rid in ("a", "b", "c", "d"):
        ledger.sent[rid] = Sent({"api": "Heartbeat"}, 0.0, None)
    ledger.record(b'{"request_id":"a","api":"JoinGroup","group_id":"g","error_code":0,"generation_id":2}', 1.0)
    ledger.record(b'{"request_id":"b","api":"JoinGroup","group_id":"g","error_code":0,"generation_id":1}', 2.0)
    ledger.record(b'{"request_id":"c","x":1}', 3.0)
    ledger.record(b'{"request_id":"c","x":1}', 4.0)
    ledger.acked[("g", 0)] = 5
    verdict = Verdict.from_fleet("synthetic", fleet, committed={("g", 0): 4})
    assert (verdict.lost, verdict.duplicated, verdict.non_identical_duplicates) == (1, 1, 0)
    assert verdict.offsets_lost == 1 and verdict.generations_back == 1
    assert not verdict.passed
    ledger.record(b'{"request_id":"c","x":2}', 5.0)
    assert Verdict.from_fleet("synthetic", fleet, {("g", 0): 5}).non_identical_duplicates == 1
    assert json.loads(verdict.to_json())["passed"] is False
    assert "FAIL" in verdict.table()
