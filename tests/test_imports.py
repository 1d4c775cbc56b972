"""Every module of the product imports: a name a merge or a rename left behind fails here, in the fast lane, and not
only in the integration test that happens to start the process importing it."""

from __future__ import annotations

import importlib
import re
import pkgutil
from pathlib import Path

import pytest

PACKAGES = ("schemas", "state", "assignors", "common", "streaming", "client", "admin", "gateway", "coordinator",
            "bench", "deploy")


def modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names += [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")
                  if not info.name.endswith("__main__")]
    return sorted(names)


@pytest.mark.parametrize("name", modules())
def test_the_module_imports(name):
    importlib.import_module(name)


SHELLS = ("streaming", "gateway")


@pytest.mark.parametrize("name", [m for m in modules() if m.split(".")[0] in SHELLS])
def test_the_shells_use_the_core_through_its_public_face(name):
    """`streaming/` and `gateway/` import `state.api` and no other module of the core."""
    module = importlib.import_module(name)
    source = Path(module.__file__).read_text()
    imported = set(re.findall(r"^\s*(?:from|import) (state\.\w+)", source, flags=re.M))
    assert imported <= {"state.api"}, f"{name} imports {sorted(imported - {'state.api'})}"
