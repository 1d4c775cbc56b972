"""The driver JVM's class-data-sharing (CDS) archive: Spark's classes, already parsed and verified.

A cold driver JVM spends seconds loading the same ten thousand Spark classes on every start, and a restart after a
crash waits for that. `deploy/spark/class_archive.py` runs the job once with `-XX:ArchiveClassesAtExit` and keeps
what the JVM loaded; `with_class_archive` then points every later driver JVM at it with `-XX:SharedArchiveFile`.

The archive only fits the JVM binary and the Spark jars it was made with, so its file name is a digest of both: a
new JDK or Spark simply finds no archive. A JVM that finds the archive unusable anyway (say, extra jars on the class
path) logs one warning and starts the slow way; nothing depends on it.

    python -m streaming.spark_runtime.class_archive [--java-option]   # where this JVM's and Spark's archive is,
                                                                      # and if it exists

`COORDINATOR_CLASS_ARCHIVE_DIR` moves the archives (default: `var/jvm` in the project).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Mapping

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "var" / "jvm"
DRIVER_OPTIONS = "spark.driver.defaultJavaOptions"


def archive_dir() -> Path:
    return Path(os.environ.get("COORDINATOR_CLASS_ARCHIVE_DIR") or DEFAULT_DIR)


def spark_jars() -> Path:
    """The jars directory spark-submit puts on the driver's class path: SPARK_HOME's, else the pyspark wheel's."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = os.path.dirname(pyspark.__file__)
    return Path(home) / "jars"


def java_binary() -> Path | None:
    """The `java` that spark-class runs: JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and os.path.exists(found) else None


def archive_path() -> Path | None:
    """Where this JVM's archive of these Spark jars lives (whether or not it exists); None without a java."""
    java = java_binary()
    jars = spark_jars()
    if java is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    for path in [java, *sorted(jars.iterdir())]:
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return archive_dir() / f"spark-driver-{digest.hexdigest()[:16]}.jsa"


def with_class_archive(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with the archive added to the driver's JVM options, when there is one for this JVM and Spark."""
    out = dict(conf)
    options = out.get(DRIVER_OPTIONS, "")
    if "-XX:SharedArchiveFile" in options or "-XX:ArchiveClassesAtExit" in options:
        return out  # the operator's own archive, or a training run
    path = archive_path()
    if path is not None and path.is_file():
        out[DRIVER_OPTIONS] = f"{options} -XX:SharedArchiveFile={path}".strip()
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m streaming.spark_runtime.class_archive",
                                     description="where this JVM's archive of these Spark jars is")
    parser.add_argument("--java-option", action="store_true",
                        help="print only the JVM option that uses the archive, or nothing when there is none "
                             "(for spark-submit's --driver-java-options)")
    args = parser.parse_args(argv)
    where = archive_path()
    if args.java_option:
        if where is not None and where.is_file():
            print(f"-XX:SharedArchiveFile={where}")
        return 0
    if where is None:
        print("no java (JAVA_HOME or PATH) or no Spark jars found")
        return 1
    print(f"{where} ({'present' if where.is_file() else 'missing'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
