"""The package layers, declared once: the domain is a graph of features, the adapters are
leaves on top of it.

1. **Features form a DAG.** Every unit of the domain (a package or a top-level module of
   ``memory_platform``) names the units it uses in ``DOMAIN``; the foundation (``FOUNDATION``)
   is open to all. An import from one unit to another must follow a declared edge, and the
   edges have no cycle. Siblings that do not use each other are simply not ordered.
2. **Adapters stay leaves.** The adapters (HTTP: ``api``; Dagster; the MCP client) and the
   entry points sit on top: no domain module imports them, the adapter columns never import
   each other (only the entry points start them), and one feature's module in an adapter
   folder (``api/routes/<feature>.py``, ``api/inspector/<feature>.py``,
   ``assets/<feature>.py``, ...) does not import another feature's module; the collectors
   (``api.table``, ``memory_platform.foundation.features``, ``definitions``, the CLI's group,
   ...) may.
   ``dagster``, ``starlette`` and ``click`` are imported only by the adapters that own them.
3. **Every import counts**: imports inside functions and under ``TYPE_CHECKING``, relative
   imports (resolved against their package), ``from package import module``, and the
   ``module:name`` strings that name a callable to load (a setting's default counts as an
   import of the adapter that reads the setting). The crossings made by name on purpose are
   declared in ``BY_NAME``.

The MCP server is an HTTP client of the API: it imports nothing of the platform. And no
module grows past ``MAX_MODULE_LINES``: past that it holds more than one job.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# --- the declaration --------------------------------------------------------------------------

# The foundation: any module may use these (their own edges are declared here too).
FOUNDATION: dict[str, tuple[str, ...]] = {
    "settings": (),
    "errors": (),
    "text": (),
    "language": (),
    "tracing": (),
    "features": (),
    "secrets": ("errors",),
    "db": ("settings",),
}

# Each unit of the domain and the units it uses (besides the foundation).
DOMAIN: dict[str, tuple[str, ...]] = {
    # shared lower modules
    "access": (),
    "membership": (),
    "users": (),
    "trust": ("access", "membership"),
    "embeddings": (),
    "llm": (),
    "ledger": ("access", "embeddings"),
    "projection": ("embeddings", "ledger", "memories"),
    # features
    "memories": ("access", "embeddings", "ledger", "users"),
    "retrieval": ("access", "embeddings", "ledger", "memories"),
    "events": ("access", "embeddings", "projection"),
    "graph": ("access", "embeddings", "ledger", "llm", "projection", "retrieval"),
    "context": ("access", "embeddings", "graph", "memories", "retrieval"),
    "consolidation": ("access", "embeddings", "graph", "ledger", "llm", "projection",
                      "retrieval"),
    "maintenance": ("access", "consolidation", "embeddings", "graph", "memories", "projection",
                    "retrieval", "users"),
    "review": ("access", "consolidation", "projection"),
    "dreaming": ("access", "consolidation", "embeddings", "graph", "ledger", "llm",
                 "memories", "projection", "retrieval"),
    "sessions": ("access", "dreaming", "embeddings", "llm", "maintenance", "membership",
                 "memories", "retrieval"),
    "portability": ("access", "dreaming", "embeddings", "ledger", "membership", "memories"),
    "apikeys": ("review",),
    "inspector_sessions": ("apikeys",),
    "operator_status": ("dreaming", "maintenance", "memories", "sessions"),
    "demo": ("access", "dreaming", "embeddings", "memories"),
    "benchmarks": ("access", "embeddings", "memories", "retrieval"),
}

# The adapter columns, each bottom first (a unit imports the units below it in its column).
ADAPTERS: dict[str, tuple[str, ...]] = {
    "dagster": ("resources", "orchestration", "assets", "sensors", "definitions", "launch"),
    "http": ("api",),
    "mcp": ("mcp",),
    "client": ("client", "integrations"),
}
# May start any column (the API by name only); devlock is devserver's data-directory lock.
ENTRY_POINTS = ("cli", "devserver", "devlock", "__main__")
# Import nothing of the platform but what is named: the MCP server (over HTTP), the Python
# client and the framework integrations over it (installable beside an agent without the
# server's dependencies).
ISOLATED = {"memory_platform.mcp": (), "memory_platform.client": (),
            "memory_platform.integrations": ("memory_platform.client",)}

# Adapter folders with one module per feature, and the modules in them that are shared kit
# (or collectors of the features) rather than a feature's own.
LEAF_FOLDERS = ("api.routes", "api.schemas", "api.inspector", "memory_platform.assets",
                "memory_platform.sensors", "memory_platform.cli")
SHARED_LEAVES = {"api.schemas.common", "memory_platform.cli.common", "api.inspector.data",
                 "api.inspector.guard", "api.inspector.pages", "api.inspector.session",
                 "api.inspector.markdown"}

# Frameworks and the units that may import them.
FRAMEWORKS: dict[str, set[str]] = {
    "dagster": {*ADAPTERS["dagster"], "cli"},
    "starlette": {"api"},
    "click": {"cli", "devserver"},
}

# Imports made by name on purpose (``module:name``), across what a static import may cross.
BY_NAME = {
    ("cli", "api"): "`serve` starts uvicorn on api.app:create_app",
    ("api", "launch"): "the Dream launcher and rollback recorder the API's settings name",
    ("api", "orchestration"): "Dagster's part of an erasure, named by api_dagster_eraser",
}

# Module size: past this a module holds more than one job (data belongs in data files).
MAX_MODULE_LINES = 600
OVER_THE_LIMIT: set[str] = set()                 # still to split, by the engineers on them
# Written by a generator, not by hand (held in step with its source by a test).
GENERATED = {"memory_platform/client/models.py"}  # scripts/client_models.py, from /openapi.json

# --- reading the code -------------------------------------------------------------------------

CALLABLE_NAME = re.compile(r"(?:memory_platform|api)(?:\.\w+)*:\w+")


@cache
def _modules() -> dict[str, Path]:
    found = {}
    for top in ("memory_platform", "api"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[module.removesuffix(".__init__")] = path
    return found


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


# The layer packages of memory_platform: their units are the names one level down.
LAYERS = ("foundation", "shared", "features")


def _unit(module: str) -> str | None:
    """The unit of a module: ``api``, the first name under ``memory_platform``, or under one
    of its layer packages (``memory_platform.features.retrieval`` is ``retrieval``)."""
    parts = module.split(".")
    if parts[0] == "api":
        return "api"
    if parts[0] == "memory_platform" and len(parts) > 2 and parts[1] in LAYERS:
        return parts[2]
    if parts[0] == "memory_platform" and len(parts) > 1 and parts[1] not in LAYERS:
        return parts[1]
    return None


def _imports(module: str, path: Path) -> Iterator[tuple[str, int]]:
    """Every module ``module`` imports, with its line: relative imports resolved, and
    ``from package import submodule`` as the submodule."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            yield base, node.lineno
            for alias in node.names:
                if f"{base}.{alias.name}" in _modules():
                    yield f"{base}.{alias.name}", node.lineno


