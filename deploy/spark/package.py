"""Build the `--py-files` zip that ships the job to a Spark cluster.

    python -m deploy.spark.package [--out dist/coordinator-pyfiles.zip]

The zip holds the job's pure-Python code, importable from the zip as Spark adds it to `sys.path` on the driver and
every executor: `schemas/`, `state/`, `assignors/`, `common/`, `streaming/`, `coordinator/`, the pure-Python dependency
`kafka` (kafka-python), and `conf/` (the default coordinator.properties and spark-defaults.conf, read by
`deploy/spark/entry.py` when the code runs from the zip). Native dependencies (pandas, pyarrow, numpy) cannot travel
in a zip: the executors' Python (`spark.pyspark.python`) must have them, at the versions pinned in pyproject.toml (see
docs/operations.md). The gateway (`gateway/`, and `client/` which it uses) is not shipped: it runs beside the cluster,
not in the job, so `coordinator` from the zip has no `gateway` command (`coordinator.cli`).

The zip is reproducible: entries are sorted and carry a fixed timestamp, so the same tree gives the same bytes and
the launchers can rebuild it on every submit without churn.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = ("schemas", "state", "assignors", "common", "streaming", "coordinator")
DEPENDENCIES = ("kafka",)
"""Pure-Python distributions shipped alongside the project (import names)."""
CONF_FILES = ("conf/coordinator.properties", "conf/spark-defaults.conf")
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


def _package_dir(name: str) -> Path:
    local = ROOT / name
    if (local / "__init__.py").exists():
        return local
    module = __import__(name)
    return Path(module.__file__).parent


def _files(base: Path, prefix: str) -> list[tuple[Path, str]]:
    out = []
    for path in sorted(base.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
            continue
        out.append((path, f"{prefix}/{path.relative_to(base).as_posix()}"))
    return out


def entries() -> list[tuple[Path, str]]:
    items: list[tuple[Path, str]] = []
    for name in PROJECT_PACKAGES + DEPENDENCIES:
        items += _files(_package_dir(name), name)
    items += [(ROOT / f, f) for f in CONF_FILES]
    return sorted(items, key=lambda item: item[1])


def build(out: Path) -> str:
    """Write the zip; return its sha256 (printed, so an operator can tell which build a cluster runs)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, arcname in entries():
            info = zipfile.ZipInfo(arcname, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    tmp.replace(out)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.spark.package", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "coordinator-pyfiles.zip")
    args = parser.parse_args(argv)
    digest = build(args.out)
    print(f"{args.out} sha256={digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
