"""How the groups live in Spark state: one `streaming.stateful.GroupStore` per state operator, and what they need.

`group_rows` (`transformWithState`, the default: a row per group, with `deadline_index` beside it and `state_pipe`
to pipeline its state calls) and `bucket_blobs` (`applyInPandasWithState`: one row per bucket); `state_reader` reads
either back from a stopped query's checkpoint. Apart from the query because they are the state's layout, which a
checkpoint keeps: a change here is a change of what recovery and `coordinator upgrade` must read.
"""
