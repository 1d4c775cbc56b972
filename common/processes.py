"""Child processes that die with the process that started them: the embedded broker, a gateway beside the job."""

from __future__ import annotations

import ctypes
import signal


def die_with_parent() -> None:
    """Linux: SIGKILL the child if the process that started it dies without stopping it (kill -9, crash). Given to
    `subprocess.Popen` as `preexec_fn`."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
