"""`coordinator gateway`: the Kafka-protocol front door, so that unmodified Kafka clients use the coordinator.

Clients bootstrap from `--listen HOST:PORT`; the gateway forwards what is not a group request to the Kafka cluster
(`--bootstrap-servers`) and turns group requests into control-topic requests (topic names and `kafka.*` client
settings from conf/coordinator.properties, `--config` and `--set`, as `coordinator run` reads them). Prints
`gateway listening: bootstrap.servers=HOST:PORT` when it accepts connections; runs until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import ssl
import sys
from pathlib import Path
from typing import Any

from common import config as job_config
from common import logs
from gateway.security import cli as security_cli

log = logging.getLogger("gateway")

GIL_SWITCH_INTERVAL_S = 0.0005
"""How long a thread of the gateway's may hold the interpreter while another waits for it (Python's default: 5 ms).
The event loop answers every request; beside it, threads run Python code (the view follower's and the responses
reader's Kafka consumers), and with the default the loop waited up to 5 ms for one
of them before answering. A commit's p50 and p99, and a forwarded produce's, fell by a fifth to a third at load 8-15
with 0.5 ms (two gateways of each in one run, docs/gateway.md, "Every client's speed")."""


TUNED = ("request_timeout_ms", "response_fetch_wait_ms", "view_bound_ms", "view_bound_max_ms", "liveness_interval_ms",
         "profile_interval_s")
"""The flags that tune a `GatewaySettings` field of the same name: given, they set it; left out, the field keeps its
default, which is the one default (docs/gateway.md gives them)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", help="the Kafka cluster (default: bootstrap.servers of the config)")
    parser.add_argument("--listen", default="127.0.0.1:9092", metavar="HOST:PORT",
                        help="the bootstrap listener; brokers get PORT+1, PORT+2, ... (0: ephemeral ports)")
    parser.add_argument("--advertised-host", help="the host name clients reach the listeners at "
                                                  "(default: the listen host, or this host's name for 0.0.0.0)")
    parser.add_argument("--config", type=Path, help="properties file over conf/coordinator.properties")
    parser.add_argument("--set", dest="props", action="append", default=[], metavar="KEY=VALUE",
                        help="any coordinator.properties key (repeatable): topic.requests, kafka.* ...")
    parser.add_argument("--sasl-users", type=Path, metavar="FILE",
                        help="SASL/PLAIN on the listeners, users from FILE (username=password lines)")
    security_cli.add_arguments(parser)
    parser.add_argument("--ssl-certfile", type=Path, help="TLS on the listeners: certificate chain (PEM)")
    parser.add_argument("--ssl-keyfile", type=Path, help="TLS on the listeners: private key (PEM)")
    parser.add_argument("--request-timeout-ms", type=int, default=argparse.SUPPRESS,
                        help="how long a group request other than JoinGroup waits for the coordinator")
    parser.add_argument("--response-fetch-wait-ms", type=int, default=argparse.SUPPRESS,
                        help="how long the broker may hold the gateway's fetch of the response topic; lower it "
                             "against a broker that holds a fetch this long even when data arrives (tansu)")
    parser.add_argument("--member-id-round-by-coordinator", action="store_true",
                        help="leave JoinGroup's member-id round (KIP-394) to the coordinator's micro-batch instead of "
                             "answering it here at once (docs/gateway.md)")
    parser.add_argument("--fast-answers-by-coordinator", action="store_true",
                        help="leave every heartbeat, commit and fetch to the coordinator's micro-batch instead of "
                             "answering them from the groups' views; the gateway then follows no views "
                             "(docs/gateway.md, \"Fast answers\")")
    parser.add_argument("--view-bound-ms", type=_positive, default=argparse.SUPPRESS,
                        help="answer heartbeats and commits from a group's view while the views are complete and the "
                             "coordinator alive as of at most this long ago, or 2.5 times the query's measured "
                             "pace where that is longer (docs/gateway.md)")
    parser.add_argument("--view-bound-max-ms", type=_positive, default=argparse.SUPPRESS,
                        help="how far the view bound may follow the query's pace when its batches are slow; "
                             "at or below --view-bound-ms the bound is fixed (docs/gateway.md)")
    parser.add_argument("--offset-fetch-by-coordinator", action="store_true",
                        help="leave every OffsetFetch to the coordinator's micro-batch instead of answering it from a "
                             "Stable group's view where that holds the group's offsets now (docs/gateway.md)")
    parser.add_argument("--processes", type=int, default=1, metavar="N",
                        help="N gateway processes on the same listeners (SO_REUSEPORT), to use N cores "
                             "(docs/gateway.md, \"Several processes\")")
    parser.add_argument("--profile-interval-s", type=float, default=argparse.SUPPRESS, metavar="S",
                        help="log every S seconds the requests of each kind (API, version), where each was answered "
                             "(the gateway, a group's view, the coordinator, the broker) and how long it took; 0: off")
    parser.add_argument("--liveness-interval-ms", type=int, default=argparse.SUPPRESS,
                        help="the longest a heartbeat answered from a view waits before the coordinator hears of it "
                             "(at most a third of the group's smallest session timeout)")


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value} (--fast-answers-by-coordinator turns the "
                                         f"answers from views off)")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="coordinator gateway", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    security_cli.check(args)
    logs.configure()
    overrides = job_config.parse_assignments(args.props)
    if args.bootstrap_servers:
        overrides["bootstrap.servers"] = args.bootstrap_servers
    props = job_config.load(args.config, overrides)
    if not props.get("bootstrap.servers"):
        raise SystemExit("--bootstrap-servers is required")
    if args.processes < 1:
        raise SystemExit("--processes must be at least 1")
    if args.processes > 1 and getattr(args, "worker", None) is None:
        from gateway.front.processes import supervise

        host, port, advertised = _listen(args)
        return supervise(args, host, port, advertised)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    settings = _settings(args, props)
    security = security_cli.security_topics(args, props, settings.bootstrap_servers, settings.kafka_config,
                                            settings.authenticator)
    try:
        asyncio.run(_serve(settings, props, security))
    except KeyboardInterrupt:
        pass
    return 0


