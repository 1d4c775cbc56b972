"""One driver per checkpoint, and a standby that takes over the moment it dies.

Spark cannot tell two driver processes on one checkpoint apart: both would write the same offset log and state.
So `coordinator run` holds an exclusive lock on `<checkpoint>/driver.lock` while it runs the query. A second driver
started on the same checkpoint becomes a standby: it starts its JVM and Python workers and registers the source,
then blocks on the lock, and starts the query as soon as the kernel releases the lock, which it does when the
active driver's process ends in any way, `kill -9` included. Recovery then skips the whole cold start.

The lock is `flock(2)`, so it needs the checkpoint on a filesystem the drivers share and lock through: a local disk,
or NFS for drivers on several hosts. Checkpoints elsewhere (`hdfs://`, `s3a://`, ...) run without it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Callable, IO
from urllib.parse import urlparse

LOCK_FILE = "driver.lock"


def lock_path(checkpoint: str) -> Path | None:
    """The lock file of a checkpoint on a local (or locally mounted) filesystem; None for other schemes."""
    parsed = urlparse(checkpoint)
    if parsed.scheme not in ("", "file"):
        return None
    return Path(parsed.path if parsed.scheme else checkpoint) / LOCK_FILE


def hold(checkpoint: str, on_standby: Callable[[], None] = lambda: None) -> IO | None:
    """Take the checkpoint's driver lock, first calling `on_standby` and then waiting if another process holds it.

    Returns the open lock file: the lock lasts as long as it stays open (and this process lives). None when the
    checkpoint's filesystem has no lock (see the module's docstring)."""
    path = lock_path(checkpoint)
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        on_standby()
        fcntl.flock(handle, fcntl.LOCK_EX)  # signals still interrupt it (Ctrl-C, SIGTERM)
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")  # for operators: which process runs the query
    handle.flush()
    return handle
