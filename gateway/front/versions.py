"""What the gateway tells clients in ApiVersions: its own versions for what it serves, the upstream's for the rest.

- The group APIs (the classic ones, and KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe): the versions
  both the coordinator (`schemas.messages.API_VERSIONS`) and the message classes (kafka-python's; for KIP-848,
  `gateway.upstream.kafka_apis`) know, whatever the upstream broker supports.
- FindCoordinator, ApiVersions, SASL: answered by the gateway, at the versions it can decode.
- APIs whose responses carry broker addresses the gateway rewrites (Metadata, DescribeCluster, Fetch v16+,
  Produce v10+) and Produce (whose `acks` says whether an answer comes): the upstream's versions, capped at what
  kafka-python can decode.
- Every other upstream API: the upstream's versions, forwarded byte for byte.
- ShareFetch and ShareAcknowledge (KIP-932): the gateway's own versions (`gateway.share`).
- Left out: the group APIs of protocols the coordinator does not run (KIP-1071 streams groups; KIP-932's group-side
  APIs until the coordinator runs share groups). A client configured for them then fails fast with
  UnsupportedVersion instead of hanging.
- TxnOffsetCommit is a group API (`gateway.upstream.transactions`): the coordinator's, never the upstream's own.
"""

from __future__ import annotations

from kafka.protocol.admin.cluster import DescribeClusterResponse
from kafka.protocol.api_key import ApiKey
from kafka.protocol.consumer.fetch import FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from gateway.security.authz import POLICED
from gateway.upstream.control import GROUP_APIS
from gateway.upstream.group_configs import APIS as GROUP_CONFIG_APIS
from gateway.security.apis import versions as security_versions

Versions = dict[int, tuple[int, int]]

NOT_SERVED = frozenset({
    83, 84, 85, 86, 87,  # the share-group state APIs
    88, 89,  # StreamsGroupHeartbeat, StreamsGroupDescribe (KIP-1071)
})

_DECODED = {
    ApiKey.Metadata: (MetadataResponse,),
    ApiKey.DescribeCluster: (DescribeClusterResponse,),
    ApiKey.Fetch: (FetchResponse,),
    ApiKey.Produce: (ProduceRequest, ProduceResponse),
    ApiKey.FindCoordinator: (FindCoordinatorRequest, FindCoordinatorResponse),
}
"""API key -> the classes the gateway decodes for it: it advertises no version they do not know."""

SHARE_APIS = {78: (1, 2), 79: (1, 2)}
"""ShareFetch and ShareAcknowledge (KIP-932), answered by the gateway (`gateway.share`): Kafka 4.2's versions (v0 was
4.0's early access); librdkafka 2.16 sends v1."""

_SASL = {ApiKey.SaslHandshake: SaslHandshakeRequest.max_version,
         ApiKey.SaslAuthenticate: SaslAuthenticateRequest.max_version}


def advertised(upstream: Versions, sasl: bool, authorizing: bool = False, security: bool = False) -> Versions:
    """The version ranges the gateway answers ApiVersions with, given the upstream broker's. `authorizing`: only
    the upstream APIs the gateway authorizes (`gateway.security.authz.POLICED`); `security`: the SCRAM management APIs
    are the gateway's own (`gateway.security.apis`); the ACL APIs always are (SECURITY_DISABLED without
    authorization)."""
    out: Versions = {}
    for key, (lo, hi) in upstream.items():
        if key in NOT_SERVED or key in GROUP_APIS or key in SHARE_APIS or key in _SASL or key == ApiKey.ApiVersions:
            continue
        if authorizing and key not in POLICED:
            continue
        for cls in _DECODED.get(key, ()):
            hi = min(hi, cls.max_version)
        if lo <= hi:
            out[key] = (lo, hi)
    for key, api in GROUP_CONFIG_APIS.items():
        # a group's configs are the coordinator's (`gateway.upstream.group_configs`), whatever the upstream serves
        lo, hi = out.get(key, (api.request.min_version, api.request.max_version))
        out[key] = (lo, min(hi, api.request.max_version, api.response.max_version))
    for key, api in GROUP_APIS.items():
        out[key] = (api.min_version, api.max_version)
    out.update(SHARE_APIS)
    out[ApiKey.ApiVersions] = (0, min(ApiVersionsRequest.max_version, ApiVersionsResponse.max_version))
    if sasl:
        out.update({key: (0, hi) for key, hi in _SASL.items()})
    out.update(security_versions(authorizing, security))
    return dict(sorted(out.items()))