def _settings(args: argparse.Namespace, props: dict[str, str]) -> Any:
    from gateway.front.processes import Shared
    from gateway.front.server import GatewaySettings
    from state.api import CoordinatorConfig

    host, port, advertised = _listen(args)
    worker = getattr(args, "worker", None)
    kafka_config = job_config.client_config(job_config.kafka_options(props))
    kafka_config.pop("bootstrap_servers")
    listener_ssl = None
    if args.ssl_certfile:
        listener_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        listener_ssl.load_cert_chain(args.ssl_certfile, args.ssl_keyfile)
    return GatewaySettings(
        bootstrap_servers=props["bootstrap.servers"], listen_host=host, listen_port=port,
        advertised_host=advertised, requests_topic=props["topic.requests"], responses_topic=props["topic.responses"],
        kafka_config=kafka_config, upstream=upstream_security(kafka_config),
        authenticator=security_cli.authenticator(args), authorization=args.authorization,
        ssl=listener_ssl, views_topic=props["topic.views"],
        fast_answers_by_coordinator=args.fast_answers_by_coordinator,
        offset_fetch_by_coordinator=args.offset_fetch_by_coordinator,
        member_id_round_by_coordinator=args.member_id_round_by_coordinator,
        coordinator_config=CoordinatorConfig.from_properties(props),
        **{name: getattr(args, name) for name in TUNED if hasattr(args, name)},
        shared=None if worker is None else Shared(Path(worker[0]), worker[1], worker[3]),
        process_index=0 if worker is None else worker[2],
    )


def _listen(args: argparse.Namespace) -> tuple[str, int, str]:
    """(host, port, advertised host) of `--listen` and `--advertised-host`."""
    host, _, port = args.listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port), args.advertised_host or (socket.getfqdn() if host in ("0.0.0.0", "::") else host)


