"""The Python log of `coordinator run` and `coordinator gateway`: one format, and the third-party loggers' levels.

What a healthy process logs at WARNING is noise an operator learns to skip, which hides the warnings that matter; so
libraries whose warnings come on every healthy run start higher here, each with the reason.
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

LEVELS = {
    # kafka-python's INFO is connection-by-connection; its warnings and errors stay.
    "kafka": logging.WARNING,
    # "Task ... ran for 0.101s (>0.100s threshold). It is blocking the event loop": kafka-python's notice that its
    # network loop was held up. The job's driver and the gateway share their interpreter with other threads (Spark's
    # callbacks, the listener, the gateway's connections), so it comes on any loaded host; a real stall shows as
    # request timeouts, which are logged.
    "kafka.net.selector": logging.ERROR,
    "py4j": logging.WARNING,
}


def configure() -> None:
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    for name, level in LEVELS.items():
        logging.getLogger(name).setLevel(level)
