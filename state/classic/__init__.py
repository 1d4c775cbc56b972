"""Classic groups: Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).

- `group`: the group as its records leave it (`ClassicGroup`, `Member`, `GroupState` and its transitions);
- `records`: the records it writes (the group metadata value) and its in-memory records;
- `stored`: the group as the shell stores it (its fields; it holds what no record says);
- `replay`: the only way a group changes, its in-memory and written records, and `then`, how its handlers compose;
- `handlers`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the membership timers (as `state.consumer.handlers`
  and `state.share.handlers` are their kinds');
- `member_id_round`: JoinGroup's member-id round (KIP-394), which a gateway answers itself;
- `describe`: DescribeGroups;
- `view`: the view a gateway answers heartbeats, commits and fetches from (`state.views`);
- `server_assignment`: our extension, the coordinator assigning for a classic group (`server:` protocols).
"""
