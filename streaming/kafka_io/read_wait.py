"""A read of a planned range that waits for its records without giving up, whichever client reads
(`streaming.kafka_io.librdkafka.read_range`, the kafka-python reads of `streaming.kafka_io.source`)."""

from __future__ import annotations

import logging
import time

log = logging.getLogger(__name__)


class ReadWait:
    """A read of a planned range that waits for its records without giving up.

    The planned end is a high watermark the broker reported, so the records are there; a broker under load (tansu
    on two busy cores was measured taking minutes) can still be slow to serve them. Failing the task stopped the
    query, and its restart planned the same range again, so waiting loses nothing and stopping gains nothing: the
    read says so in one line a minute (`wait_log_s`) and carries on."""

    def __init__(self, where: str, end: int, wait_log_s: float) -> None:
        self.where, self.end, self.wait_log_s = where, end, wait_log_s
        self.started = self.next_line = time.monotonic()
        self.next_line += wait_log_s

    def check(self, position: int) -> None:
        """Called after every poll of the read with the next offset it expects; logs once every `wait_log_s`."""
        now = time.monotonic()
        if now >= self.next_line:
            self.next_line = now + self.wait_log_s
            log.warning("%s: waiting for offsets %d up to %d to become readable (%.0f s so far); still waiting",
                        self.where, position, self.end, now - self.started)
