"""The authorizer's matching rules, as Kafka's own authorizer tests state them (StandardAuthorizerTest and
AuthorizerTest: their bindings, actions and expected answers, ported as facts about `gateway.security.acl`)."""

from __future__ import annotations

import pytest

from gateway.security.acl import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, Authorizer, InvalidAcl,
                         PatternType, ResourceType, new_binding, parse_super_users)
from gateway.security.acl import _acl_result as acl_result

Op, Perm, Pat, Res = AclOperation, AclPermissionType, PatternType, ResourceType
A, D = True, False
LOCAL = "10.0.0.5"


def acl(rtype: Res, name: str, pattern: Pat, principal: str, host: str, op: Op, perm: Perm) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def answers(authorizer: Authorizer, user: str, actions: list[tuple[Op, Res, str]], host: str = LOCAL) -> list[bool]:
    return [authorizer.authorize(f"User:{user}", host, op, rtype, name) for op, rtype, name in actions]


def standard(*bindings: AclBinding) -> Authorizer:
    """StandardAuthorizerTest's `createAndInitializeStandardAuthorizer`: super user `superman`."""
    return Authorizer(bindings, super_users={"User:superman"})


# -- allow.everyone.if.no.acl.found ----------------------------------------------------------------------------


@pytest.mark.parametrize("allow_everyone, topic2", [(True, A), (False, D)])
def test_allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls(allow_everyone, topic2):
    authorizer = Authorizer([acl(Res.TOPIC, "topic1", Pat.LITERAL, "User:Alice", "*", Op.READ, Perm.ALLOW)],
                            super_users={"User:alice", "User:chris"}, allow_everyone_if_no_acl_found=allow_everyone)
    assert answers(authorizer, "Bob", [(Op.READ, Res.TOPIC, "topic1"), (Op.READ, Res.TOPIC, "topic2")]) \
        == [D, topic2]


def test_no_acl_found_denies_by_default():
    assert answers(Authorizer(), "alice", [(Op.READ, Res.TOPIC, "foo")]) == [D]


def test_super_users_parse_as_kafka_reads_super_users():
    assert parse_super_users("") == frozenset()
    assert parse_super_users("User:bob;User:alice ") == {"User:bob", "User:alice"}
    assert parse_super_users(";  User:bob  ,  User:alice ") == {"User:bob", "User:alice"}
    with pytest.raises(ValueError, match="principalType:principalName but got bob"):
        parse_super_users("bob;:alice")


# -- a binding against one action (StandardAuthorizerData.findResult) --------------------------------------------


def foo(op: Op, perm: Perm) -> AclBinding:
    return acl(Res.TOPIC, "foo_", Pat.PREFIXED, "User:bob", "*", op, perm)


def bar(op: Op, perm: Perm) -> AclBinding:
    return acl(Res.GROUP, "bar", Pat.LITERAL, "User:*", "*", op, perm)


def one(binding: AclBinding, user: str, op: Op, rtype: Res, name: str) -> bool | None:
    """Kafka's `findResult`: what this one binding says of the action (True allow, False deny, None: it does not
    apply), for a resource its pattern matches."""
    assert binding.resource_type == rtype and binding.matches_name(name)
    return acl_result(binding, f"User:{user}", LOCAL, op)


def test_implication_of_describe_by_allow_only():
    for op in (Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert one(foo(op, Perm.ALLOW), "bob", Op.DESCRIBE, Res.TOPIC, "foo_bar") is True
    assert one(foo(Op.CREATE, Perm.ALLOW), "bob", Op.DESCRIBE, Res.TOPIC, "foo_bar") is None
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):  # deny ACLs don't imply
        assert one(foo(op, Perm.DENY), "bob", Op.DESCRIBE, Res.TOPIC, "foo_bar") is None
    assert one(foo(Op.DESCRIBE, Perm.DENY), "bob", Op.DESCRIBE, Res.TOPIC, "foo_bar") is False
    for op in (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS):
        assert one(foo(op, Perm.ALLOW), "bob", Op.DESCRIBE_CONFIGS, Res.TOPIC, "foo_bar") is True
    assert one(foo(Op.ALTER_CONFIGS, Perm.DENY), "bob", Op.DESCRIBE_CONFIGS, Res.TOPIC, "foo_bar") is None
    assert one(foo(Op.ALTER_CONFIGS, Perm.DENY), "bob", Op.ALTER_CONFIGS, Res.TOPIC, "foo_bar") is False


