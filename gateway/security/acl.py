"""Kafka's authorization model as pure matching code: ACL bindings, filters, and the decision for one action.

The rules are those of Kafka's StandardAuthorizer (KRaft), so that ACLs written for a Kafka cluster mean the same
here:
- A binding is (resource type, resource name, pattern type) + (principal, host, operation, permission). Pattern
  LITERAL matches the name exactly, or every name when the name is `*`; PREFIXED matches names that start with it.
  Principal `User:*` and host `*` match everyone.
- DENY wins: an action is allowed when an ALLOW binding matches it and no DENY binding does.
- ALLOW of READ, WRITE, DELETE or ALTER implies DESCRIBE; ALLOW of ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL
  matches every operation, ALLOW and DENY alike. A DENY implies nothing beyond its own operation (and ALL).
- `super.users` may do everything. When no binding at all names a resource (whoever it is for), the answer is
  `allow.everyone.if.no.acl.found` (default false); when some do but none matches the principal, it is no.

Nothing here reads a clock, a socket or a topic: the gateway feeds the bindings in (`gateway.security.topics`) and
asks (`gateway.security.authz`). Codes are Kafka's wire codes, names Kafka's enum names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Iterator

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
ANONYMOUS = "User:ANONYMOUS"
"""The principal of a connection without SASL, as Kafka names it."""


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


Op = AclOperation
_IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})

SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS,
                         Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                           Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}
"""What Kafka reports in `authorized_operations` for each resource type."""


class InvalidAcl(ValueError):
    """A binding Kafka refuses to create: INVALID_REQUEST (42) with this message."""


@dataclass(frozen=True, order=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def to_json(self) -> dict[str, str]:
        """Names, not codes: the form stored in the ACL topic (readable, and stable across Kafka's enums)."""
        return {"resource_type": self.resource_type.name, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type.name, "principal": self.principal, "host": self.host,
                "operation": self.operation.name, "permission_type": self.permission_type.name}

    @classmethod
    def from_json(cls, doc: dict[str, str]) -> "AclBinding":
        return cls(ResourceType[doc["resource_type"]], doc["resource_name"], PatternType[doc["pattern_type"]],
                   doc["principal"], doc["host"], AclOperation[doc["operation"]],
                   AclPermissionType[doc["permission_type"]])

    def matches_name(self, name: str) -> bool:
        if self.pattern_type == PatternType.LITERAL:
            return self.resource_name == name or self.resource_name == WILDCARD
        return name.startswith(self.resource_name)


def _enum(cls: type[enum.IntEnum], code: int) -> enum.IntEnum:
    """Kafka's `fromCode`: a code it does not know is UNKNOWN."""
    try:
        return cls(code)
    except ValueError:
        return cls.UNKNOWN


def new_binding(resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
                operation: int, permission_type: int) -> AclBinding:
    """A binding to create, from a CreateAcls entry's codes; raises InvalidAcl with Kafka's message for what Kafka
    refuses (AclControlManager.validateNewAcl, AclApis.handleCreateAcls)."""
    rtype, ptype = _enum(ResourceType, resource_type), _enum(PatternType, pattern_type)
    op, perm = _enum(AclOperation, operation), _enum(AclPermissionType, permission_type)
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {rtype.name}")
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {ptype.name}")
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation {op.name}")
    if perm not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise InvalidAcl(f"Invalid permissionType {perm.name}")
    if not resource_name:
        raise InvalidAcl("Resource name should not be empty")
    if rtype == ResourceType.CLUSTER and resource_name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        raise InvalidAcl(f"Could not parse principal from `{principal}` (no colon is found between principal "
                         "type and principal name)")
    if not host:
        raise InvalidAcl("Invalid empty host")
    return AclBinding(rtype, resource_name, ptype, principal, host, op, perm)


@dataclass(frozen=True)
class AclBindingFilter:
    """DescribeAcls' and DeleteAcls' filter: None (a null string) and ANY match anything; pattern MATCH matches the
    bindings that would apply to a resource of that name (LITERAL equal or `*`, PREFIXED a prefix of it)."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    @classmethod
    def of(cls, resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
           host: str | None, operation: int, permission_type: int) -> "AclBindingFilter":
        return cls(_enum(ResourceType, resource_type), resource_name, _enum(PatternType, pattern_type), principal,
                   host, _enum(AclOperation, operation), _enum(AclPermissionType, permission_type))

    @property
    def unknown(self) -> str | None:
        """Why Kafka refuses this filter (DeleteAcls: INVALID_REQUEST), or None."""
        if self.pattern_type == PatternType.UNKNOWN or self.resource_type == ResourceType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission_type == AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, b.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
            return False
        if self.resource_name is not None:
            if self.pattern_type in (PatternType.ANY, b.pattern_type):
                if self.resource_name != b.resource_name:
                    return False
            elif not b.matches_name(self.resource_name):  # MATCH
                return False
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation not in (AclOperation.ANY, b.operation):
            return False
        return self.permission_type in (AclPermissionType.ANY, b.permission_type)


def _acl_result(binding: AclBinding, principal: str, host: str, operation: AclOperation) -> bool | None:
    """True (ALLOW) / False (DENY) if `binding` applies to this principal, host and operation, else None. The
    resource name is matched by the caller."""
    if binding.principal not in (principal, WILDCARD_PRINCIPAL):
        return None
    if binding.host != WILDCARD and binding.host != host:
        return None
    allow = binding.permission_type == AclPermissionType.ALLOW
    if binding.operation != AclOperation.ALL:
        if allow and operation == AclOperation.DESCRIBE:
            if binding.operation not in _IMPLIES_DESCRIBE:
                return None
        elif allow and operation == AclOperation.DESCRIBE_CONFIGS:
            if binding.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        elif binding.operation != operation:
            return None
    return allow


class Authorizer:
    """An immutable snapshot of the ACLs plus the static settings; `with_bindings` gives the next snapshot, so a
    request in flight sees one consistent set while the follower applies changes."""

    def __init__(self, bindings: Iterable[AclBinding] = (), super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.bindings = frozenset(bindings)
        self._decisions: dict[tuple, bool] = {}
        """Answers already given by this snapshot (a request names the same few topics again and again)."""
        self._by_type: dict[ResourceType, list[AclBinding]] = {}
        for b in sorted(self.bindings):
            self._by_type.setdefault(b.resource_type, []).append(b)

    def with_bindings(self, bindings: Iterable[AclBinding]) -> "Authorizer":
        return Authorizer(bindings, self.super_users, self.allow_everyone_if_no_acl_found)

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        """May `principal` connecting from `host` (an IP address) do `operation` on this literal resource?"""
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= _MAX_DECISIONS:
                self._decisions.clear()
            decision = self._decisions[key] = self._decide(principal, host, operation, resource_type, name)
        return decision

    def _decide(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                name: str) -> bool:
        if principal in self.super_users:
            return True
        found = allowed = False
        for binding in self._by_type.get(resource_type, ()):
            if not binding.matches_name(name):
                continue
            found = True
            result = _acl_result(binding, principal, host, operation)
            if result is False:
                return False
            allowed = allowed or result is True
        return allowed or (not found and self.allow_everyone_if_no_acl_found)

    def authorize_any(self, principal: str, host: str, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Kafka's `authorizeByResourceType`: may the principal do `operation` on at least one resource of this
        type (some ALLOW binding that no DENY binding covers)? InitProducerId of an idempotent producer without
        IDEMPOTENT_WRITE asks it for WRITE on topics."""
        if principal in self.super_users:
            return True
        applicable = [b for b in self._by_type.get(resource_type, ())
                      if _acl_result(b, principal, host, operation) is not None]
        if not self._by_type.get(resource_type):
            return self.allow_everyone_if_no_acl_found
        denies = [b for b in applicable if b.permission_type == AclPermissionType.DENY]
        for allow in (b for b in applicable if b.permission_type == AclPermissionType.ALLOW):
            if not any(_covers(deny, allow) for deny in denies):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The `authorized_operations` bitfield Kafka reports for a resource (bit n: operation code n)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits

    def acls(self, acl_filter: AclBindingFilter) -> Iterator[AclBinding]:
        return (b for b in sorted(self.bindings) if acl_filter.matches(b))


_MAX_DECISIONS = 1 << 16


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Does `deny` refuse every resource `allow` grants?"""
    if deny.pattern_type == PatternType.LITERAL and deny.resource_name == WILDCARD:
        return True
    if deny.pattern_type == PatternType.PREFIXED:
        return allow.resource_name.startswith(deny.resource_name) and allow.resource_name != WILDCARD
    return allow.pattern_type == PatternType.LITERAL and allow.resource_name == deny.resource_name


def parse_super_users(value: str) -> frozenset[str]:
    """`User:admin,User:ops` (our flag) or `User:admin;User:ops` (Kafka's `super.users`); each `Type:name`."""
    out = set()
    for item in value.replace(";", ",").split(","):
        item = item.strip()
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"expected a string in format principalType:principalName but got {item}")
        out.add(item)
    return frozenset(out)
