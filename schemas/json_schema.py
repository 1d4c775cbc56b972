"""The JSON Schemas of `schemas.messages`, generated: one file per request, response and record.

    python -m schemas          # rewrites schemas/*.json; tests/schemas fails while a file is stale

Requests require the fields their class requires (the others have defaults); responses and records carry every
field, except those that are left out unless set (`error_message`, a member's `principal`). A field's description
comes from its `Meta(description=...)`, its `Versions` and its `Extension`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_type_hints

from msgspec import Struct
from msgspec import inspect as mi

from schemas.consumer_group import TopicMetadata
from schemas.messages import (
    API_VERSIONS,
    RECORDS,
    REQUESTS,
    RESPONSES,
    VIEWS,
    ErrorResponse,
    Extension,
    Versions,
)

FOLDER = Path(__file__).resolve().parent
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def documents() -> dict[str, dict]:
    """Every schema, by file stem."""
    out: dict[str, dict] = {}
    for api, cls in REQUESTS.items():
        out[f"{api}Request"] = _document(f"{api}Request", f"{api} request", cls, every_field=False)
    for api, cls in RESPONSES.items():
        out[f"{api}Response"] = _document(f"{api}Response", f"{api} response", cls, every_field=True)
    out["ErrorResponse"] = _document("ErrorResponse", "answer to a request whose api is unknown", ErrorResponse,
                                     every_field=True)
    out["TopicMetadataRequest"] = _document("TopicMetadataRequest", "TopicMetadata request (internal)",
                                            TopicMetadata, every_field=False)
    for name, cls in {**RECORDS, **VIEWS}.items():
        out[name] = _document(name, name, cls, every_field=True)
    return dict(sorted(out.items()))


def write(folder: Path = FOLDER) -> list[str]:
    """Write every schema; the names of the files that changed."""
    changed = []
    for name, doc in documents().items():
        path = folder / f"{name}.json"
        text = render(doc)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path.name)
    return changed


def render(doc: dict) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _document(name: str, title: str, cls: type[Struct], every_field: bool) -> dict:
    info = mi.type_info(cls)
    if not isinstance(info, mi.StructType):
        raise TypeError(f"{cls.__name__} is not a msgspec Struct: it has no JSON object schema")
    doc: dict[str, Any] = {"$schema": DRAFT, "$id": f"{name}.json", "title": title}
    if cls.__doc__ and cls.__doc__ is not Struct.__doc__:
        doc["description"] = " ".join(cls.__doc__.split())
    return {**doc, **_object(info, every_field)}


def _object(info: mi.StructType, every_field: bool) -> dict:
    hints = get_type_hints(info.cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    if info.tag_field is not None:
        properties[info.tag_field] = {"const": info.tag}
        required.append(info.tag_field)
    for f in info.fields:
        annotations = getattr(hints[f.name], "__metadata__", ())
        schema = _api_version(info.tag) if f.name == "api_version" else _type(f.type, every_field)
        notes = [str(a) for a in annotations if isinstance(a, Versions)]
        notes += [f"extension: {a.why}" for a in annotations if isinstance(a, Extension) and f.name != "api_version"]
        if "description" in schema:
            notes.append(schema.pop("description"))
        if notes:
            schema["description"] = ", ".join(notes)
        properties[f.name] = schema
        omitted = f.default is mi.NODEFAULT and not f.required  # UNSET: left out unless set
        if f.required or (every_field and not omitted):
            required.append(f.name)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _api_version(api: Any) -> dict:
    low, high = API_VERSIONS[api]
    return {"type": "integer", "minimum": low, "maximum": high,
            "description": f"Kafka's {api} version; default {high}"}


def _type(t: mi.Type, every_field: bool) -> dict:
    if isinstance(t, mi.Metadata):
        return {**_type(t.type, every_field), **(t.extra_json_schema or {})}
    if isinstance(t, mi.StrType):
        out: dict[str, Any] = {"type": "string"}
        if t.max_length is not None:
            out["maxLength"] = t.max_length
        if t.pattern is not None:
            out["pattern"] = t.pattern
        return out
    if isinstance(t, mi.IntType):
        return {"type": "integer", "minimum": t.ge, "maximum": t.le}
    if isinstance(t, mi.BoolType):
        return {"type": "boolean"}
    if isinstance(t, mi.LiteralType):
        return {"const": t.values[0]} if len(t.values) == 1 else {"enum": list(t.values)}
    if isinstance(t, (mi.VarTupleType, mi.ListType)):
        return {"type": "array", "items": _type(t.item_type, every_field)}
    if isinstance(t, mi.StructType):
        return _object(t, every_field)
    if isinstance(t, mi.DictType):
        return {"type": "object", "additionalProperties": _type(t.value_type, every_field)}
    if isinstance(t, mi.UnionType):
        inner = [u for u in t.types if not isinstance(u, mi.NoneType)]
        (only,) = inner
        schema = _type(only, every_field)
        if len(inner) < len(t.types):
            schema["type"] = [schema["type"], "null"]
        return schema
    raise TypeError(f"no JSON Schema for {t}")
