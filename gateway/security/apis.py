"""ACL and SCRAM credential management answered by the gateway: CreateAcls, DescribeAcls, DeleteAcls (KIP-140) and
AlterUserScramCredentials, DescribeUserScramCredentials (KIP-554), as Kafka answers them.

- Describe needs DESCRIBE on the cluster, the others ALTER (else CLUSTER_AUTHORIZATION_FAILED, 31, in each entry).
- A binding Kafka would not create gets INVALID_REQUEST (42) with Kafka's message (`gateway.security.acl.new_binding`);
  a request naming the UNKNOWN code (0) for a resource type, pattern type, operation or permission does not parse in
  Kafka, and closes the connection here too.
- DeleteAcls finds what each filter matches first, then deletes it all, so a filter matching everything deletes
  everything it matches, and two filters matching one binding both report it (Kafka's StandardAuthorizer).
- Changes are written to the security topics and applied on this gateway before the answer (`write`).
- Without `--authorization` the ACL APIs are answered SECURITY_DISABLED (54), as a Kafka broker without an
  authorizer answers them (`security_disabled`): forwarded, they would manage the upstream's ACLs as the gateway's
  principal, and tansu's answer to CreateAcls aborts librdkafka's admin client.
"""

from __future__ import annotations

import asyncio
import base64
from itertools import groupby

from kafka.protocol.admin.acl import (CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
                                      DescribeAclsRequest, DescribeAclsResponse)
from kafka.protocol.admin.users import (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
                                        DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse)
from kafka.protocol.api_key import ApiKey

from gateway.security import scram
from gateway.security.acl import AclBindingFilter, AclOperation, InvalidAcl, new_binding
from gateway.security.authz import CLUSTER_AUTHORIZATION_FAILED, Context, _encode_response
from gateway.upstream.control import Json, to_json
from gateway.protocol.frames import FrameError
from gateway.security.topics import SecurityTopics, acl_record, credential_record

INVALID_REQUEST = 42
SECURITY_DISABLED = 54
NO_AUTHORIZER = "No Authorizer is configured."
CLUSTER_MESSAGE = "Cluster authorization failed."
_CODES = ("resource_type", "resource_pattern_type", "operation", "permission_type")
_FILTER_CODES = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")

API_CLASSES = {
    ApiKey.CreateAcls: (CreateAclsRequest, CreateAclsResponse),
    ApiKey.DescribeAcls: (DescribeAclsRequest, DescribeAclsResponse),
    ApiKey.DeleteAcls: (DeleteAclsRequest, DeleteAclsResponse),
    ApiKey.AlterUserScramCredentials: (AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse),
    ApiKey.DescribeUserScramCredentials: (DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse),
}
"""What the gateway answers itself while it follows the security topics, at the versions both classes know."""
ACL_APIS = frozenset({ApiKey.CreateAcls, ApiKey.DescribeAcls, ApiKey.DeleteAcls})


def served(authorizing: bool) -> frozenset[int]:
    """The SCRAM APIs whenever the gateway follows the security topics; the ACL APIs only with authorization on
    (without it they stay the upstream's, as before)."""
    return frozenset(API_CLASSES) if authorizing else frozenset(API_CLASSES) - ACL_APIS