def _named(path: Path) -> Iterator[tuple[str, int]]:
    """The ``module:name`` strings of a module (a callable it loads by name)."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and CALLABLE_NAME.fullmatch(node.value):
            yield node.value, node.lineno


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level (functions, classes, assignments)."""
    names = set()
    for node in _tree(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _column(unit: str) -> str:
    if unit in FOUNDATION or unit in DOMAIN:
        return "domain"
    if unit in ENTRY_POINTS:
        return "entry"
    return next(column for column, units in ADAPTERS.items() if unit in units)


def _may_import(source: str, target: str) -> bool:
    """Whether unit ``source`` may import unit ``target`` (two different units)."""
    if source in FOUNDATION:
        return target in FOUNDATION[source]
    if source in DOMAIN:
        return target in FOUNDATION or target in DOMAIN[source]
    column, target_column = _column(source), _column(target)
    if column == "entry":
        return target_column != "http"                   # api imports the platform, not back
    if target_column == "domain":
        return True
    if target_column != column:
        return False                                     # adapters never import each other
    units = ADAPTERS[column]
    return units.index(target) < units.index(source)


def _leaf(module: str) -> str | None:
    """The feature a module of a leaf folder belongs to (its name), or None."""
    folder, _, name = module.rpartition(".")
    if folder in LEAF_FOLDERS and module not in SHARED_LEAVES:
        return name
    return None


def _crosses_features(source: str, target: str) -> bool:
    source_feature, target_feature = _leaf(source), _leaf(target)
    return None not in (source_feature, target_feature) and source_feature != target_feature


def _settings_readers(field: str) -> set[str]:
    """The units whose code reads ``settings.<field>``."""
    readers = set()
    for module, path in _modules().items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Attribute) and node.attr == field:
                readers.add(_unit(module))
                break
    return readers - {"settings"}


