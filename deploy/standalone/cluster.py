"""A Spark standalone cluster on loopback, from the pyspark pip installation: one master and N workers.

    python -m deploy.standalone.cluster start [--workers 2] [--cores 1] [--memory 1g] [--dir var/standalone]
    python -m deploy.standalone.cluster status [--dir var/standalone]
    python -m deploy.standalone.cluster stop [--dir var/standalone]

The pip pyspark has `bin/spark-class` but not `sbin/start-master.sh`, so the daemons are started directly with
`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`, each in its own process group, on free
127.0.0.1 ports. `start` records their pids in `<dir>/cluster.json` and prints the master URL; `stop` kills exactly
those process groups (a worker's group includes the executors it launched), nothing found by name.

Tests use `StandaloneCluster` directly (context manager), and `kill_worker(i)` to lose a worker mid-stream.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from streaming.kafka_io.embedded import free_port

ROOT = Path(__file__).resolve().parents[2]


def spark_home() -> Path:
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Daemon:
    role: str
    pid: int
    port: int
    webui_port: int
    log: str


@dataclass
class StandaloneCluster:
    directory: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    master: Daemon | None = None
    worker_daemons: list[Daemon] = field(default_factory=list)
    _procs: dict[int, subprocess.Popen] = field(default_factory=dict, repr=False)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self._started().port}"

    @property
    def master_ui(self) -> str:
        return f"http://127.0.0.1:{self._started().webui_port}"

    def _started(self) -> Daemon:
        if self.master is None:
            raise RuntimeError("the standalone cluster is not started (start() first)")
        return self.master

    # -- life cycle ----------------------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.directory / "logs"),
            "SPARK_WORKER_DIR": str(self.directory / "work"),
            # Spark's own daemon heap: small, the executors get their own JVMs.
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_NO_DAEMONIZE": "1",
        })
        # spark.worker.timeout stays at Spark's 60 s: at 10 s, a loaded 2-core machine delays worker heartbeats
        # enough that the master drops live workers (and their executors) again and again, and the query fails.
        env.setdefault("PYSPARK_PYTHON", str(ROOT / ".venv" / "bin" / "python"))
        return env

    def _spawn(self, role: str, args: list[str], port: int, webui_port: int) -> Daemon:
        log = self.directory / "logs" / f"{role}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, env=self._env(), start_new_session=True)
        out.close()
        self._procs[proc.pid] = proc
        return Daemon(role, proc.pid, port, webui_port, str(log))

    def start(self, timeout_s: float = 90.0) -> "StandaloneCluster":
        self.directory.mkdir(parents=True, exist_ok=True)
        port, ui = free_port(), free_port()
        self.master = self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                             "--port", str(port), "--webui-port", str(ui)], port, ui)
        try:
            self._wait(lambda status: status is not None, timeout_s, "master web UI")
            for i in range(self.workers):
                self.add_worker(i)
            self._wait(lambda status: status and status.get("aliveworkers", 0) >= self.workers, timeout_s,
                       f"{self.workers} workers registered")
            self.save()
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, index: int) -> Daemon:
        wport, wui = free_port(), free_port()
        work = self.directory / "work" / f"worker-{index}"
        work.mkdir(parents=True, exist_ok=True)
        daemon = self._spawn(f"worker-{index}", [
            "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1", "--port", str(wport),
            "--webui-port", str(wui), "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work)],
            wport, wui)
        self.worker_daemons.append(daemon)
        return daemon

    def status(self) -> dict | None:
        """The master's JSON status (`/json/`), or None when it does not answer."""
        try:
            with urllib.request.urlopen(self.master_ui + "/json/", timeout=2) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        status = self.status()
        return 0 if status is None else int(status.get("aliveworkers", 0))

    def _wait(self, predicate, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate(self.status()):
            for pid, proc in self._procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"spark daemon {pid} exited with {proc.returncode}; see {self.directory}/logs")
            if time.monotonic() > deadline:
                raise TimeoutError(f"standalone cluster: {what} not reached within {timeout_s} s")
            time.sleep(0.5)

    def kill_worker(self, index: int) -> None:
        """SIGKILL a worker and the executor it launched (its process group), as a machine loss would."""
        _kill_group(self.worker_daemons[index].pid)

    def stop(self) -> None:
        for daemon in reversed(self.worker_daemons + ([self.master] if self.master else [])):
            _kill_group(daemon.pid)
        for proc in self._procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        state = self.directory / "cluster.json"
        state.unlink(missing_ok=True)

    def save(self) -> None:
        doc = {"master_url": self.master_url, "master_ui": self.master_ui, "master": asdict(self.master),
               "workers": [asdict(w) for w in self.worker_daemons]}
        (self.directory / "cluster.json").write_text(json.dumps(doc, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> "StandaloneCluster":
        doc = json.loads((directory / "cluster.json").read_text())
        cluster = cls(directory, workers=len(doc["workers"]))
        cluster.master = Daemon(**doc["master"])
        cluster.worker_daemons = [Daemon(**w) for w in doc["workers"]]
        return cluster

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by `pid` (a daemon we started with its own session), then the pid itself."""
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.standalone.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "status", "stop"])
    parser.add_argument("--dir", type=Path, default=ROOT / "var" / "standalone")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="1g")
    args = parser.parse_args(argv)
    if args.command == "start":
        if (args.dir / "cluster.json").exists():
            print(f"a cluster is already recorded in {args.dir}/cluster.json; stop it first", file=sys.stderr)
            return 1
        cluster = StandaloneCluster(args.dir, args.workers, args.cores, args.memory).start()
        print(f"master {cluster.master_url} (web UI {cluster.master_ui}); {args.workers} workers; "
              f"pids in {args.dir}/cluster.json")
        return 0
    if not (args.dir / "cluster.json").exists():
        print(f"no cluster recorded in {args.dir}", file=sys.stderr)
        return 1
    cluster = StandaloneCluster.load(args.dir)
    if args.command == "status":
        status = cluster.status()
        print(json.dumps({"master_url": cluster.master_url, "alive_workers": cluster.alive_workers(),
                          "status": (status or {}).get("status", "DOWN")}))
        return 0
    cluster.stop()
    print("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