def test_principal_matching():
    assert one(foo(Op.READ, Perm.ALLOW), "bob", Op.READ, Res.TOPIC, "foo_bar") is True
    assert one(foo(Op.READ, Perm.ALLOW), "alice", Op.READ, Res.TOPIC, "foo_bar") is None
    assert one(bar(Op.READ, Perm.DENY), "alice", Op.READ, Res.GROUP, "bar") is False  # User:* matches anyone


# -- sets of bindings ---------------------------------------------------------------------------------------------


def test_simple_authorizations():
    authorizer = standard(foo(Op.READ, Perm.ALLOW), foo(Op.WRITE, Perm.ALLOW), bar(Op.DESCRIBE_CONFIGS, Perm.ALLOW),
                          bar(Op.ALTER_CONFIGS, Perm.ALLOW))
    assert answers(authorizer, "bob", [(Op.READ, Res.TOPIC, "foo_")]) == [A]
    assert answers(authorizer, "fred", [(Op.ALTER_CONFIGS, Res.GROUP, "bar")]) == [A]


def test_deny_precedence_with_operation_all():
    authorizer = standard(acl(Res.TOPIC, "foo", Pat.LITERAL, "User:alice", "*", Op.ALL, Perm.DENY),
                          acl(Res.TOPIC, "foo", Pat.PREFIXED, "User:alice", "*", Op.READ, Perm.ALLOW),
                          acl(Res.TOPIC, "foo", Pat.LITERAL, "User:*", "*", Op.ALL, Perm.DENY),
                          acl(Res.TOPIC, "foo", Pat.PREFIXED, "User:*", "*", Op.DESCRIBE, Perm.ALLOW))
    assert answers(authorizer, "alice", [(Op.WRITE, Res.TOPIC, "foo"), (Op.READ, Res.TOPIC, "foo"),
                                         (Op.DESCRIBE, Res.TOPIC, "foo"), (Op.READ, Res.TOPIC, "foobar")]) \
        == [D, D, D, A]
    assert answers(authorizer, "bob", [(Op.DESCRIBE, Res.TOPIC, "foo"), (Op.READ, Res.TOPIC, "foo"),
                                       (Op.WRITE, Res.TOPIC, "foo"), (Op.DESCRIBE, Res.TOPIC, "foobaz"),
                                       (Op.READ, Res.TOPIC, "foobaz")]) == [D, D, D, A, D]


def test_topic_acl_with_operation_all():
    authorizer = standard(acl(Res.TOPIC, "foo", Pat.LITERAL, "User:*", "*", Op.ALL, Perm.ALLOW),
                          acl(Res.TOPIC, "bar", Pat.PREFIXED, "User:alice", "*", Op.ALL, Perm.ALLOW),
                          acl(Res.TOPIC, "baz", Pat.LITERAL, "User:bob", "*", Op.ALL, Perm.ALLOW))
    assert answers(authorizer, "alice", [(Op.WRITE, Res.TOPIC, "foo"), (Op.DESCRIBE_CONFIGS, Res.TOPIC, "bar"),
                                         (Op.DESCRIBE, Res.TOPIC, "baz")]) == [A, A, D]
    assert answers(authorizer, "bob", [(Op.WRITE, Res.TOPIC, "foo"), (Op.READ, Res.TOPIC, "bar"),
                                       (Op.DESCRIBE, Res.TOPIC, "baz")]) == [A, D, A]
    assert answers(authorizer, "malory", [(Op.DESCRIBE, Res.TOPIC, "foo"), (Op.WRITE, Res.TOPIC, "bar"),
                                          (Op.READ, Res.TOPIC, "baz")]) == [A, D, D]


