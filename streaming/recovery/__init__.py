"""Keeping the job's state through a lost driver, a lost checkpoint and a new release, the driver's part only.

`lease` (one driver per checkpoint; a standby takes over when the active one stops renewing), `checkpoint` (what a
checkpoint holds and whether this release runs on it), `upgrade` (an older checkpoint's groups into a new one),
`rebuild` (every group back from the records topic when the checkpoint is gone). Apart from the query because none
of it runs in a micro-batch: it decides, before and around the query, which driver runs it and on what state.
"""
