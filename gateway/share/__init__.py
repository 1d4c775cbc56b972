"""The gateway's share-group wing (KIP-932; docs/share-groups.md): ShareFetch and ShareAcknowledge, share sessions,
and the holder of share-partitions under the query's grants."""
