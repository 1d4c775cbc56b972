"""Fixtures of the streaming tests that more than one module uses."""

from __future__ import annotations

import logging
from typing import Iterator

import pytest


@pytest.fixture
def console_log(request) -> Iterator[tuple[logging.Logger, list[str]]]:
    """A logger of its own for a Console, and the messages it logged."""
    lines: list[str] = []
    out = logging.getLogger(f"test-console.{request.node.name}")
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    out.addHandler(handler)
    out.setLevel(logging.INFO)
    yield out, lines
    out.removeHandler(handler)
