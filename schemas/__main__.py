"""`python -m schemas`: regenerate the JSON Schemas in this folder from `schemas.messages`."""

from schemas.json_schema import write

changed = write()
print("\n".join(f"wrote schemas/{name}" for name in changed) or "schemas/ is up to date")
