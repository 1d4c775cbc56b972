"""KIP-932 share groups: Kafka 4.x's `share` group protocol, with the same parts under the same names as
`state.classic` and `state.consumer`.

- `group`: the group and its share-partitions as their records leave them;
- `replay`: the only way a group changes, live and when loading, and `then`, how its handlers compose;
- `records`: the records it writes (Kafka's share-group record types) and their constructors;
- `stored`: the group as the shell stores it (its records as compaction leaves them);
- `handlers`: the share group's requests, internal requests and timers in the core's runtime;
- `heartbeat`: ShareGroupHeartbeat, the session timeout and the assignment interval;
- `describe`: ShareGroupDescribe;
- `view`: the view a gateway answers steady heartbeats from, and finds each share-partition's holder in;
- `admin`: Describe/Alter/DeleteShareGroupOffsets and DeleteGroups;
- `configs`: the group's dynamic configs (IncrementalAlterConfigs on a GROUP resource);
- `partitions/`: a share-partition's delivery states and acknowledgements (`partition`), the compare-and-set of
  the lease of the gateway holding it (`grant`), and ShareGrant, ShareUpdate and the lease timer (`holding`).
"""
