"""Reading the Prometheus text the job serves, for tests."""

from __future__ import annotations


def samples(text: str) -> dict[str, float]:
    """`{'name{label="value"}': value}` for every sample line of a Prometheus text exposition."""
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line and not line.startswith("#")}