def security_disabled(api_key: int, frame: bytes, version: int, correlation: int) -> bytes:
    """An ACL request answered as by a Kafka broker without an authorizer: SECURITY_DISABLED for each creation,
    for the describe, for each deletion filter."""
    request_cls, response_cls = API_CLASSES[api_key]
    doc = to_json(request_cls.decode(frame, version=version, header=True), version)
    error = {"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER}
    if api_key == ApiKey.CreateAcls:
        result: Json = {"results": [error for _ in doc["creations"]]}
    elif api_key == ApiKey.DescribeAcls:
        result = {**error, "resources": []}
    else:
        result = {"filter_results": [{**error, "matching_acls": []} for _ in doc["filters"]]}
    return _encode_response(response_cls, version, {"throttle_time_ms": 0, **result}, correlation)


def _no_unknown(entries: list[Json], fields: tuple[str, ...]) -> None:
    """Kafka's request parsing refuses UNKNOWN (0) codes: the request does not parse, the connection closes."""
    for entry in entries:
        if any(entry.get(f) == 0 for f in fields):
            raise FrameError("an ACL request with UNKNOWN elements")


async def answer(api_key: int, ctx: Context, security: SecurityTopics, frame: bytes, version: int,
                 correlation: int) -> bytes:
    request_cls, response_cls = API_CLASSES[api_key]
    doc = to_json(request_cls.decode(frame, version=version, header=True), version)
    handler = {ApiKey.CreateAcls: _create_acls, ApiKey.DescribeAcls: _describe_acls,
               ApiKey.DeleteAcls: _delete_acls, ApiKey.AlterUserScramCredentials: _alter_credentials,
               ApiKey.DescribeUserScramCredentials: _describe_credentials}[api_key]
    result = await handler(ctx, security, doc)
    return _encode_response(response_cls, version, {"throttle_time_ms": 0, **result}, correlation)


async def _write(security: SecurityTopics, topic: str, records: list) -> None:
    if records:
        await asyncio.get_running_loop().run_in_executor(None, security.write, topic, records)


async def _create_acls(ctx: Context, security: SecurityTopics, doc: Json) -> Json:
    creations = doc["creations"]
    _no_unknown(creations, _CODES)
    if not ctx.cluster(AclOperation.ALTER):
        return {"results": [{"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_MESSAGE}
                            for _ in creations]}
    results, records = [], []
    existing = ctx.authorizer.bindings
    for c in creations:
        try:
            binding = new_binding(c["resource_type"], c["resource_name"], c["resource_pattern_type"], c["principal"],
                                  c["host"], c["operation"], c["permission_type"])
        except InvalidAcl as exc:
            results.append({"error_code": INVALID_REQUEST, "error_message": str(exc)})
            continue
        if binding not in existing:
            records.append(acl_record(binding, True))
        results.append({"error_code": 0, "error_message": None})
    await _write(security, security.acls_topic, records)
    return {"results": results}


def _filter(doc: Json) -> AclBindingFilter:
    return AclBindingFilter.of(doc["resource_type_filter"], doc["resource_name_filter"], doc["pattern_type_filter"],
                               doc["principal_filter"], doc["host_filter"], doc["operation"], doc["permission_type"])


async def _describe_acls(ctx: Context, security: SecurityTopics, doc: Json) -> Json:
    _no_unknown([doc], _FILTER_CODES)
    if not ctx.cluster(AclOperation.DESCRIBE):
        return {"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_MESSAGE, "resources": []}
    matching = list(ctx.authorizer.acls(_filter(doc)))
    resources = []
    for (rtype, name, pattern), bindings in groupby(
            matching, key=lambda b: (b.resource_type, b.resource_name, b.pattern_type)):
        resources.append({"resource_type": int(rtype), "resource_name": name, "pattern_type": int(pattern),
                          "acls": [{"principal": b.principal, "host": b.host, "operation": int(b.operation),
                                    "permission_type": int(b.permission_type)} for b in bindings]})
    return {"error_code": 0, "error_message": None, "resources": resources}


async def _delete_acls(ctx: Context, security: SecurityTopics, doc: Json) -> Json:
    filters = doc["filters"]
    _no_unknown(filters, _FILTER_CODES)
    if not ctx.cluster(AclOperation.ALTER):
        return {"filter_results": [{"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_MESSAGE,
                                    "matching_acls": []} for _ in filters]}
    results, doomed = [], set()
    for entry in filters:
        acl_filter = _filter(entry)
        if acl_filter.unknown:
            results.append({"error_code": INVALID_REQUEST, "error_message": acl_filter.unknown, "matching_acls": []})
            continue
        matching = list(ctx.authorizer.acls(acl_filter))
        doomed.update(matching)
        results.append({"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": 0, "error_message": None, "resource_type": int(b.resource_type),
             "resource_name": b.resource_name, "pattern_type": int(b.pattern_type), "principal": b.principal,
             "host": b.host, "operation": int(b.operation), "permission_type": int(b.permission_type)}
            for b in matching]})
    await _write(security, security.acls_topic, [acl_record(b, False) for b in sorted(doomed)])
    return {"filter_results": results}


async def _alter_credentials(ctx: Context, security: SecurityTopics, doc: Json) -> Json:
    users = [d["name"] for d in doc["deletions"]] + [u["name"] for u in doc["upsertions"]]
    if not ctx.cluster(AclOperation.ALTER):
        return {"results": [{"user": user, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                             "error_message": CLUSTER_MESSAGE} for user in dict.fromkeys(users)]}
    deletions = [scram.Deletion(d["name"], d["mechanism"]) for d in doc["deletions"]]
    upsertions = [scram.Upsertion(u["name"], u["mechanism"], u["iterations"], _bytes(u["salt"]),
                                  _bytes(u["salted_password"])) for u in doc["upsertions"]]
    results, changes = scram.alter(security.credentials(), deletions, upsertions)
    await _write(security, security.credentials_topic,
                 [credential_record(user, mechanism, credential) for (user, mechanism), credential in changes.items()])
    return {"results": [{"user": user, "error_code": code, "error_message": message}
                        for user, code, message in results]}


def _bytes(value: str) -> bytes:
    """A bytes field of the request, as `to_json` gives it (base64)."""
    return base64.b64decode(value)


async def _describe_credentials(ctx: Context, security: SecurityTopics, doc: Json) -> Json:
    if not ctx.cluster(AclOperation.DESCRIBE):
        return {"error_code": CLUSTER_AUTHORIZATION_FAILED, "error_message": CLUSTER_MESSAGE, "results": []}
    users = doc.get("users")
    names = None if users is None else [u["name"] for u in users]
    return {"error_code": 0, "error_message": None, "results": scram.describe(security.credentials(), names)}


def versions(authorizing: bool, security: bool) -> dict[int, tuple[int, int]]:
    """The versions the gateway serves these APIs at (what kafka-python's classes know): the ACL APIs always
    (SECURITY_DISABLED without authorization), the SCRAM ones while it follows the security topics."""
    keys = (served(authorizing) if security else frozenset()) | ACL_APIS
    return {key: (max(req.min_version, resp.min_version), min(req.max_version, resp.max_version))
            for key, (req, resp) in API_CLASSES.items() if key in keys}

