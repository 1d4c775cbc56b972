"""`coordinator run`, `upgrade` and `gateway`: the console script (also the spark-submit entry, via
coordinator/submit.py).

Configuration: conf/coordinator.properties and conf/spark-defaults.conf, then --config / --spark-defaults files,
then flags. With no bootstrap servers it runs on the embedded default: a tansu broker on a free loopback port, a fresh
checkpoint, topics created, and the address printed for clients; the broker is killed (by pid) on exit.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from common import config as job_config
from common import logs
from streaming.recovery.checkpoint import CheckpointError

log = logging.getLogger("coordinator")

EMBEDDED_ROTATE_RECORDS = 50_000
"""`topic.requests.rotate.records` on the embedded broker, where a fetch costs about 1 us per record batch of its
partition (tansu 0.6): a read of the requests topic lists at most about 50 ms, and under a soak's load a new
generation comes every few minutes. Fewer, longer generations: every generation's ends are read on each plan and
each follower round (30 ms for 120 partitions against 12 ms for 2, kafka-python on an idle tansu)
(docs/operations-streaming.md, "Rotating the requests topic")."""


def _parser() -> argparse.ArgumentParser:
    configured = argparse.ArgumentParser(add_help=False)  # how every command that runs Spark is configured
    configured.add_argument("--config", type=Path, help="properties file over conf/coordinator.properties")
    configured.add_argument("--spark-defaults", type=Path, default=job_config.DEFAULT_SPARK_DEFAULTS,
                            help="Spark settings file (spark-defaults.conf format)")
    configured.add_argument("--set", dest="props", action="append", default=[], metavar="KEY=VALUE",
                            help="any coordinator.properties key (repeatable)")
    configured.add_argument("--conf", dest="spark_conf", action="append", default=[], metavar="KEY=VALUE",
                            help="any Spark setting (repeatable)")
    parser = argparse.ArgumentParser(prog="coordinator", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", parents=[configured], help="run the coordinator query until interrupted")
    run.add_argument("--bootstrap-servers", help="Kafka bootstrap servers; none: the embedded tansu broker")
    run.add_argument("--checkpoint-location", help="Spark checkpoint directory (required with a real cluster)")
    run.add_argument("--trigger-interval-ms", type=int, help="micro-batch trigger interval")
    run.add_argument("--metrics-log", help="per-batch JSON lines: a file, or - for stdout (default: off)")
    run.add_argument("--metrics-port", type=int,
                     help="serve Prometheus metrics at http://HOST:PORT/metrics (0: a free port; default: off)")
    run.add_argument("--rebuild-from-records", action="store_true",
                     help="checkpoint lost: on a new checkpoint, load every group from the records topic first "
                          "(same as --set rebuild.from.records=true; ignored once the checkpoint has progress)")
    upgrade = sub.add_parser("upgrade", parents=[configured],
                             help="make a checkpoint of this release from one that keeps its groups in bucket rows "
                                  "(release 0.1.0, or state.operator=applyInPandasWithState)")
    upgrade.add_argument("--from", dest="old_checkpoint", required=True, help="the checkpoint to upgrade (only read)")
    upgrade.add_argument("--checkpoint-location", required=True, help="the new checkpoint (must not have batches)")
    upgrade.add_argument("--bootstrap-servers", required=True, help="the Kafka cluster the old checkpoint read")
    gateway = _gateway_cli()
    if gateway is not None:
        gateway.add_arguments(sub.add_parser("gateway", help="the Kafka-protocol gateway: unmodified Kafka clients use "
                                                             "the coordinator through it (docs/gateway.md)"))
    return parser


def _gateway_cli():
    """`gateway.front.cli` where this installation has the gateway, else None. The cluster's `--py-files` zip
    (deploy/spark/package.py) ships the job alone, so there `coordinator` has no `gateway` command; an error inside
    an installed gateway is raised as usual."""
    try:
        from gateway.front import cli
    except ModuleNotFoundError as exc:
        if exc.name in ("gateway", "client"):
            return None
        raise
    return cli


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "gateway":
        return _gateway_cli().run(args)
    logs.configure()
    overrides = job_config.parse_assignments(args.props)
    flags = {"bootstrap.servers": args.bootstrap_servers, "checkpoint.location": args.checkpoint_location}
    if args.command == "run":
        flags.update({"trigger.interval.ms": args.trigger_interval_ms, "metrics.log": args.metrics_log,
                      "metrics.prometheus.port": args.metrics_port,
                      "rebuild.from.records": "true" if args.rebuild_from_records else None})
    overrides.update({key: str(value) for key, value in flags.items() if value is not None})
    props = job_config.load(args.config, overrides)
    spark_conf = {**job_config.read_spark_defaults(args.spark_defaults),
                  **job_config.parse_assignments(args.spark_conf)}
    try:
        if args.command == "upgrade":
            return upgrade(props, spark_conf, args.old_checkpoint)
        return run(props, spark_conf)
    except KeyboardInterrupt:  # before the query ran, e.g. a standby told to stop while it waits
        log.info("interrupted")
        return 130
    except CheckpointError as exc:
        log.error("%s", exc)
        return 2


def run(props: dict[str, str], spark_conf: dict[str, str]) -> int:
    """Start everything, block until the query ends or the process is told to stop, then clean up."""
    from pyspark.errors import StreamingQueryException

    from streaming.kafka_io.embedded import start_broker
    from common.config import kafka_options
    from streaming.kafka_io.kafka_clients import chosen_client
    from streaming.monitoring.group_watch import GroupWatch
    from streaming.monitoring.metrics import CoordinatorMetrics
    from streaming.query import QUERY_NAME, spark_session, start_query, stop_between_batches
    from streaming.recovery import checkpoint
    from streaming.recovery.lease import DriverHalt, Lease, LeaseSettings

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    broker = None
    gateway = None
    listener = None
    lease = halt = query = None
    throwaway_checkpoint = None
    try:
        if not props.get("bootstrap.servers"):
            Path("var").mkdir(exist_ok=True)
            broker = start_broker(log_path=Path("var/tansu.log"))
            props["bootstrap.servers"] = broker.bootstrap_servers
            log.info("embedded tansu broker (pid %d) on %s", broker.process.pid, broker.bootstrap_servers)
            if not props.get("topic.requests.rotate.records"):
                props["topic.requests.rotate.records"] = str(EMBEDDED_ROTATE_RECORDS)
        if not props.get("checkpoint.location"):
            if broker is None:
                raise SystemExit("checkpoint.location is required with a Kafka cluster (--checkpoint-location)")
            # The embedded broker keeps nothing across runs, so neither may the checkpoint.
            throwaway_checkpoint = tempfile.mkdtemp(prefix="checkpoint-", dir="var")
            props["checkpoint.location"] = throwaway_checkpoint
        client = {"bootstrap_servers": props["bootstrap.servers"], **_security(props)}
        _reach_topics(client, props, check_compaction=broker is None)
        rebuilding = props["rebuild.from.records"].lower() == "true"
        watch = GroupWatch(props["topic.records"], client, chosen_client(kafka_options(props)))
        # A rebuild reads the records topic, seeds the group watch and makes its loads while the Spark session
        # starts and the lease is watched; nothing else touches the watch until `_rebuild` has waited for that.
        ahead = _read_ahead(client, props, watch) if rebuilding else None
        if broker is not None:  # the embedded default serves unmodified Kafka clients too (gateway/)
            from gateway.front.process import start_gateway

            # its topics, and the group.* settings the gateway applies when it answers the member-id round itself
            shared = {k: v for k, v in props.items() if k.startswith(("topic.", "group."))}
            gateway = start_gateway(broker.bootstrap_servers, shared, log_path=Path("var/gateway.log"))
        # Watching the lease from now on: a live holder shows itself while the session starts. The embedded default
        # (its own broker on a free port, a throwaway checkpoint) has none: no other driver can share its checkpoint,
        # and a renewal slow on a loaded machine halted the driver, and with it the broker and every record it held
        # (issue 37's soak: no answer within 1.6 s at load 28).
        if throwaway_checkpoint is None:
            lease = Lease(client, LeaseSettings.from_properties(props))
        spark = spark_session(spark_conf)
        # PySpark's own Ctrl-C handler calls into the JVM from inside the handler, which breaks the py4j call the
        # main thread is in; a plain KeyboardInterrupt lets the code below stop the query in order.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        checkpoint.check(spark, props)  # before any batch: a checkpoint this release cannot run is refused
        # A standby waits here, rehearsed and warm, until the active driver's lease lapses (streaming.recovery.lease).
        if not rebuilding:
            # Read the records topic (the console's groups) now, while a standby has nothing else to do: a takeover
            # then reads only what was written since, not a million members' records before its first batch.
            try:
                watch.poll()
            except Exception as exc:  # noqa: BLE001 - read again, and reported if it still fails, by the metrics
                log.info("the records topic could not be read yet (%r); the metrics read it once the query runs", exc)
        if lease is not None:
            halt = DriverHalt(spark, lease.settings.key)
            if rebuilding and not lease.held_elsewhere():
                # The loads are published before the lease is taken: publishing a million members' loads (~0.5 GB)
                # kept the broker too busy to answer the lease's renewals, and the driver halted on its own lease
                # before its query started (issue 35, load 15-22). No driver runs the query on this checkpoint now;
                # should one take the lease meanwhile, it has its own loads, and a load of a group it holds is a no-op.
                _rebuild(client, props, watch, ahead)
                rebuilding = False
            lease.acquire(on_standby=lambda: _stand_by(spark, props), on_lost=halt, on_renewed=halt.arm)
        if rebuilding:
            _rebuild(client, props, watch, ahead)
        # Groups are reported from here on: the records topic is read to its end now (or was, by the rebuild),
        # before the first batch.
        listener = CoordinatorMetrics.from_properties(props, client, QUERY_NAME, watch)
        spark.streams.addListener(listener)
        query = start_query(spark, props)
        print(f"group coordinator running: bootstrap.servers={props['bootstrap.servers']} "
              f"requests={props['topic.requests']} responses={props['topic.responses']} "
              f"records={props['topic.records']} dead-letters={props['topic.dead.letters']} "
              f"checkpoint={props['checkpoint.location']}", flush=True)
        if gateway is not None:
            print(f"kafka clients: bootstrap.servers={gateway.bootstrap_servers}", flush=True)
        print(listener.where(), flush=True)
        try:
            # Waiting in Python, not in a py4j call: a Ctrl-C then interrupts a sleep, not a read from the JVM's
            # socket (which py4j logs as an error). awaitTermination returns at once, or raises why the query ended.
            while query.isActive:
                time.sleep(0.5)
            query.awaitTermination()
        except (KeyboardInterrupt, SystemExit):
            log.info("stopping")
        except StreamingQueryException as exc:
            # e.g. data loss with fail.on.data.loss=true: say why plainly, not as a py4j traceback
            log.error("the coordinator query stopped: %s", exc)
            return 1
        finally:
            if listener is not None:
                # Progress events still queued for Python would reach a process on its way out (an ERROR in the
                # JVM's log at every stop), so the listener goes first.
                _quietly(lambda: spark.streams.removeListener(listener))
            _quietly(lambda: stop_between_batches(query))
            if listener is not None:
                # A progress event the JVM had begun to deliver when the listener was removed still reaches it:
                # let it land while this process still answers callbacks.
                _quietly(lambda: spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(5000))
        return 0
    finally:
        # Released (a standby takes over at once) only once this driver's query has certainly stopped.
        if lease is not None and lease.close(release=_stopped(query)) and halt is not None:
            halt.disarm()
        if listener is not None:
            listener.close()
        if gateway is not None:
            gateway.stop()
        if broker is not None:
            # The driver's own Kafka clients (the metrics' group directory) lose their broker now, on purpose.
            logging.getLogger("kafka").setLevel(logging.CRITICAL)
            broker.stop()
            log.info("embedded broker stopped")
        if throwaway_checkpoint:
            shutil.rmtree(throwaway_checkpoint, ignore_errors=True)


def upgrade(props: dict[str, str], spark_conf: dict[str, str], old_checkpoint: str) -> int:
    """`coordinator upgrade`: see `streaming.recovery.upgrade`."""
    from streaming.query import spark_session
    from streaming.recovery.upgrade import upgrade as upgrade_checkpoint

    _reach_topics({"bootstrap_servers": props["bootstrap.servers"], **_security(props)}, props)
    spark = spark_session(spark_conf)
    groups = upgrade_checkpoint(spark, props, old_checkpoint)
    print(f"upgraded: {groups} group(s) from {old_checkpoint} into {props['checkpoint.location']}; run the "
          f"coordinator on it with --checkpoint-location {props['checkpoint.location']}", flush=True)
    return 0


def _reach_topics(client: dict[str, object], props: dict[str, str], check_compaction: bool = True) -> None:
    """The topics created if missing and usable (`common.topics.ensure_topics`), or one line saying that the cluster
    cannot be reached, as `coordinator gateway` says it, instead of a traceback."""
    from kafka.errors import KafkaError

    from common.topics import ensure_topics

    try:
        ensure_topics(client, props, check_compaction=check_compaction)
    except (KafkaError, RuntimeError, OSError) as exc:
        raise SystemExit(f"the coordinator cannot reach the cluster's topics at {client['bootstrap_servers']}: "
                         f"{exc}") from None


def _stopped(query) -> bool:
    """Whether the query has certainly stopped (or never started); not when its JVM cannot be asked."""
    try:
        return query is None or not query.isActive
    except Exception:  # noqa: BLE001 - unknown is not stopped
        return False


def _stand_by(spark, props: dict[str, str]) -> None:
    from streaming.query import rehearse

    checkpoint = props["checkpoint.location"]
    log.info("another driver holds %s; rehearsing the query on a scratch checkpoint", checkpoint)
    try:
        rehearse(spark, props)
    except Exception as exc:  # noqa: BLE001 - a standby that could not rehearse still takes over, only slower
        log.warning("the rehearsal failed (%s); standing by without it", exc)
    print(f"standby: another driver runs the query on {checkpoint}; this one takes over when it stops", flush=True)


def _read_ahead(client: dict[str, object], props: dict[str, str], watch):
    """`streaming.recovery.rebuild.read_ahead` in a thread of its own, seeding `watch`: a future of what it read."""
    from concurrent.futures import ThreadPoolExecutor

    from streaming.recovery.rebuild import read_ahead

    pool = ThreadPoolExecutor(1, thread_name_prefix="rebuild-read-ahead")
    future = pool.submit(read_ahead, client, props["topic.records"], watch.reader, watch.seed)
    pool.shutdown(wait=False)
    return future


def _rebuild(client: dict[str, object], props: dict[str, str], watch, ahead) -> None:
    """The loads published (`streaming.recovery.rebuild.rebuild`) unless the checkpoint holds the state; either way
    only once the read ahead is done, as it seeds the watch the metrics then read."""
    from streaming.recovery.rebuild import checkpoint_has_progress, rebuild

    try:
        read = ahead.result()
    except Exception as exc:  # noqa: BLE001 - the rebuild reads the whole topic itself
        log.warning("rebuild: the read ahead of the lease failed (%r); reading the records topic now", exc)
        read = None
    if checkpoint_has_progress(props["checkpoint.location"]):
        log.info("rebuild requested, but checkpoint %s has progress: it holds the state; not rebuilding",
                 props["checkpoint.location"])
        return
    props["starting.offsets"] = rebuild(client, props["topic.records"], props["topic.requests"], watch.reader,
                                        seen=watch.seed, ahead=read)


def _quietly(action) -> None:
    """Run a shutdown step that may fail because the JVM got the same signal and is already going away."""
    try:
        action()
    except Exception as exc:
        log.debug("during shutdown: %s", exc)


def _security(props: dict[str, str]) -> dict[str, object]:
    settings = job_config.client_config(job_config.kafka_options(props))
    settings.pop("bootstrap_servers")
    return settings


if __name__ == "__main__":
    sys.exit(main())
