"""Reusable helpers for tests that talk to a real broker and a real coordinator query (see tests/conftest.py)."""
