"""The coding-agent skill (skills/memory-platform, seed:60) stays in step with the MCP server:
every tool it names is one the server registers, it names the preferred read path and the
write tool, and its setup names exactly the variables the server reads."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp import Client

from memory_platform.mcp import build_server

SKILL = Path(__file__).resolve().parents[2] / "skills" / "memory-platform"
TOOL_NAME = re.compile(r"`((?:memory|context|knowledge|session)_[a-z_]+)`")


def registered_tools() -> set[str]:
    async def main() -> set[str]:
        env = {"MEMORY_API_URL": "http://127.0.0.1:9", "MEMORY_READ_TOKEN": "r",
               "MEMORY_WRITE_TOKEN": "w"}
        async with Client(build_server(env)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}
    return anyio.run(main)


def test_the_skill_names_only_tools_the_server_registers():
    text = (SKILL / "SKILL.md").read_text()
    named = set(TOOL_NAME.findall(text))
    assert named <= registered_tools(), named - registered_tools()
    assert {"context_search", "context_get", "memory_get", "memory_store"} <= named
    assert text.startswith("---\nname: memory-platform\ndescription: ")


def test_the_setup_names_the_variables_the_server_reads():
    source = (Path(__file__).resolve().parents[2] / "memory_platform" / "mcp"
              / "__init__.py").read_text()
    read = set(re.findall(r'env\.get\("(MEMORY_[A-Z_]+)"\)', source))
    documented = set(re.findall(r"`(MEMORY_[A-Z_]+)`", (SKILL / "references" / "setup.md")
                                .read_text()))
    assert documented == read
