"""What is answered without stepping a group: its published view, the gateway's fast answers and the coordinator's
check of them, and the group directory (ListGroups).

- `published`: a group's view (`view_of`), as published on the views topic and decoded by a gateway;
- `fast_answers`: Heartbeat, ConsumerGroupHeartbeat and OffsetCommit answered from a view, and their check;
- `txn_proof`: when a TxnOffsetCommit answered from a view is shown decided from the requests topic, so that its
  transaction's EndTxn need not wait for the coordinator's decision;
- `directory`: every group's state and type from the records topic, for ListGroups and the metrics.
"""