def test_host_address_acls():
    host1, host2 = "192.168.1.1", "192.168.1.2"
    authorizer = standard(acl(Res.TOPIC, "foo", Pat.LITERAL, "User:alice", host1, Op.READ, Perm.DENY),
                          acl(Res.TOPIC, "foo", Pat.LITERAL, "User:alice", "*", Op.READ, Perm.ALLOW),
                          acl(Res.TOPIC, "bar", Pat.LITERAL, "User:bob", host2, Op.READ, Perm.ALLOW),
                          acl(Res.TOPIC, "bar", Pat.LITERAL, "User:*", LOCAL, Op.DESCRIBE, Perm.ALLOW))
    actions = [(Op.READ, Res.TOPIC, "foo"), (Op.READ, Res.TOPIC, "bar"), (Op.DESCRIBE, Res.TOPIC, "bar")]
    assert answers(authorizer, "alice", actions, LOCAL) == [A, D, A]
    assert answers(authorizer, "alice", actions, host1) == [D, D, D]
    assert answers(authorizer, "alice", actions, host2) == [A, D, D]
    assert answers(authorizer, "bob", actions, LOCAL) == [D, D, A]
    assert answers(authorizer, "bob", actions, host1) == [D, D, D]
    assert answers(authorizer, "bob", actions, host2) == [D, A, A]


MANY = (acl(Res.TOPIC, "green2", Pat.LITERAL, "User:*", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "green", Pat.PREFIXED, "User:bob", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "betamax4", Pat.LITERAL, "User:bob", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "betamax", Pat.LITERAL, "User:bob", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "beta", Pat.PREFIXED, "User:*", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "alpha", Pat.PREFIXED, "User:*", "*", Op.READ, Perm.ALLOW),
        acl(Res.TOPIC, "alp", Pat.PREFIXED, "User:bob", "*", Op.READ, Perm.DENY),
        acl(Res.GROUP, "*", Pat.LITERAL, "User:bob", "*", Op.WRITE, Perm.ALLOW),
        acl(Res.GROUP, "wheel", Pat.LITERAL, "User:*", "*", Op.WRITE, Perm.DENY))


def test_authorization_with_many_acls():
    authorizer = standard(*MANY)
    assert answers(authorizer, "bob", [(Op.READ, Res.TOPIC, "green1"), (Op.WRITE, Res.GROUP, "wheel")]) == [A, D]
    assert answers(authorizer, "bob", [(Op.READ, Res.TOPIC, "alpha"), (Op.WRITE, Res.GROUP, "arbitrary"),
                                       (Op.READ, Res.TOPIC, "ala")]) == [D, A, D]


def test_super_users_pass_everything_even_a_deny():
    authorizer = Authorizer([*MANY, acl(Res.TOPIC, "*", Pat.LITERAL, "User:*", "*", Op.ALL, Perm.DENY)],
                            super_users={"User:superman", "User:superuser2"})
    assert answers(authorizer, "superman", [(Op.READ, Res.TOPIC, "green1"), (Op.WRITE, Res.GROUP, "wheel")]) \
        == [A, A]
    assert answers(authorizer, "superuser2", [(Op.READ, Res.TOPIC, "foo")]) == [A]


def test_prefix_acls():
    authorizer = standard(acl(Res.TOPIC, "fooa", Pat.PREFIXED, "User:alice", "*", Op.ALL, Perm.ALLOW),
                          acl(Res.TOPIC, "foobar", Pat.LITERAL, "User:bob", "*", Op.ALL, Perm.ALLOW),
                          acl(Res.TOPIC, "f", Pat.PREFIXED, "User:bob", "*", Op.ALL, Perm.ALLOW))
    assert answers(authorizer, "bob", [(Op.WRITE, Res.TOPIC, "foobarr"), (Op.READ, Res.TOPIC, "goobar"),
                                       (Op.READ, Res.TOPIC, "fooa")]) == [A, D, A]
    assert answers(authorizer, "alice", [(Op.DESCRIBE, Res.TOPIC, "fooa"), (Op.WRITE, Res.TOPIC, "bar"),
                                         (Op.READ, Res.TOPIC, "baz")]) == [A, D, D]


# -- AuthorizerTest (core) -----------------------------------------------------------------------------------------

TOPIC = (Res.TOPIC, "foo-6f1c")


def on_topic(principal: str, host: str, op: Op, perm: Perm, name: str = TOPIC[1],
             pattern: Pat = Pat.LITERAL) -> AclBinding:
    return acl(Res.TOPIC, name, pattern, principal, host, op, perm)


