"""The requests topic's generations: a new requests topic when the current one has grown long (issue 37).

tansu 0.6 lists every record batch of a partition on each fetch below the partition's end, and cannot delete,
compact or retain records, so reading a long-lived requests topic costs more with every request it has taken
(docs/operations-streaming.md, "Rotating the requests topic"). With `topic.requests.rotate.records` set, the query's
source starts a new generation of the topic once the newest one's longest partition holds that many offsets:
generation 0 is `topic.requests` itself, generation g > 0 the topic `<topic.requests>.<g>`, with as many partitions.
A group's requests go to the same partition number in every generation (murmur2 of its id).

Every generation is read for as long as the query runs: writers that have not switched (a gateway that has not read
the mark naming the new one yet, the client library and the admin tools, which always write generation 0) are read
as before, and a generation with nothing new costs a log-end read past its end, which lists nothing.

Inside the job and in the views topic's marks a requests partition is a *stream partition*: `generation * STRIDE +
partition`, so generation 0's are the topic's own partition numbers (checkpoints and views from before rotation
read the same), and ordering rows by (stream partition, offset) puts a group's older generations first.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

STRIDE = 1 << 16
"""Stream partitions per generation: a generation may have up to this many partitions."""


def topic_of(base: str, generation: int) -> str:
    """The name of generation `generation` of the requests topic `base`."""
    return base if generation == 0 else f"{base}.{generation}"


def generation_of(base: str, topic: str) -> int | None:
    """Which generation of `base` the topic `topic` is (None: none of them)."""
    if topic == base:
        return 0
    match = re.fullmatch(re.escape(base) + r"\.([1-9][0-9]*)", topic)
    return int(match.group(1)) if match else None


def generations(base: str, topics: Iterable[str]) -> list[int]:
    """The generations of `base` among `topics`, oldest first."""
    return sorted(g for g in (generation_of(base, t) for t in topics) if g is not None)


def stream_partition(generation: int, partition: int) -> int:
    return generation * STRIDE + partition


def split(stream: int) -> tuple[int, int]:
    """(generation, partition) of a stream partition."""
    return divmod(stream, STRIDE)


def group_log_end(ends: Mapping[int, int], stream: int) -> int | None:
    """The end of the stream partition `stream` in `ends` (stream partition -> log end), where no later
    generation's partition of the same number holds records; else None. A group's requests written after its view's
    position may be in a later generation, where its partition's end tells nothing about that group."""
    generation, partition = split(stream)
    if any(end > 0 for s, end in ends.items() if s % STRIDE == partition and s // STRIDE > generation):
        return None
    return ends.get(stream)
