"""Every document the repository's code, configuration and docs name is in the repository: a comment that sends a
reader to a file they cannot open is worse than none."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {".git", ".venv", "var", "dist", "__pycache__", "spark_group_coordinator.egg-info", "fixtures"}
SCANNED = {".py", ".md", ".sh", ".conf", ".properties", ".toml", ".yaml", ".yml", ".json", ".txt", ""}
DOCUMENT = re.compile(r"(?<![\w/.<>-])((?:\.\./|[\w-]+/)*[\w.-]+\.md)\b")
"""A Markdown path as text names it: from the repository's root, beside the naming file, or up from it (`../`); not
one under a placeholder folder such as `<out>/` (a file a command writes)."""
WRITTEN = {"report.md"}
"""Documents the code writes (`bench.report`), not ones it sends a reader to."""


def _files() -> list[Path]:
    out = []
    for path in sorted(ROOT.rglob("*")):
        if path.is_file() and path.suffix in SCANNED and not SKIPPED_DIRS & set(path.relative_to(ROOT).parts):
            out.append(path)
    return out


def test_every_document_a_file_names_exists():
    missing = []
    for path in _files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name in DOCUMENT.findall(line):
                if name not in WRITTEN and not ((ROOT / name).exists() or (path.parent / name).exists()):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {name}")
    assert not missing, "documents named but not in the repository:\n" + "\n".join(missing)
