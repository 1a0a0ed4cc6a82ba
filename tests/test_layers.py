"""The package layers, written once: imports only go down.

Each tier may import its own package and the tiers below it, never a tier above. The
adapters (HTTP, Dagster, MCP) are columns on top of the domain that never import each other;
only the entry points (the CLI, the dev supervisor) start them. The ``api`` package sits on
top of ``memory_platform``: nothing in ``memory_platform`` imports it (uvicorn starts it by
its module path). The MCP server is an HTTP client of the API: it imports nothing of the
platform.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DOMAIN = [                                   # bottom first
    {"settings", "errors", "text", "tracing"},
    {"secrets"},
    {"db"},
    {"access"},
    {"membership"},
    {"users"},
    {"trust"},
    {"embeddings", "llm"},
    {"ledger"},
    {"memories"},
    {"projection"},
    {"events"},
    {"retrieval"},
    {"graph"},
    {"context"},
    {"consolidation"},
    {"maintenance"},
    {"review"},
    {"dreaming"},
    {"sessions"},
    {"portability"},
    {"apikeys", "operator_status", "demo", "benchmarks"},
    {"inspector_sessions"},
]
ADAPTERS = {                                 # each column bottom first, above the domain
    "dagster": [{"orchestration"}, {"resources"}, {"assets"}, {"sensors"}, {"definitions"},
                {"launch"}],
    "http": [{"api"}],
    "mcp": [{"mcp"}],
}
ENTRY_POINTS = {"cli", "devserver", "__main__"}
ISOLATED = {"memory_platform.mcp"}           # imports nothing of the platform


def _unit(module: str) -> str | None:
    """The layer unit of a module: ``api``, or the first name under ``memory_platform``."""
    parts = module.split(".")
    if parts[0] == "api":
        return "api"
    if parts[0] == "memory_platform" and len(parts) > 1:
        return parts[1]
    return None


def _rank() -> dict[str, tuple[str, int]]:
    rank = {unit: ("domain", tier) for tier, units in enumerate(DOMAIN) for unit in units}
    for column, tiers in ADAPTERS.items():
        for tier, units in enumerate(tiers, len(DOMAIN)):
            rank.update({unit: (column, tier) for unit in units})
    rank.update({unit: ("entry", 10_000) for unit in ENTRY_POINTS})
    return rank


def _imports(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
    return found


def _modules():
    for top in ("memory_platform", "api"):
        for path in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            yield module.removesuffix(".__init__"), path


def _may_import(source: tuple[str, int], target: tuple[str, int]) -> bool:
    (source_column, source_tier), (target_column, target_tier) = source, target
    if source_column == "entry":
        return target_column != "http"                   # api imports the platform, not back
    if target_column == "entry":
        return False
    if target_column not in ("domain", source_column):
        return False                                     # adapters never import each other
    return target_tier < source_tier


def test_every_package_has_a_layer():
    rank = _rank()
    unplaced = {_unit(module) for module, _ in _modules()} - set(rank) - {None}
    assert not unplaced, f"place these packages in a layer of tests/test_layers.py: {unplaced}"


def test_imports_only_go_down():
    rank = _rank()
    upward = []
    for module, path in _modules():
        source = _unit(module)
        for imported, line in _imports(path):
            target = _unit(imported)
            if target is None or target == source:
                continue
            if not _may_import(rank[source], rank[target]):
                upward.append(f"{path.relative_to(ROOT)}:{line} {source} -> {target}")
    assert not upward, "imports that go up or across:\n" + "\n".join(upward)


def test_the_mcp_server_imports_nothing_of_the_platform():
    for module, path in _modules():
        if module in ISOLATED:
            platform = [m for m, _ in _imports(path) if _unit(m) is not None]
            assert not platform, f"{module} imports {platform}"


def test_the_checker_sees_an_upward_import(tmp_path):
    rank = _rank()
    assert not _may_import(rank["ledger"], rank["memories"])
    assert not _may_import(rank["api"], rank["assets"])
    assert not _may_import(rank["settings"], rank["db"])
    assert _may_import(rank["memories"], rank["ledger"])
    assert not _may_import(rank["cli"], rank["api"])
    assert _may_import(rank["cli"], rank["launch"])
