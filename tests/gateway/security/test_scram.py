"""SCRAM at the gateway without a network: the stored credential, KIP-554's rules, and the server's exchange
(RFC 7677's published exchange replayed, scramp's client against it, and each way an exchange must fail)."""

from __future__ import annotations

import base64

import pytest
import scramp

from gateway.security.scram import (DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL,
                           UNSUPPORTED_SASL_MECHANISM, AuthenticationFailed, Deletion, ScramCredential,
                           ScramExchange, Upsertion, alter, describe, from_password, salted_password)

RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def test_rfc7677_exchange_replayed_byte_for_byte():
    credential = from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT)
    exchange = ScramExchange("SCRAM-SHA-256", lambda user, mech: credential if user == "user" else None,
                             server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert exchange.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == \
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert exchange.evaluate(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                             b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=") == \
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert exchange.principal == "User:user"


def test_the_stored_credential_is_scramps_and_never_the_password():
    salt, stored, server, iterations = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info(
        "secret", iteration_count=8192, salt=b"0123456789abcdef")
    credential = from_password("SCRAM-SHA-512", "secret", 8192, b"0123456789abcdef")
    assert credential == ScramCredential(salt, stored, server, iterations)
    assert b"secret" not in repr(credential.to_json()).encode()
    assert ScramCredential.from_json(credential.to_json()) == credential


def lookup(password: str = "alice-secret", mechanism: str = "SCRAM-SHA-512"):
    credential = from_password(mechanism, password)
    return lambda user, mech: credential if (user, mech) == ("alice", mechanism) else None


def run(exchange: ScramExchange, client: scramp.ScramClient) -> None:
    client.set_server_first(exchange.evaluate(client.get_client_first().encode()).decode())
    client.set_server_final(exchange.evaluate(client.get_client_final().encode()).decode())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_client_with_the_password_is_authenticated(mechanism):
    exchange = ScramExchange(mechanism, lookup(mechanism=mechanism))
    run(exchange, scramp.ScramClient([mechanism], "alice", "alice-secret"))
    assert exchange.complete and exchange.principal == "User:alice"


@pytest.mark.parametrize("user, password", [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_or_unknown_user_fails(user, password):
    with pytest.raises(AuthenticationFailed):
        run(ScramExchange("SCRAM-SHA-512", lookup()), scramp.ScramClient(["SCRAM-SHA-512"], user, password))


def test_a_final_message_with_another_exchanges_nonce_fails():
    first = ScramExchange("SCRAM-SHA-512", lookup())
    client = scramp.ScramClient(["SCRAM-SHA-512"], "alice", "alice-secret")
    recorded_first = client.get_client_first().encode()
    client.set_server_first(first.evaluate(recorded_first).decode())
    recorded_final = client.get_client_final().encode()
    second = ScramExchange("SCRAM-SHA-512", lookup())  # a replay on a new connection: a new server nonce
    second.evaluate(recorded_first)
    with pytest.raises(AuthenticationFailed):
        second.evaluate(recorded_final)


def test_a_final_message_first_or_garbage_fails():
    with pytest.raises(AuthenticationFailed):
        ScramExchange("SCRAM-SHA-512", lookup()).evaluate(b"c=biws,r=abc,p=dHzbZapWIk4jUhN=")
    with pytest.raises(AuthenticationFailed):
        ScramExchange("SCRAM-SHA-512", lookup()).evaluate(b"\xff\xfe")


def test_an_authorization_id_fails():
    with pytest.raises(AuthenticationFailed, match="authzid"):
        ScramExchange("SCRAM-SHA-512", lookup()).evaluate(b"n,a=admin,n=alice,r=abcdefgh")


# -- AlterUserScramCredentials / DescribeUserScramCredentials (KIP-554) --------------------------------------------


def upsert(name: str, mechanism: int = 2, iterations: int = 8192) -> Upsertion:
    salt = b"salt-of-" + name.encode()
    return Upsertion(name, mechanism, iterations, salt,
                     salted_password({1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(mechanism, "SCRAM-SHA-512"),
                                     "pw", salt, iterations))


def test_alter_applies_kafkas_rules():
    current = {("carol", "SCRAM-SHA-256"): from_password("SCRAM-SHA-256", "pw"),
               ("erin", "SCRAM-SHA-256"): from_password("SCRAM-SHA-256", "pw")}
    results, changes = alter(current, [Deletion("carol", 1), Deletion("dave", 1), Deletion("erin", 1),
                                       Deletion("erin", 1)],
                             [upsert("alice"), upsert("bob", iterations=1000), upsert("bob2", iterations=20000),
                              upsert("", 2), upsert("frank", 9), upsert("alice")])
    by_user = {user: code for user, code, _ in results}
    assert by_user == {"carol": 0, "dave": RESOURCE_NOT_FOUND, "erin": DUPLICATE_RESOURCE,
                       "alice": DUPLICATE_RESOURCE, "bob": UNACCEPTABLE_CREDENTIAL, "bob2": UNACCEPTABLE_CREDENTIAL,
                       "": UNACCEPTABLE_CREDENTIAL, "frank": UNSUPPORTED_SASL_MECHANISM}
    assert changes == {("carol", "SCRAM-SHA-256"): None}


def test_an_upsertion_stores_the_keys_a_login_verifies():
    _, changes = alter({}, [], [upsert("alice")])
    exchange = ScramExchange("SCRAM-SHA-512", lambda user, mech: changes.get((user, mech)))
    run(exchange, scramp.ScramClient(["SCRAM-SHA-512"], "alice", "pw"))
    assert exchange.principal == "User:alice"


def test_describe():
    current = {("alice", "SCRAM-SHA-256"): from_password("SCRAM-SHA-256", "pw", 4096),
               ("alice", "SCRAM-SHA-512"): from_password("SCRAM-SHA-512", "pw", 8192),
               ("bob", "SCRAM-SHA-512"): from_password("SCRAM-SHA-512", "pw", 8192)}
    everyone = describe(current, None)
    assert [(r["user"], r["error_code"], r["credential_infos"]) for r in everyone] == [
        ("alice", 0, [{"mechanism": 1, "iterations": 4096}, {"mechanism": 2, "iterations": 8192}]),
        ("bob", 0, [{"mechanism": 2, "iterations": 8192}])]
    named = describe(current, ["bob", "zed", "bob"])
    assert [(r["user"], r["error_code"]) for r in named] == [("bob", DUPLICATE_RESOURCE), ("zed", RESOURCE_NOT_FOUND)]
