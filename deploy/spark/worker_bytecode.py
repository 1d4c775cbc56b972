"""Put compiled bytecode into the pyspark.zip that Spark's Python processes import pyspark from.

    python -m deploy.spark.worker_bytecode [--spark-home DIR]

Spark starts every Python process of a query (its data source runner, its transformWithState worker, the daemons
that fork the task workers) with `$SPARK_HOME/python/lib/pyspark.zip` first on the path. That zip holds only
sources, and Python cannot cache bytecode inside a zip, so each of those processes compiled the pyspark modules it
imports: 0.85 CPU-s to import `pyspark.worker` from the zip against 0.29 s from an installed pyspark, and two
thirds of a new query's Python samples were imports (a third compiling). A query starts several such processes;
the test suite starts about a hundred queries and a few dozen jobs.

This adds, next to each `.py` in the zip, its unchecked hash-based `.pyc` (PEP 552), which zipimport loads without
compiling; the sources stay, for tracebacks. Idempotent (a zip with bytecode is left alone), and atomic (a new zip
replaces the old one). `deploy/local/bootstrap` runs it for `.venv`; on a cluster, run it once per Spark install of
each worker host, with the Python its workers run.
"""

from __future__ import annotations

import argparse
import importlib.util
import marshal
import os
import sys
import warnings
import zipfile
from importlib.util import MAGIC_NUMBER
from pathlib import Path

UNCHECKED_HASH = 0b01
"""PEP 552's flags: hash-based, source not checked (the zip's sources never change without the zip being
replaced, by a Spark upgrade, which removes the bytecode with them)."""


def pyspark_zip(spark_home: Path | None = None) -> Path:
    """`$SPARK_HOME/python/lib/pyspark.zip`; without a Spark home, that of the installed pyspark."""
    if spark_home is None:
        import pyspark

        spark_home = Path(pyspark.__file__).parent
    return spark_home / "python" / "lib" / "pyspark.zip"


def pyc(source: bytes, filename: str) -> bytes:
    """The `.pyc` bytes of `source` as `filename` (the path zipimport gives the module, for tracebacks)."""
    with warnings.catch_warnings():  # pyspark's own tests have SyntaxWarnings; importing them would say so
        warnings.simplefilter("ignore")
        code = compile(source, filename, "exec", dont_inherit=True)
    header = MAGIC_NUMBER + UNCHECKED_HASH.to_bytes(4, "little") + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def add_bytecode(archive: Path) -> int:
    """Rewrite `archive` with a `.pyc` beside each `.py`; returns how many were added (0: it had bytecode)."""
    with zipfile.ZipFile(archive) as src:
        if any(name.endswith(".pyc") for name in src.namelist()):
            return 0
        added = 0
        partial = archive.with_name(archive.name + ".partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            for info in src.infolist():
                data = src.read(info)
                out.writestr(info, data)
                if info.filename.endswith(".py"):
                    try:
                        compiled = pyc(data, os.path.join(str(archive), info.filename))
                    except SyntaxError:
                        continue  # zipimport compiles it, and reports it, as before
                    out.writestr(zipfile.ZipInfo(info.filename + "c", info.date_time), compiled,
                                 zipfile.ZIP_DEFLATED)
                    added += 1
    os.replace(partial, archive)
    return added


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.spark.worker_bytecode",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--spark-home", type=Path, help="default: the installed pyspark's")
    args = parser.parse_args(argv)
    archive = pyspark_zip(args.spark_home)
    added = add_bytecode(archive)
    print(f"{archive}: " + (f"bytecode added for {added} modules" if added else "has bytecode already"),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
