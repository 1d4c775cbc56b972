"""Fixtures for the coordinator-core tests: a fresh GroupContext per test."""

from __future__ import annotations

import pytest

from state.config import CoordinatorConfig
from tests.state.context import GroupContext


@pytest.fixture
def ctx() -> GroupContext:
    """A group "g" at time 0 with Kafka's default configuration."""
    return GroupContext()


@pytest.fixture
def ctx_no_delay() -> GroupContext:
    """The same without the initial rebalance delay, so a join phase can complete in the next call."""
    return GroupContext(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
