"""The JSON Schemas in schemas/ are exactly what `python -m schemas` generates from schemas/messages.py."""

from __future__ import annotations

import pytest

from schemas.json_schema import FOLDER, documents, render


@pytest.mark.parametrize("name", sorted(documents()))
def test_the_schema_file_is_the_generated_one(name):
    path = FOLDER / f"{name}.json"
    assert path.exists() and path.read_text() == render(documents()[name]), (
        f"schemas/{name}.json is stale: run `python -m schemas`")
