"""The installed dependency set is coherent (pip check stays quiet on the Dagster trap)."""

from importlib.metadata import entry_points, version


def test_dagster_postgres_imports_and_matches_the_dagster_release():
    import dagster
    import dagster_postgres

    assert dagster_postgres.__version__ == "0.29.27"
    assert dagster.__version__ == version("dagster-webserver") == version("dagster-graphql")


def test_the_console_script_is_installed():
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts["memory-platform"] == "memory_platform.cli:main"


def test_every_command_has_help():
    from click.testing import CliRunner

    from memory_platform.cli import main

    def walk(group, path):
        yield path
        for name, command in getattr(group, "commands", {}).items():
            yield from walk(command, [*path, name])

    for path in walk(main, []):
        result = CliRunner().invoke(main, [*path, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, path
