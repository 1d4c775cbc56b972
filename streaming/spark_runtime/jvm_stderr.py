"""The driver JVM's standard error, minus two start-up notices that no setting turns off.

log4j (conf/log4j2.properties) decides what Spark logs. Two things reach the console without log4j, at every start:
- `WARNING: Using incubator modules: jdk.incubator.vector`: the JVM's own notice for Spark's launcher option
  `--add-modules=jdk.incubator.vector` (SPARK-48021), printed by the module system before any Java code runs;
  the JVM has no option to keep it quiet;
- "Streaming TransformWithStateInPandas Python worker ..." (five lines with a blank line after each, repr()s of
  the state function and its schemas): `print` calls in PySpark's `transform_with_state_driver_worker`, the Python
  process that initialises a transformWithState query on the driver. Spark copies that process's output to the
  JVM's stderr byte for byte (`PythonWorkerFactory`); no Spark setting redirects it (Spark 4.3's Python worker log
  capture takes only `logging` records of UDFs).

So when `coordinator run` starts the JVM itself (not under spark-submit), the JVM's stderr is a pipe that a
thread of this process copies to the real stderr, line by line, dropping exactly these lines. Everything else
passes unchanged: Spark's log4j output, Python workers' tracebacks. The copy never stops reading, so the JVM never
blocks on it. Under spark-submit the JVM starts first and keeps its stderr: both notices print there.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from contextlib import contextmanager
from typing import BinaryIO, Iterator

NOTICES = (
    re.compile(rb"WARNING: Using incubator modules: jdk\.incubator\.vector\r?\n"),
    re.compile(rb"(Starting )?Streaming TransformWithStateInPandas Python worker\b.*\n", re.DOTALL),
)
"""Whole lines dropped; PySpark ends each of its prints with a newline of its own, so the blank line after one of
them goes too."""


class NoticeFilter:
    """Decides line by line; kept apart from the pipe so that it can be tested on its own."""

    def __init__(self) -> None:
        self._after_notice = False

    def keep(self, line: bytes) -> bool:
        if any(notice.fullmatch(line) for notice in NOTICES):
            self._after_notice = True
            return False
        blank_after_notice = self._after_notice and line.strip() == b""
        self._after_notice = False
        return not blank_after_notice


def copy_filtered(source: BinaryIO, target_fd: int) -> None:
    """Copy `source` to `target_fd` until end of file, without the notices. Keeps reading whatever happens to the
    target (a closed terminal), so that the writer never blocks on a full pipe."""
    notices = NoticeFilter()
    writable = True
    for line in iter(source.readline, b""):
        if writable and notices.keep(line):
            try:
                os.write(target_fd, line)
            except OSError:
                writable = False


@contextmanager
def jvm_stderr_filtered() -> Iterator[None]:
    """Processes started inside this block (the JVM, and through it Spark's Python workers) write their standard
    error through `copy_filtered`; this process's own writes go there only while the block runs."""
    read_fd, write_fd = os.pipe()
    target_fd = os.dup(2)
    source = os.fdopen(read_fd, "rb")
    threading.Thread(target=copy_filtered, args=(source, target_fd), name="jvm-stderr", daemon=True).start()
    sys.stderr.flush()
    os.dup2(write_fd, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(target_fd, 2)
        os.close(write_fd)
