"""Committed offsets, shared by every kind of group (Kafka's OffsetMetadataManager).

- `values`: a group's offsets (`Offsets`, `OffsetValue`), stored apart from the group;
- `handlers`: OffsetCommit, OffsetFetch, OffsetDelete, the retention check and a group's deletion.
"""