def test_topic_acl():
    host1, host2 = "192.168.1.1", "192.168.1.2"
    authorizer = standard(on_topic("User:alice", host1, Op.READ, Perm.ALLOW),
                          on_topic("User:alice", host2, Op.READ, Perm.ALLOW),
                          on_topic("User:alice", host1, Op.READ, Perm.DENY),
                          on_topic("User:alice", host1, Op.WRITE, Perm.ALLOW),
                          on_topic("User:alice", "*", Op.DESCRIBE, Perm.ALLOW),
                          on_topic("User:rob", "*", Op.READ, Perm.ALLOW),
                          on_topic("User:batman", "*", Op.WRITE, Perm.ALLOW))
    t = TOPIC[1]
    assert answers(authorizer, "alice", [(Op.READ, Res.TOPIC, t)], host2) == [A]
    assert answers(authorizer, "alice", [(Op.READ, Res.TOPIC, t)], host1) == [D]  # the deny
    assert answers(authorizer, "alice", [(Op.WRITE, Res.TOPIC, t)], host1) == [A]
    assert answers(authorizer, "alice", [(Op.WRITE, Res.TOPIC, t)], host2) == [D]
    assert answers(authorizer, "alice", [(Op.DESCRIBE, Res.TOPIC, t)], host1) == [A]
    assert answers(authorizer, "alice", [(Op.DESCRIBE, Res.TOPIC, t)], host2) == [A]
    assert answers(authorizer, "alice", [(Op.ALTER, Res.TOPIC, t)], host1) == [D]
    assert answers(authorizer, "rob", [(Op.DESCRIBE, Res.TOPIC, t), (Op.READ, Res.TOPIC, t)], host1) == [A, A]
    assert answers(authorizer, "batman", [(Op.DESCRIBE, Res.TOPIC, t), (Op.WRITE, Res.TOPIC, t)], host1) == [A, A]


def test_deny_takes_precedence_and_allow_all():
    host = "192.168.2.1"
    authorizer = standard(on_topic("User:*", "*", Op.ALL, Perm.ALLOW), on_topic("User:alice", host, Op.ALL, Perm.DENY))
    assert answers(authorizer, "alice", [(Op.READ, *TOPIC)], host) == [D]
    assert answers(authorizer, "random", [(Op.READ, *TOPIC)], "192.0.4.4") == [A]


def test_wildcard_acls():
    host = "192.168.3.1"
    read_all = on_topic("User:alice", host, Op.READ, Perm.ALLOW, name="*")
    write_one = on_topic("User:alice", host, Op.WRITE, Perm.ALLOW)
    deny_write_all = on_topic("User:alice", host, Op.WRITE, Perm.DENY, name="*")
    assert answers(standard(read_all), "alice", [(Op.READ, *TOPIC)], host) == [A]
    assert answers(standard(read_all, write_one), "alice", [(Op.WRITE, *TOPIC)], host) == [A]
    assert answers(standard(read_all, write_one, deny_write_all), "alice", [(Op.WRITE, *TOPIC)], host) == [D]


@pytest.mark.parametrize("parent, implied", [
    (Op.ALL, set(Op) - {Op.ANY, Op.UNKNOWN}),
    (Op.READ, {Op.DESCRIBE}), (Op.WRITE, {Op.DESCRIBE}), (Op.DELETE, {Op.DESCRIBE}), (Op.ALTER, {Op.DESCRIBE}),
    (Op.ALTER_CONFIGS, {Op.DESCRIBE_CONFIGS}),
])
def test_implications_of_allow(parent, implied):
    authorizer = standard(acl(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, "User:alice", "*", parent, Perm.ALLOW))
    for op in set(Op) - {Op.ANY, Op.UNKNOWN}:
        assert authorizer.authorize("User:alice", LOCAL, op, Res.CLUSTER, "kafka-cluster") \
            == (op == parent or op in implied), op


@pytest.mark.parametrize("parent, denied", [
    (Op.ALL, set(Op) - {Op.ANY, Op.UNKNOWN}), (Op.DESCRIBE, set()), (Op.DESCRIBE_CONFIGS, set()),
])
def test_implications_of_deny(parent, denied):
    authorizer = standard(acl(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, "User:alice", "*", parent, Perm.DENY),
                          acl(Res.CLUSTER, "kafka-cluster", Pat.LITERAL, "User:alice", "*", Op.ALL, Perm.ALLOW))
    for op in set(Op) - {Op.ANY, Op.UNKNOWN}:
        assert authorizer.authorize("User:alice", LOCAL, op, Res.CLUSTER, "kafka-cluster") \
            == (op != parent and op not in denied), op


