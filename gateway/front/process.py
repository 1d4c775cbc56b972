"""A gateway in a child process: how the embedded default, the tests and the benchmark run one.

It is started as `python -m gateway` and stopped by its process id (SIGTERM, then SIGKILL); like the embedded
broker it dies with the process that started it, `kill -9` included.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from common.processes import die_with_parent

READY = "gateway listening: bootstrap.servers="


@dataclass
class GatewayProcess:
    process: subprocess.Popen
    bootstrap_servers: str
    """The gateway's bootstrap listener, as Kafka clients take it."""

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=timeout_s)
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_gateway(bootstrap_servers: str, props: Mapping[str, str] | None = None, listen: str = "127.0.0.1:0",
                  args: Sequence[str] = (), log_path: Path | None = None,
                  timeout_s: float = 60.0, source: Path | None = None) -> GatewayProcess:
    """Start a gateway in front of `bootstrap_servers` (with `props` as `--set`) and return once it listens.
    `source`: run the gateway of another checkout of this project (its root; the same environment), e.g. main
    before a change, for a bench that compares the two."""
    command = [sys.executable, "-m", "gateway", "--bootstrap-servers", bootstrap_servers, "--listen", listen]
    for key, value in (props or {}).items():
        command += ["--set", f"{key}={value}"]
    command += list(args)
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                               preexec_fn=die_with_parent, cwd=source,
                               env=None if source is None else {**os.environ, "PYTHONPATH": str(source)})
    gateway = GatewayProcess(process, "")
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"the gateway did not listen within {timeout_s} s")
            if select.select([process.stdout], [], [], min(remaining, 0.5))[0]:
                line = process.stdout.readline()
                if line.startswith(READY):
                    gateway.bootstrap_servers = line[len(READY):].strip()
                    return gateway
                if not line:
                    raise RuntimeError(f"the gateway exited with status {process.wait()}")
    except BaseException:
        gateway.stop()
        raise
