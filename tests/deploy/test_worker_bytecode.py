"""Bytecode in pyspark.zip (deploy/spark/worker_bytecode.py): Spark's Python processes import pyspark from that zip,
where Python compiles every module it imports unless the zip carries the bytecode."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from deploy.spark.worker_bytecode import add_bytecode, pyspark_zip

MODULE = "def fail():\n    raise ValueError('from the zip')\n"


def _import_from(archive: Path) -> subprocess.CompletedProcess:
    code = ("import sys, traceback; sys.path.insert(0, sys.argv[1]); import pkg.mod as m; print(m.__file__)\n"
            "try:\n    m.fail()\nexcept ValueError:\n    traceback.print_exc()\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True, text=True, env=env,
                          check=True)


def test_a_zip_gets_bytecode_that_imports_without_compiling_and_keeps_its_sources_for_tracebacks(tmp_path):
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("pkg/__init__.py", "")
        z.writestr("pkg/mod.py", MODULE)
        z.writestr("pkg/broken.py", "def (:\n")
    assert _import_from(archive).stdout.strip().endswith("mod.py")  # compiled from source at every import

    assert add_bytecode(archive) == 2  # the two modules that compile; the broken one is left to zipimport
    with zipfile.ZipFile(archive) as z:
        assert {"pkg/__init__.pyc", "pkg/mod.pyc", "pkg/mod.py", "pkg/broken.py"} <= set(z.namelist())
        assert "pkg/broken.pyc" not in z.namelist()
    done = _import_from(archive)
    assert done.stdout.strip().endswith("mod.pyc")  # loaded from the bytecode
    assert "raise ValueError('from the zip')" in done.stderr  # the source line, read from the zip
    assert add_bytecode(archive) == 0  # once is enough


def test_the_bootstrapped_pyspark_zip_carries_bytecode():
    with zipfile.ZipFile(pyspark_zip()) as z:
        names = set(z.namelist())
    assert {"pyspark/worker.pyc", "pyspark/sql/streaming/python_streaming_source_runner.pyc"} <= names
