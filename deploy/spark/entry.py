"""spark-submit main file for cluster deployments: `coordinator run` from the `--py-files` zip.

`coordinator/submit.py` expects the project installed (`pip install -e .`); on a cluster the code comes from the zip
built by `deploy/spark/package.py`, where `common.config` cannot read its default `conf/` files (they are inside
the zip). This entry extracts them from the zip into a private directory and points `common.config` at them,
then runs the same CLI:

    spark-submit ... --py-files coordinator-pyfiles.zip deploy/spark/entry.py run --checkpoint-location ... [flags]

`--config PATH` may name a file shipped with `--files`: if PATH does not exist, its base name is looked up in the
working directory (where YARN cluster mode localizes `--files`; on Kubernetes the manifests mount conf/ from a
ConfigMap instead).
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from pathlib import Path

CONF_NAMES = ("coordinator.properties", "spark-defaults.conf")


def _zip_containing(module_file: str) -> Path | None:
    for parent in Path(module_file).parents:
        if parent.suffix == ".zip" and parent.is_file():
            return parent
    return None


def _point_config_at_real_files() -> None:
    from common import config as job_config

    if job_config.DEFAULT_PROPERTIES.is_file():
        return  # installed or run from a checkout: nothing to do
    archive = _zip_containing(job_config.__file__)
    if archive is None:
        raise SystemExit(f"cannot find the default configuration ({job_config.DEFAULT_PROPERTIES})")
    target = Path(tempfile.mkdtemp(prefix="coordinator-conf-"))
    with zipfile.ZipFile(archive) as zf:
        for name in CONF_NAMES:
            (target / name).write_bytes(zf.read(f"conf/{name}"))
    job_config.CONF_DIR = target
    job_config.DEFAULT_PROPERTIES = target / "coordinator.properties"
    job_config.DEFAULT_SPARK_DEFAULTS = target / "spark-defaults.conf"


def _resolve_shipped(argv: list[str]) -> list[str]:
    """`--config path/x.properties` shipped with --files: YARN cluster mode localizes it into the working
    directory under its base name; use that copy when the given path does not exist here."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--config" and not os.path.exists(out[i + 1]) and os.path.exists(os.path.basename(out[i + 1])):
            out[i + 1] = os.path.basename(out[i + 1])
    return out


def main(argv: list[str]) -> int:
    _point_config_at_real_files()
    from coordinator.cli import main as coordinator_main

    return coordinator_main(_resolve_shipped(argv))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
