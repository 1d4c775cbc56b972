"""Several gateway processes on one address: `coordinator gateway --processes N`.

The gateway is one asyncio process, so it uses one core. With `--processes N` the command's own process is a
supervisor that serves no client: it reserves the bootstrap port, starts N workers (each the same gateway, with
every flag but `--processes`), prints the bootstrap address once every worker listens, starts again a worker that
dies, and stops them all on SIGTERM or SIGINT. Every worker listens on the same ports with SO_REUSEPORT, and the
kernel spreads the clients' connections over them (by a hash of each connection's addresses): a client's
connections may land on different workers.

Each worker is a whole gateway: it follows the views, the security topics and the response topic itself, writes
with its own producer, and answers every request alone. What they share, in a private directory of the supervisor's:
- the listeners' ports (`ports.json`, under an flock): a broker a worker meets first gets a port, and every worker
  that meets it later listens on that one, so Metadata answers agree whichever worker gives them;
- the hold (`gateway.fast.holds`): a group whose heartbeats wait for the view after a request one worker forwarded is
  held on every worker.
Nothing else is kept in memory that two workers could answer differently from (docs/gateway.md, "Several processes").
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from common.processes import die_with_parent
from gateway.fast.holds import table_bytes

log = logging.getLogger("gateway")

READY = "gateway listening: bootstrap.servers="
RESTART_PAUSE_S = 1.0
"""How long the supervisor waits before it starts a worker that died again."""
START_TIMEOUT_S = 120.0


class Shared:
    """The directory the workers of one gateway share (`processes` workers)."""

    def __init__(self, directory: Path, processes: int, ephemeral: bool) -> None:
        self.directory = directory
        self.processes = processes
        self.ephemeral = ephemeral
        """Whether the listeners' ports are any free ones (`--listen HOST:0`), not the ones after the bootstrap's."""

    @property
    def holds(self) -> Path:
        return self.directory / "holds"

    @contextmanager
    def ports(self) -> Iterator[dict[str, int]]:
        """The listeners' ports (node id as a string -> port), locked against the other workers while in use; what
        the caller puts in it is kept."""
        with open(self.directory / "ports.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                path = self.directory / "ports.json"
                ports = json.loads(path.read_text()) if path.exists() else {}
                before = dict(ports)
                yield ports
                if ports != before:
                    path.write_text(json.dumps(ports))
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def supervise(args: argparse.Namespace, host: str, port: int, advertised: str) -> int:
    """Run `args.processes` workers of the gateway `args` describes on `host:port` (0: a port picked here)."""
    processes = args.processes
    directory = Path(tempfile.mkdtemp(prefix="gateway-"))
    reserved = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        reserved.bind((host, port))  # bound, never listening: the port stays ours while workers come and go
    except OSError as exc:
        raise SystemExit(f"the gateway cannot listen on {host}:{port}: {exc}") from None
    with open(directory / "holds", "wb") as table:
        table.truncate(table_bytes(processes))
    ephemeral = port == 0
    port = reserved.getsockname()[1]
    worker_args = argparse.Namespace(**{**vars(args), "processes": 1, "listen": f"[{host}]:{port}" if ":" in host
                                        else f"{host}:{port}", "worker": (str(directory), processes, 0, ephemeral)})
    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopping.append(True))
    workers: dict[int, subprocess.Popen] = {}
    try:
        for index in range(processes):
            workers[index] = _start(directory, worker_args, index)
        for index in range(processes):
            _ready(workers[index], index)
        print(f"{READY}{advertised}:{port}", flush=True)
        while not stopping:
            time.sleep(0.2)
            for index, worker in list(workers.items()):
                if worker.poll() is not None and not stopping:
                    log.warning("gateway process %d exited with status %s; starting it again", index,
                                worker.returncode)
                    time.sleep(RESTART_PAUSE_S)
                    workers[index] = _start(directory, worker_args, index)
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                worker.terminate()
        deadline = time.monotonic() + 10
        for worker in workers.values():
            try:
                worker.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        reserved.close()
        shutil.rmtree(directory, ignore_errors=True)
    return 0


def _start(directory: Path, args: argparse.Namespace, index: int) -> subprocess.Popen:
    path = directory / f"args-{index}.pickle"
    directory_, processes, _, ephemeral = args.worker
    path.write_bytes(pickle.dumps(argparse.Namespace(**{**vars(args), "worker": (directory_, processes, index,
                                                                                   ephemeral)})))
    return subprocess.Popen([sys.executable, "-m", "gateway.front.processes", str(path)], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, preexec_fn=die_with_parent)


def _ready(worker: subprocess.Popen, index: int) -> None:
    """Wait until the worker listens (its READY line); what else it prints goes on to this process's output."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if select.select([worker.stdout], [], [], 0.5)[0]:
            line = worker.stdout.readline()
            if line.startswith(READY):
                return
            if not line:
                raise SystemExit(f"gateway process {index} exited with status {worker.wait()}")
            sys.stdout.write(line)
    raise SystemExit(f"gateway process {index} did not listen within {START_TIMEOUT_S:.0f} s")


def worker_main(path: str) -> int:
    """A worker: the gateway of the supervisor's arguments, sharing its directory."""
    from gateway.front.cli import run

    with open(path, "rb") as pickled:
        args = pickle.load(pickled)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return run(args)


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1]))
