"""Every module of the product imports: a name a merge or a rename left behind fails here, in the fast lane, and not
only in the integration test that happens to start the process importing it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

PACKAGES = ("schemas", "state", "assignors", "streaming", "client", "admin", "gateway", "bench", "deploy")


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