# --- the tests --------------------------------------------------------------------------------


def test_every_unit_has_a_place():
    placed = {*FOUNDATION, *DOMAIN, *ENTRY_POINTS, *(u for us in ADAPTERS.values() for u in us)}
    units = {_unit(module) for module in _modules()} - {None}
    assert not units - placed, f"place these in tests/test_layers.py: {units - placed}"
    declared = {used for uses in (*FOUNDATION.values(), *DOMAIN.values()) for used in uses}
    assert declared <= {*FOUNDATION, *DOMAIN}, declared - {*FOUNDATION, *DOMAIN}


def test_the_features_form_a_dag():
    graph = {**FOUNDATION, **{unit: (*uses, *FOUNDATION) for unit, uses in DOMAIN.items()}}
    done: set[str] = set()

    def visit(unit: str, path: tuple[str, ...]) -> None:
        assert unit not in path, "a cycle: " + " -> ".join([*path, unit])
        if unit not in done:
            for used in graph[unit]:
                visit(used, (*path, unit))
            done.add(unit)

    for unit in graph:
        visit(unit, ())


def _layer(unit: str) -> int | None:
    """The layer package a domain unit lives in (its index in LAYERS), from the tree."""
    for index, layer in enumerate(LAYERS):
        package = ROOT / "memory_platform" / layer
        if (package / unit).is_dir() or (package / f"{unit}.py").is_file():
            return index
    return None


def test_a_layer_package_uses_none_above_it():
    """foundation/ uses only foundation/, shared/ nothing of features/: the top level of
    memory_platform shows the layers only while the declared edges keep to them."""
    graph = {**FOUNDATION, **DOMAIN}
    upward = [f"{unit} ({LAYERS[_layer(unit)]}) -> {used} ({LAYERS[_layer(used)]})"
              for unit, uses in graph.items() for used in uses
              if _layer(unit) is not None and _layer(used) is not None
              and _layer(used) > _layer(unit)]
    assert not upward, "move the unit to the layer it needs:\n" + "\n".join(upward)


def test_imports_follow_the_declared_edges():
    wrong = []
    for module, path in _modules().items():
        source = _unit(module)
        for imported, line in _imports(module, path):
            target = _unit(imported)
            if target is None or target == source:
                continue
            if not _may_import(source, target):
                wrong.append(f"{path.relative_to(ROOT)}:{line} {source} -> {target}")
    assert not wrong, "imports no edge allows (declare the edge or turn it around):\n" + \
        "\n".join(sorted(set(wrong)))


def test_no_feature_adapter_imports_another_features_adapter():
    crossings = []
    for module, path in _modules().items():
        for imported, line in _imports(module, path):
            if _crosses_features(module, imported):
                crossings.append(f"{path.relative_to(ROOT)}:{line} {module} -> {imported}")
    assert not crossings, "one feature's adapter imports another's:\n" + \
        "\n".join(sorted(set(crossings)))


