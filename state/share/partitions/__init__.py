"""The share-partitions: their rules (`partition`: what a holder does in memory, what the query replays), the grant
of each to one gateway under a lease (`grant`), and the query's side of both (`holding`). docs/share-groups.md."""