def test_prefixed_resource_among_denies_of_other_prefixes():
    denies = [on_topic("User:alice", "*", Op.READ, Perm.DENY, name=name, pattern=pattern) for name, pattern in (
        ("a_other", Pat.LITERAL), ("a_other", Pat.PREFIXED), ("foo-1b2c", Pat.PREFIXED), ("foo-9d8e-zzz", Pat.PREFIXED),
        ("fooo-77", Pat.PREFIXED), ("fo-12", Pat.PREFIXED), ("fop-34", Pat.PREFIXED), ("fon-56", Pat.PREFIXED),
        ("fon-", Pat.PREFIXED), ("z_other", Pat.PREFIXED), ("z_other", Pat.LITERAL))]
    authorizer = standard(*denies, on_topic("User:alice", "*", Op.READ, Perm.ALLOW, name="foo", pattern=Pat.PREFIXED))
    assert answers(authorizer, "alice", [(Op.READ, *TOPIC)]) == [A]


def test_single_character_resource_acls():
    authorizer = standard(on_topic("User:alice", "*", Op.READ, Perm.ALLOW, name="f"))
    assert answers(authorizer, "alice", [(Op.READ, Res.TOPIC, "f"), (Op.READ, Res.TOPIC, "foo")]) == [A, D]
    authorizer = standard(on_topic("User:alice", "*", Op.READ, Perm.ALLOW, name="f"),
                          on_topic("User:alice", "*", Op.READ, Perm.ALLOW, name="_", pattern=Pat.PREFIXED))
    assert answers(authorizer, "alice", [(Op.READ, Res.TOPIC, "_foo"), (Op.READ, Res.TOPIC, "_"),
                                         (Op.READ, Res.TOPIC, "foo_")]) == [A, A, D]


def test_empty_resource_name_matches_only_the_wildcard():
    group_read = acl(Res.GROUP, "*", Pat.LITERAL, "User:alice", "*", Op.READ, Perm.ALLOW)
    assert answers(standard(), "alice", [(Op.READ, Res.GROUP, "")]) == [D]
    assert answers(standard(group_read), "alice", [(Op.READ, Res.GROUP, "")]) == [A]


# -- filters (DescribeAcls, DeleteAcls) ----------------------------------------------------------------------------


def f(rtype=Res.ANY, name=None, pattern=Pat.ANY, principal=None, host=None, op=Op.ANY, perm=Perm.ANY):
    return AclBindingFilter(rtype, name, pattern, principal, host, op, perm)


def test_acls_filter():
    acl1 = on_topic("User:alice", "*", Op.READ, Perm.ALLOW, name="foo-1")
    acl2 = on_topic("User:alice", "192.168.0.1", Op.WRITE, Perm.ALLOW, name="foo-1")
    acl3 = on_topic("User:alice", "*", Op.DESCRIBE, Perm.ALLOW, name="bar-2")
    acl4 = on_topic("User:*", "*", Op.READ, Perm.ALLOW, name="bar-", pattern=Pat.PREFIXED)
    authorizer = standard(acl1, acl2, acl3, acl4)
    assert set(authorizer.acls(f())) == {acl1, acl2, acl3, acl4}
    assert set(authorizer.acls(f(Res.TOPIC, "foo-1", Pat.LITERAL))) == {acl1, acl2}
    assert set(authorizer.acls(f(Res.TOPIC, "bar-", Pat.PREFIXED))) == {acl4}
    assert set(authorizer.acls(f(Res.ANY, "bar-2", Pat.MATCH))) == {acl3, acl4}
    assert set(authorizer.acls(f(Res.TOPIC, "baz", Pat.ANY))) == set()


def test_acls_by_principal_are_not_wildcard_expanded():
    specific = on_topic("User:alice", "*", Op.WRITE, Perm.ALLOW)
    wildcard = on_topic("User:*", "*", Op.WRITE, Perm.ALLOW)
    assert list(standard(specific).acls(f(principal="User:*"))) == []
    assert list(standard(specific).acls(f(principal="User:alice"))) == [specific]
    assert list(standard(wildcard).acls(f(principal="User:alice"))) == []