def test_frameworks_only_in_their_adapters():
    wrong = []
    for module, path in _modules().items():
        for imported, line in _imports(module, path):
            framework = imported.split(".")[0].split("_")[0]   # dagster_postgres: dagster
            if framework in FRAMEWORKS and _unit(module) not in FRAMEWORKS[framework]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} {module} imports {imported}")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_names_of_callables_are_checked_like_imports():
    """A ``module:name`` string names a module that exists and defines ``name``; the string
    counts as an import of the module that holds it, and a setting's default as one of each
    unit that reads the setting."""
    from memory_platform.foundation.settings import Settings

    named = [(module, value, f"{path.relative_to(ROOT)}:{line}")
             for module, path in _modules().items() if _unit(module) != "settings"
             for value, line in _named(path)]
    for field, info in Settings.model_fields.items():
        if isinstance(info.default, str) and CALLABLE_NAME.fullmatch(info.default):
            named += [(f"memory_platform.{reader}" if reader != "api" else "api", info.default,
                       f"settings.{field}") for reader in _settings_readers(field)]
    assert any(where.startswith("settings.") for *_, where in named)
    wrong = []
    for holder, value, where in named:
        target_module, _, name = value.partition(":")
        path = _modules().get(target_module)
        defined = path is not None and name in _defined(path)
        source, target = _unit(holder), _unit(target_module)
        if not defined:
            wrong.append(f"{where}: {value} names nothing")
        elif source != target and not _may_import(source, target) \
                and (source, target) not in BY_NAME:
            wrong.append(f"{where}: {source} -> {target} by name ({value})")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_no_module_over_the_size_limit():
    code = [*_modules().values(), *(ROOT / "bench").rglob("*.py"),
            *(ROOT / "scripts").rglob("*.py")]
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
             for path in code}
    over = {name: lines for name, lines in sizes.items()
            if lines > MAX_MODULE_LINES and name not in OVER_THE_LIMIT | GENERATED}
    assert not over, f"split these along their seams (at most {MAX_MODULE_LINES} lines): {over}"


def test_the_isolated_packages_import_nothing_of_the_platform():
    for module, path in _modules().items():
        isolated = next((i for i in ISOLATED if module == i or module.startswith(i + ".")),
                        None)
        if isolated is not None:   # its own package's modules only
            own = (isolated, *ISOLATED[isolated])
            platform = [m for m, _ in _imports(module, path) if _unit(m) is not None
                        and not any(m == o or m.startswith(o + ".") for o in own)]
            assert not platform, f"{module} imports {platform}"


def test_the_checker_sees_what_it_must(tmp_path):
    assert not _may_import("ledger", "memories")          # an edge the other way
    assert not _may_import("graph", "context")
    assert _may_import("memories", "ledger") and _may_import("memories", "settings")
    assert not _may_import("settings", "db")              # the foundation has its own order
    assert not _may_import("dreaming", "assets")          # a domain unit imports an adapter
    assert not _may_import("api", "assets")               # across adapter columns
    assert not _may_import("orchestration", "assets")     # up its own column
    assert not _may_import("cli", "api") and _may_import("cli", "launch")
    assert _crosses_features("api.routes.dreaming", "api.routes.review")
    assert not _crosses_features("api.routes.dreaming", "api.schemas.dreaming")
    assert not _crosses_features("api.routes.memory", "api.schemas.common")
    package = tmp_path / "memory_platform" / "graph"
    package.mkdir(parents=True)
    (package / "probe.py").write_text("from ..context import x\nfrom . import store\n")
    found = [m for m, _ in _imports("memory_platform.features.graph.probe", package / "probe.py")]
    assert {"memory_platform.features.context",
            "memory_platform.features.graph.store"} <= set(found)
    assert CALLABLE_NAME.fullmatch("memory_platform.launch:launch_for_api")
