"""`coordinator gateway`'s command line: what it refuses before it connects to anything, and what its levers
build."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from types import SimpleNamespace

import pytest

from common import config as job_config
from gateway.fast.fast_path import FastPath
from gateway.fast.member_id_round import MemberIdRound
from gateway.front import cli
from gateway.front.server import Gateway, GatewaySettings
from gateway.upstream.appender import Appender
from gateway.upstream.broker import UpstreamSecurity


def test_a_flag_that_means_nothing_without_another_is_refused_at_start_in_one_line(tmp_path):
    """A gateway that started with these would enforce less than its command line says, silently (the super user
    of a gateway without authorization: no ACL is checked at all)."""
    users = tmp_path / "users.properties"
    users.write_text("admin=admin-secret\n")
    refused = {
        ("--sasl-users", str(users), "--super-users", "User:admin"):
            "--super-users means nothing without --authorization",
        ("--allow-everyone-if-no-acl-found",): "--allow-everyone-if-no-acl-found means nothing without --authorization",
        ("--ssl-keyfile", str(users)): "--ssl-keyfile means nothing without --ssl-certfile",
        ("--sasl-users", str(users), "--sasl-mechanisms", "SCRAM-SHA-256"):
            "--sasl-users (SASL/PLAIN users) means nothing without PLAIN in --sasl-mechanisms",
    }
    for flags, message in refused.items():
        with pytest.raises(SystemExit) as exited:
            cli.main(["--bootstrap-servers", "127.0.0.1:1", *flags])  # nothing listens there: refused before
        assert exited.value.code == message


def settings(*flags: str):
    """The gateway's settings from its command line (nothing is started)."""
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--bootstrap-servers", "127.0.0.1:1", *flags])
    return cli._settings(args, job_config.load(None, {"bootstrap.servers": "127.0.0.1:1"}))


def test_each_lever_is_one_flag_and_one_setting_off_by_default():
    """Where the gateway answers itself, one flag leaves it to the coordinator, under the same name in the settings
    (docs/gateway.md): `--fast-answers-by-coordinator` (heartbeats, commits, fetches from views),
    `--offset-fetch-by-coordinator` (fetches alone), `--member-id-round-by-coordinator` (KIP-394's round)."""
    levers = ("fast_answers_by_coordinator", "offset_fetch_by_coordinator", "member_id_round_by_coordinator")
    default = settings()
    assert [getattr(default, lever) for lever in levers] == [False, False, False]
    for lever in levers:
        pulled = settings("--" + lever.replace("_", "-"))
        assert [getattr(pulled, other) for other in levers] == [other == lever for other in levers]


def test_the_view_bound_is_a_bound_and_not_a_switch(capsys):
    assert settings("--view-bound-ms", "500").view_bound_ms == 500
    for value in ("0", "-1"):
        with pytest.raises(SystemExit):
            settings("--view-bound-ms", value)
        assert "--fast-answers-by-coordinator" in capsys.readouterr().err


def test_each_tuning_flag_has_one_default_the_settings_own():
    """A tuning flag left out leaves its `GatewaySettings` field at the field's default (the command line keeps no
    second copy of it, which could drift); given, it sets the field of its name."""
    defaults = {f.name: f.default for f in dataclasses.fields(GatewaySettings)}
    left_out = settings()
    for name in cli.TUNED:
        assert getattr(left_out, name) == defaults[name], name
        value = "7" if name != "profile_interval_s" else "0.5"
        assert getattr(settings("--" + name.replace("_", "-"), value), name) == float(value), name


def test_commits_answered_from_views_take_the_coordinator_s_metadata_limit():
    """`offset.metadata.max.bytes` is the coordinator's key: the gateway reads it with the rest of the coordinator's
    configuration, not with a default of its own."""
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--bootstrap-servers", "127.0.0.1:1"])
    for props, limit in (({}, 4096), ({"offset.metadata.max.bytes": "100"}, 100)):
        loaded = job_config.load(None, {"bootstrap.servers": "127.0.0.1:1", **props})
        loop = asyncio.new_event_loop()
        appender = Appender("127.0.0.1:1", "requests", UpstreamSecurity(), loop)
        try:
            fast = cli.fast_path(cli._settings(args, loaded), SimpleNamespace(appender=appender), loop)
            assert fast.max_metadata_bytes == limit
        finally:
            appender.close(timeout_s=0)
            loop.close()


def test_the_levers_decide_what_the_gateway_builds():
    """No fast path (and no view follower) with `--fast-answers-by-coordinator`; no member-id round with
    `--member-id-round-by-coordinator`; the fast path keeps `--offset-fetch-by-coordinator` under its name. Nothing
    connects: the producer only tries to, and is closed; the follower is not started."""
    loop = asyncio.new_event_loop()
    appender = Appender("127.0.0.1:1", "requests", UpstreamSecurity(), loop)
    coordinator = SimpleNamespace(appender=appender, client_id="cli-test")
    try:
        assert cli.fast_path(settings("--fast-answers-by-coordinator"), coordinator, loop) is None
        for flags, by_coordinator in (((), False), (("--offset-fetch-by-coordinator",), True)):
            fast = cli.fast_path(settings(*flags), coordinator, loop)
            assert isinstance(fast, FastPath) and fast.offset_fetch_by_coordinator is by_coordinator
        assert Gateway(settings("--member-id-round-by-coordinator"), coordinator).member_id_round is None
        assert isinstance(Gateway(settings(), coordinator).member_id_round, MemberIdRound)
    finally:
        appender.close(timeout_s=0)
        loop.close()
