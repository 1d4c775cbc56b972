"""Members of the classic protocol in a consumer group (`classic_members`: their JoinGroup, SyncGroup, Heartbeat and
LeaveGroup), and the online conversions between a classic group and a consumer group (`conversion`)."""
