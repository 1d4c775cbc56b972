"""The gateway's security options (`coordinator gateway`): SASL mechanisms, authorization, super users, and the
security topics it follows. Kept apart from `gateway.front.cli` so that the command's own wiring stays small."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping

from gateway.security.acl import Authorizer, parse_super_users
from gateway.security.authentication import PLAIN, SCRAM, Authenticator
from gateway.security.sasl import PlainAuthenticator
from gateway.security.topics import SecurityTopics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sasl-mechanisms", metavar="LIST",
                        help=f"SASL mechanisms on the listeners, comma-separated, among {', '.join((PLAIN, *SCRAM))} "
                             "(default: PLAIN with --sasl-users); SCRAM credentials are kept in "
                             "topic.scram.credentials and managed with AlterUserScramCredentials")
    parser.add_argument("--authorization", action="store_true",
                        help="enforce Kafka ACLs (kept in topic.acls, managed with CreateAcls/DeleteAcls) on every "
                             "request")
    parser.add_argument("--super-users", default="", metavar="User:NAME,...",
                        help="principals that may do everything (Kafka's super.users)")
    parser.add_argument("--allow-everyone-if-no-acl-found", action="store_true",
                        help="a resource no ACL names is open to everyone (Kafka's allow.everyone.if.no.acl.found; "
                             "default: closed)")


def check(args: argparse.Namespace) -> None:
    """Refuse, in one line, a flag that means nothing without another: a gateway that starts with it would enforce
    less than its command line says, silently."""
    needs = (("--super-users", bool(args.super_users), "--authorization", args.authorization),
             ("--allow-everyone-if-no-acl-found", args.allow_everyone_if_no_acl_found, "--authorization",
              args.authorization),
             ("--ssl-keyfile", getattr(args, "ssl_keyfile", None) is not None, "--ssl-certfile",
              getattr(args, "ssl_certfile", None) is not None))
    for flag, given, required, present in needs:
        if given and not present:
            raise SystemExit(f"{flag} means nothing without {required}")
    mechanisms = [m.strip().upper() for m in (args.sasl_mechanisms or "").split(",") if m.strip()]
    if args.sasl_users and mechanisms and PLAIN not in mechanisms:
        raise SystemExit("--sasl-users (SASL/PLAIN users) means nothing without PLAIN in --sasl-mechanisms")


def authenticator(args: argparse.Namespace) -> Authenticator | None:
    users: Path | None = args.sasl_users
    mechanisms = [m.strip().upper() for m in (args.sasl_mechanisms or "").split(",") if m.strip()]
    if not mechanisms and users:
        mechanisms = [PLAIN]
    if not mechanisms:
        return None
    try:
        return Authenticator(mechanisms, PlainAuthenticator.from_file(users) if users else None)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def security_topics(args: argparse.Namespace, props: Mapping[str, str], bootstrap_servers: str,
                    kafka_config: Mapping[str, Any], sasl: Authenticator | None) -> SecurityTopics | None:
    """The security topics' follower when the gateway needs them (authorization, or SCRAM on its listeners), not
    yet started."""
    if not args.authorization and not (sasl and sasl.scram):
        return None
    try:
        super_users = parse_super_users(args.super_users)
    except ValueError as exc:
        raise SystemExit(f"--super-users: {exc}") from None
    return SecurityTopics(bootstrap_servers, kafka_config, props["topic.acls"],
                          props["topic.scram.credentials"],
                          Authorizer((), super_users, args.allow_everyone_if_no_acl_found),
                          replication_factor=int(props["topic.replication.factor"]))


def start(security: SecurityTopics | None, sasl: Authenticator | None, authorization: bool, props: Mapping[str, str],
          bootstrap_servers: str, kafka_config: Mapping[str, Any]) -> None:
    """Read the security topics to their end (blocking; before the gateway listens), and with authorization on,
    say who the cluster lets bypass the gateway."""
    if security is None:
        return
    security.start(create=props["topic.create"].lower() == "true")
    if sasl is not None:
        sasl.credentials = security.credential
    if authorization:
        check_job_topics(bootstrap_servers, kafka_config, props)


def check_job_topics(bootstrap_servers: str, kafka_config: Mapping[str, Any], props: Mapping[str, str]) -> str:
    """Who the cluster lets write the control topic and read the records topic, where it tells (DescribeAcls):
    only the job's and the gateways' principals should, or a client can bypass the gateway and its ACLs. Logs
    and returns what it found (`docs/gateway.md`, "The job's own topics")."""
    import logging

    from kafka import KafkaAdminClient
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePatternFilter, ResourceType)

    log = logging.getLogger("gateway")
    checks = ((props["topic.requests"], "write", {ACLOperation.WRITE, ACLOperation.ALL}),
              (props["topic.records"], "read", {ACLOperation.READ, ACLOperation.ALL}))
    findings = []
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers, **kafka_config,
                                 client_id="groupcoord-gateway-check")
    except Exception as exc:  # noqa: BLE001 - a check, not a requirement
        log.info("cannot check the job's topics' ACLs: %s", exc)
        return f"cannot check the job's topics' ACLs: {exc}"
    try:
        for topic, verb, operations in checks:
            acl_filter = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ALLOW,
                                   ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.MATCH))
            try:
                acls, error = admin.describe_acls(acl_filter)
            except Exception as exc:  # noqa: BLE001 - clusters without an authorizer, or tansu's unparseable answer
                message = (f"the cluster does not tell its ACLs ({type(exc).__name__}): check by hand who may "
                           f"{checks[0][1]} {checks[0][0]} and {checks[1][1]} {checks[1][0]}")
                log.info(message)
                return message
            principals = sorted({a.principal for a in acls if a.operation in operations})
            allowed = ", ".join(principals) or "no ALLOW binding (a cluster without an authorizer lets everyone)"
            findings.append(f"may {verb} {topic}: {allowed}")
            if "User:*" in principals:
                log.warning("every principal may %s %s: clients can bypass the gateway", verb, topic)
    finally:
        admin.close()
    message = "; ".join(findings)
    log.info("the job's topics: %s", message)
    return message
