"""Every module of the product imports: a name a merge or a rename left behind fails here, in the fast lane, and not
only in the integration test that happens to start the process importing it. And the house keeps its shape: which
top-level package may import which, and how many modules any package keeps at its top."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
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


SHELLS = ("streaming", "gateway", "common", "coordinator")


@pytest.mark.parametrize("name", [m for m in modules() if m.split(".")[0] in SHELLS])
def test_the_shells_use_the_core_through_its_public_face(name):
    """`streaming/`, `gateway/`, `common/` and `coordinator/` import `state.api` and no other module of the core."""
    module = importlib.import_module(name)
    source = Path(module.__file__).read_text()
    imported = set(re.findall(r"^\s*(?:from|import) (state\.\w+)", source, flags=re.M))
    assert imported <= {"state.api"}, f"{name} imports {sorted(imported - {'state.api'})}"


PRODUCT = ("schemas", "state", "assignors", "common", "streaming", "client", "admin", "gateway", "coordinator")


def imported_packages(package: str) -> dict[str, list[str]]:
    """The product's top-level packages that `package` imports anywhere (functions' bodies included), each with the
    modules of `package` that import it."""
    out: dict[str, list[str]] = {}
    for path in sorted(Path(importlib.import_module(package).__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in PRODUCT and top != package:
                    out.setdefault(top, []).append(path.name)
    return out


def reachable(start: str) -> dict[str, str]:
    """Every product package `start` imports directly or through others, each with the import path that reaches it."""
    edges = {package: imported_packages(package) for package in PRODUCT}
    found = {start: start}
    todo = [start]
    while todo:
        package = todo.pop()
        for target in edges[package]:
            if target not in found:
                found[target] = f"{found[package]} -> {target}"
                todo.append(target)
    return found


@pytest.mark.parametrize("shell,other", [("streaming", "gateway"), ("gateway", "streaming")])
def test_the_job_and_the_gateway_do_not_import_each_other(shell, other):
    """Neither shell imports the other, directly or through another package: what both need is in `common/`, and
    only the `coordinator` command (`coordinator/`) composes them."""
    found = reachable(shell)
    assert other not in found, f"{shell} reaches {other}: {found[other]}"
    assert "coordinator" not in found, f"{shell} reaches the command that composes it: {found['coordinator']}"


def test_common_imports_neither_shell():
    assert not set(imported_packages("common")) & {"streaming", "gateway", "coordinator"}, imported_packages("common")


LAYERS = {
    "state": (
        ("state.config", "state.errors", "state.offset_values", "state.topics"),
        ("state.rules", "state.wire"),
        ("state.records",),
        ("state.handling",),
        ("state.classic",),
        ("state.consumer", "state.share"),
        ("state.views",),
        ("state.offsets",),
        ("state.runtime",),
        ("state.batch",),
        ("state.api", "state.offline", "state.replay"),
    ),
    "gateway": (
        ("gateway.protocol",),
        ("gateway.upstream",),
        ("gateway.fast", "gateway.security"),
        ("gateway.share",),
        ("gateway.front",),
        ("gateway.__main__",),
    ),
}
"""Inside the core and the gateway, the parts from the bottom up: a part imports only itself and the parts of the
layers below it (two parts of one layer, such as the consumer and the share groups, import neither the other).
In `state/`, what every kind of group shares is below the kinds (the one handler shape and the timers in
`state.handling`), the kinds above it, and what knows every kind above them; in `gateway/`, Kafka's bytes at the
bottom, the front door at the top. A new module of either package takes its place here."""


def _part(module: str, parts: list[str]) -> str | None:
    found = [p for p in parts if module == p or module.startswith(p + ".")]
    return max(found, key=len) if found else None


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_no_part_imports_a_part_above_it(package):
    """Every import counts, in a function's body or under TYPE_CHECKING too: a part that names one above it, even
    for a type, is a loop of the house."""
    layer_of = {part: i for i, layer in enumerate(LAYERS[package]) for part in layer}
    parts = list(layer_of)
    wrong = []
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        module = info.name
        part = _part(module, parts)
        if part is None:
            wrong.append(f"{module} is in no layer of LAYERS[{package!r}]")
            continue
        path = Path(importlib.util.find_spec(module).origin)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            targets = {_part(name, parts) for name in names} - {None, part}
            for target in targets:
                if layer_of[target] >= layer_of[part]:
                    wrong.append(f"{module} imports {target}")
    assert not wrong, "\n".join(sorted(set(wrong)))


MAX_TOP = 10
"""At most this many modules at the top of any package (`__init__.py` aside): a package that needs more has
subpackages by job (`streaming/group_stores`, `gateway/security`, `bench/micro`), so that its folder shows the
design."""

def packages() -> list[str]:
    """Every package of the product and of bench/, at any depth."""
    names = []
    for package in PACKAGES:
        names.append(package)
        root = importlib.import_module(package)
        names += [info.name for info in pkgutil.walk_packages(root.__path__, package + ".") if info.ispkg]
    return sorted(names)


def top_modules(package: str) -> list[str]:
    folder = Path(importlib.import_module(package).__file__).parent
    return sorted(path.name for path in folder.glob("*.py") if path.name != "__init__.py")


@pytest.mark.parametrize("package", packages())
def test_at_most_10_modules_at_the_top_of_any_package(package):
    top = top_modules(package)
    assert len(top) <= MAX_TOP, f"{len(top)} modules at the top of {package}: {top}"


@pytest.mark.parametrize("name", modules())
def test_no_assert_is_a_runtime_check(name):
    """`python -O` drops every `assert`, so a check that must hold when the product runs raises a real error."""
    path = Path(importlib.import_module(name).__file__)
    lines = [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Assert)]
    assert not lines, f"{name}: assert at line(s) {lines}"
