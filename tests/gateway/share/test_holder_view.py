"""The holder reads a share-partition's grant from the group's view as the gateway decodes it from the views topic
(`state.views.published.PublishedShareGroup`): the epoch it takes at, and whether another gateway wants the
share-partition, so that it hands it over (docs/share-groups.md, "Several gateways"). No broker, no query.

Until 2026-12-05 the decoded view had no `kind`, so the gateway never saw a share group's view, and the holder read
its grants as a tuple (they are a dict): a share-partition was never handed over to another gateway."""

from __future__ import annotations

from types import SimpleNamespace

from gateway.share.holder import HANDOVER_MS, Holder
from schemas.share_group import ShareGroupView, ShareViewConfig, ShareViewGrant
from state.views.published import decode_view, encode_view

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
KEY = ("g", TOPIC_ID, 0)


def decoded(*grants: ShareViewGrant):
    return decode_view(encode_view(ShareGroupView(
        group_epoch=3, heartbeat_interval_ms=5000, session_timeout_ms=45000, members=(), grants=grants,
        config=ShareViewConfig("earliest", 30000, 5, 2000, "read_uncommitted"))))


def holder_of(view) -> Holder:
    # what the gateway's share wing hands the holder (gateway.share.fetch): the view when it is a share group's
    return Holder(None, None, lambda group_id: view if getattr(view, "kind", None) == "share" else None,
                  lambda topic_id: None)


def test_the_epoch_to_take_at_is_the_views():
    holder = holder_of(decoded(ShareViewGrant(TOPIC_ID, 0, 1234, None)))
    assert holder._seen_grant(KEY) == (1234, None)
    assert holder._seen_grant(("g", TOPIC_ID, 1)) == (-1, None)
    assert holder_of(None)._seen_grant(KEY) == (-1, None)


def test_a_share_partition_another_gateway_wants_is_handed_over_after_the_handover_time():
    holder = holder_of(None)
    wanted = holder_of(decoded(ShareViewGrant(TOPIC_ID, 0, 7, holder.id, wanted_by="gw-other")))
    wanted.id = holder.id
    long_held = SimpleNamespace(key=KEY, held_since_ms=0)
    assert wanted._handover_due(long_held)
    just_taken = SimpleNamespace(key=KEY, held_since_ms=2**62)
    assert not wanted._handover_due(just_taken)
    nobody = holder_of(decoded(ShareViewGrant(TOPIC_ID, 0, 7, holder.id)))
    assert not nobody._handover_due(long_held)
    assert HANDOVER_MS > 0
