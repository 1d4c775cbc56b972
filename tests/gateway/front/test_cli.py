"""`coordinator gateway`'s command line: what it refuses before it connects to anything."""

from __future__ import annotations

import pytest

from gateway.front import cli


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
