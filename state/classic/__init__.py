"""Classic groups: Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).

- `group`: the group as its records leave it (`ClassicGroup`, `Member`, `GroupState` and its transitions);
- `membership`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the membership timers;
- `member_id_round`: JoinGroup's member-id round (KIP-394), which a gateway answers itself;
- `server_assignment`: our extension, the coordinator assigning for a classic group (`server:` protocols).
"""
