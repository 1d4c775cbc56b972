"""Committed offsets, shared by every kind of group (Kafka's OffsetMetadataManager).

- `handlers`: OffsetCommit, OffsetFetch, OffsetDelete, the retention check and a group's deletion;
- `transactions`: TxnOffsetCommit and the transaction markers;
- `retention`: when an offset becomes removable.

A group's offsets themselves (`Offsets`, `OffsetValue`: pure data every kind of group holds) are
`state.offset_values`, below the kinds, which import it.
"""