def upstream_security(kafka_config: dict[str, Any]) -> Any:
    """The gateway's own connections to the brokers, from the same kafka-python settings its control-topic
    clients use (`kafka.security.protocol`, `kafka.ssl.cafile`, `kafka.sasl.plain.username`, ...)."""
    from gateway.upstream.broker import UpstreamSecurity

    protocol = str(kafka_config.get("security_protocol", "PLAINTEXT")).upper()
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(cafile=kafka_config.get("ssl_cafile"))
        if kafka_config.get("ssl_check_hostname") in (False, "false", "False"):
            context.check_hostname = False
        if kafka_config.get("ssl_certfile"):
            context.load_cert_chain(kafka_config["ssl_certfile"], kafka_config.get("ssl_keyfile"))
    sasl = None
    if protocol.startswith("SASL_"):
        mechanism = str(kafka_config.get("sasl_mechanism", "PLAIN")).upper()
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise SystemExit(f"the gateway reaches brokers with SASL/PLAIN or SCRAM, not {mechanism}")
        sasl = (mechanism, str(kafka_config["sasl_plain_username"]), str(kafka_config["sasl_plain_password"]))
    return UpstreamSecurity(ssl=context, sasl=sasl)


def fast_path(settings: Any, coordinator: Any, loop: asyncio.AbstractEventLoop) -> Any:
    """The fast path of `settings` (None with `fast_answers_by_coordinator`); its view follower is not started yet."""
    from gateway.fast.fast_path import FastPath, Heartbeats
    from gateway.fast.holds import Holds
    from gateway.fast.views import ViewFollower

    if settings.fast_answers_by_coordinator:
        return None
    follower = ViewFollower(settings.bootstrap_servers, settings.views_topic, settings.requests_topic,
                            settings.kafka_config, settings.view_bound_ms, settings.view_bound_max_ms)
    # the gateway's writes follow the generations of the requests topic the query's marks name (common.generations)
    coordinator.appender.follow_generations()
    follower.on_generation = lambda topic: loop.call_soon_threadsafe(coordinator.appender.move_to, topic)
    return FastPath(follower, coordinator.appender, Heartbeats(coordinator.appender, settings.liveness_interval_ms,
                                                               loop),
                    settings.coordinator_config.offset_metadata_max_bytes,
                    offset_fetch_by_coordinator=settings.offset_fetch_by_coordinator,
                    holds=None if settings.shared is None else Holds(settings.shared.holds, settings.shared.processes,
                                                                     settings.process_index),
                    # a transaction's EndTxn may reach another process, which would not hold it (`txn_settled`)
                    coordinator=coordinator if settings.shared is None else None)


async def _serve(settings: Any, props: dict[str, str], security: Any) -> None:
    from kafka.errors import KafkaError

    from common.topics import ensure_topics
    from gateway.upstream.coordinator import CoordinatorClient
    from gateway.front.server import Gateway

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def connect() -> CoordinatorClient:
        # As `coordinator run`: the topics are created if missing (topic.create), and must be usable.
        ensure_topics({"bootstrap_servers": settings.bootstrap_servers, **settings.kafka_config}, props)
        security_cli.start(security, settings.authenticator, settings.authorization, props,
                           settings.bootstrap_servers, settings.kafka_config)
        return CoordinatorClient.connect(settings.bootstrap_servers, settings.requests_topic,
                                         settings.responses_topic, settings.kafka_config, loop,
                                         settings.response_fetch_wait_ms, upstream=settings.upstream)

    try:
        coordinator = await loop.run_in_executor(None, connect)
    except (KafkaError, RuntimeError, OSError) as exc:
        raise SystemExit(f"the gateway cannot reach the cluster's topics: {exc}") from None
    fast = fast_path(settings, coordinator, loop)
    if fast is not None:
        fast.follower.start()
    gateway = Gateway(settings, coordinator, security, fast)
    try:
        try:
            await gateway.start()
        except (ConnectionError, OSError) as exc:
            raise SystemExit(f"the gateway cannot start: {exc}") from None
        print(f"gateway listening: bootstrap.servers={gateway.bootstrap_address}", flush=True)
        await stop.wait()
        log.info("stopping")
    finally:
        await gateway.close()
        await loop.run_in_executor(None, coordinator.close)
        if security is not None:
            await loop.run_in_executor(None, security.close)

if __name__ == "__main__":
    sys.exit(main())