def test_list_acls_by_type():
    foo_read, foo_write = foo(Op.READ, Perm.ALLOW), foo(Op.WRITE, Perm.ALLOW)
    bar_dc, bar_ac = bar(Op.DESCRIBE_CONFIGS, Perm.DENY), bar(Op.ALTER_CONFIGS, Perm.DENY)
    authorizer = standard(foo_read, foo_write, bar_dc, bar_ac)
    assert set(authorizer.acls(f())) == {foo_read, foo_write, bar_dc, bar_ac}
    authorizer = authorizer.with_bindings(authorizer.bindings - {foo_write})
    assert set(authorizer.acls(f())) == {foo_read, bar_dc, bar_ac}
    assert set(authorizer.acls(f(Res.TOPIC))) == {foo_read}


def test_filter_with_unknown_parts_is_refused():
    assert AclBindingFilter.of(2, None, 0, None, None, 1, 1).unknown == "Unknown patternFilter."
    assert AclBindingFilter.of(99, None, 1, None, None, 1, 1).unknown == "Unknown patternFilter."
    assert AclBindingFilter.of(2, None, 1, None, None, 0, 1).unknown == "Unknown entryFilter."
    assert AclBindingFilter.of(1, None, 1, None, None, 1, 1).unknown is None


# -- what may be created (CreateAcls) ------------------------------------------------------------------------------


@pytest.mark.parametrize("codes, message", [
    ((99, "a", 3, "User:a", "*", 3, 3), "Invalid resourceType UNKNOWN"),
    ((1, "a", 3, "User:a", "*", 3, 3), "Invalid resourceType ANY"),
    ((2, "a", 9, "User:a", "*", 3, 3), "Invalid patternType UNKNOWN"),
    ((2, "a", 2, "User:a", "*", 3, 3), "Invalid patternType MATCH"),
    ((2, "a", 3, "User:a", "*", 1, 3), "Invalid operation ANY"),
    ((2, "a", 3, "User:a", "*", 3, 1), "Invalid permissionType ANY"),
    ((2, "", 3, "User:a", "*", 3, 3), "Resource name should not be empty"),
    ((4, "other", 3, "User:a", "*", 3, 3), "The only valid name for the CLUSTER resource is kafka-cluster"),
    ((2, "a", 3, "alice", "*", 3, 3), "Could not parse principal"),
])
def test_invalid_bindings_are_refused_with_kafkas_message(codes, message):
    with pytest.raises(InvalidAcl, match=message):
        new_binding(*codes)


def test_a_valid_binding_round_trips_through_its_stored_form():
    binding = new_binding(3, "app-", 4, "User:alice", "*", 3, 3)
    assert binding == acl(Res.GROUP, "app-", Pat.PREFIXED, "User:alice", "*", Op.READ, Perm.ALLOW)
    assert AclBinding.from_json(binding.to_json()) == binding


# -- what Kafka asks beyond a single resource ----------------------------------------------------------------------


def test_authorize_any_topic_for_idempotent_producers():
    alice = "User:alice"
    assert not standard().authorize_any(alice, LOCAL, Op.WRITE, Res.TOPIC)
    assert standard(on_topic(alice, "*", Op.WRITE, Perm.ALLOW)).authorize_any(alice, LOCAL, Op.WRITE, Res.TOPIC)
    assert not standard(on_topic(alice, "*", Op.WRITE, Perm.ALLOW),
                        on_topic("User:*", "*", Op.WRITE, Perm.DENY, name="*")).authorize_any(
        alice, LOCAL, Op.WRITE, Res.TOPIC)
    assert not standard(on_topic(alice, "*", Op.WRITE, Perm.ALLOW, name="foo-1"),
                        on_topic(alice, "*", Op.WRITE, Perm.DENY, name="foo", pattern=Pat.PREFIXED)).authorize_any(
        alice, LOCAL, Op.WRITE, Res.TOPIC)
    assert Authorizer(allow_everyone_if_no_acl_found=True).authorize_any(alice, LOCAL, Op.WRITE, Res.TOPIC)


def test_authorized_operations_bitfield():
    authorizer = standard(acl(Res.GROUP, "app-", Pat.PREFIXED, "User:alice", "*", Op.READ, Perm.ALLOW))
    bits = authorizer.authorized_operations("User:alice", LOCAL, Res.GROUP, "app-1")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert authorizer.authorized_operations("User:bob", LOCAL, Res.GROUP, "app-1") == 0
