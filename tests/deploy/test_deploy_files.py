"""The deployment files (deploy/, .dockerignore, docs/deploy.md) against the code they run.

No Docker engine, cluster or Helm binary is needed (none runs here): what can be checked
without them is checked against the real thing: COPY sources against the build context and
the repository's .dockerignore, every command against the real click CLIs (parsed, not run),
the probes against the API's routes, every MEMORY_* name against Settings, Dagster's
dagster.yaml against Dagster's own config schemas, and the Helm values against the parts of
the dagster/dagster chart's schema they touch (transcribed below: the chart's
values.schema.json could not be downloaded here). No database is used.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import tomllib
from functools import cache
from importlib.metadata import entry_points, version
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml

from memory_platform.foundation.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = DEPLOY / "compose.yaml"
DAGSTER_YAML = DEPLOY / "dagster.yaml"
WORKSPACE = DEPLOY / "workspace.yaml"
ENV_EXAMPLE = DEPLOY / "env.example"
HELM_VALUES = DEPLOY / "helm" / "values.yaml"
K8S_API = DEPLOY / "k8s" / "api.yaml"
K8S_MIGRATE = DEPLOY / "k8s" / "migrate-job.yaml"
DOC = ROOT / "docs" / "deploy.md"

ALL_FILES = [DOCKERFILE, DOCKERIGNORE, COMPOSE, DAGSTER_YAML, WORKSPACE, ENV_EXAMPLE,
             HELM_VALUES, K8S_API, K8S_MIGRATE, DOC]

API_PORT = 8080
CODE_SERVER_PORT = 4000


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def load_all_yaml(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


# --- the Dockerfile and its build context -----------------------------------------------------

def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        if current:
            lines.append(current)
        current = ""
    out = []
    for line in lines:
        keyword, _, rest = line.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def copy_sources(instructions: list[tuple[str, str]]) -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY/ADD from the build context (not --from=)."""
    copies = []
    for keyword, args in instructions:
        if keyword not in ("COPY", "ADD"):
            continue
        words = shlex.split(args)
        if any(w.startswith("--from=") for w in words):
            continue
        words = [w for w in words if not w.startswith("--")]
        copies.append((words[:-1], words[-1]))
    return copies


def _pattern_regex(pattern: str) -> re.Pattern:
    """A .dockerignore pattern (Go filepath.Match plus **) as a regex over a clean path."""
    pattern = pattern.strip("/")
    out, i = "", 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        else:
            out += re.escape(char)
        i += 1
    return re.compile(f"^{out}$")


def dockerignore_rules(text: str) -> list[tuple[bool, re.Pattern]]:
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        rules.append((negated, _pattern_regex(line.lstrip("!").strip())))
    return rules


def excluded(path: str, rules: list[tuple[bool, re.Pattern]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    verdict = False
    for negated, regex in rules:
        if any(regex.match(c) for c in candidates):
            verdict = not negated
    return verdict


@cache
def instructions() -> list[tuple[str, str]]:
    return dockerfile_instructions(DOCKERFILE.read_text())


@cache
def ignore_rules() -> list[tuple[bool, re.Pattern]]:
    return dockerignore_rules(DOCKERIGNORE.read_text())


def test_the_dockerignore_matcher_follows_dockers_rules():
    rules = dockerignore_rules("*\n!api\n**/__pycache__\n!deploy/dagster.yaml\n")
    assert excluded(".env", rules) and excluded(".venv/bin/python", rules)
    assert not excluded("api/app.py", rules)
    assert excluded("api/__pycache__/app.cpython-311.pyc", rules)
    assert not excluded("deploy/dagster.yaml", rules) and excluded("deploy/compose.yaml", rules)


def test_every_copy_source_is_in_the_build_context_and_not_ignored():
    copies = copy_sources(instructions())
    assert copies, "the Dockerfile copies nothing"
    for sources, _ in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: missing from the build context"
            assert not excluded(source, ignore_rules()), f"COPY {source}: .dockerignore drops it"


def test_the_build_context_keeps_secrets_and_local_state_out():
    for path in [".env", "deploy/.env", ".venv/bin/python", ".memory-platform/pgdata/PG_VERSION",
                 ".git/config", "bench/results/x.json", "tests/conftest.py",
                 "memory_platform/__pycache__/settings.cpython-311.pyc"]:
        assert excluded(path, ignore_rules()), path


def test_the_image_installs_what_the_project_declares():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    copied = {source for sources, _ in copy_sources(instructions()) for source in sources}
    # setuptools needs the readme pyproject names, and every package it finds.
    assert pyproject["project"]["readme"] in copied
    for package in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert package.rstrip("*") in copied, package
    assert "constraints.txt" in copied
    runs = " ".join(args for keyword, args in instructions() if keyword == "RUN")
    assert "--constraint constraints.txt" in runs
    (extras,) = re.findall(r'"\.\[([^\]]*)\]"', runs)
    assert extras.split(",") == ["local"], extras  # the offline models; no dev extras
    assert "local" in pyproject["project"]["optional-dependencies"]


def test_the_image_is_python_311_slim_and_runs_as_a_user():
    args = dict(a.split("=", 1) for k, a in instructions() if k == "ARG" and "=" in a)
    images = [a.split()[0] for k, a in instructions() if k == "FROM"]
    resolved = [args.get(i.strip("${}"), i) for i in images]
    assert resolved and all(i.startswith("python:3.11-slim") for i in resolved), resolved
    users = [a for k, a in instructions() if k == "USER"]
    assert users, "the image runs as root"
    user = users[-1].split(":")[0]
    assert args.get(user.strip("${}"), user) not in ("0", "root")


def test_the_image_has_no_entrypoint_so_args_replace_its_command():
    # The chart's user-deployment template passes the code-server command as `args`, and
    # compose/k8s give whole commands: an ENTRYPOINT would be prepended to all of them.
    assert not [a for k, a in instructions() if k == "ENTRYPOINT"]
    assert [k for k, _ in instructions()].count("CMD") == 1


def test_dagster_k8s_is_pinned_to_the_dagster_family():
    args = dict(a.split("=", 1) for k, a in instructions() if k == "ARG" and "=" in a)
    assert args["DAGSTER_K8S_VERSION"] == version("dagster-postgres")


def test_migrations_travel_with_the_image_and_settings_find_them():
    env = dockerfile_env()
    destinations = {source: dest for sources, dest in copy_sources(instructions())
                    for source in sources}
    assert destinations["migrations"] == env["MEMORY_MIGRATIONS_DIR"]
    assert destinations["deploy/dagster.yaml"] == f"{env['DAGSTER_HOME']}/dagster.yaml"
    assert sorted((ROOT / "migrations").glob("0*.sql"))


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, args in instructions():
        if keyword == "ENV":
            for word in shlex.split(args):
                name, _, value = word.partition("=")
                env[name] = value
    return env


# --- entry points and commands ------------------------------------------------------------------

def test_the_console_script_and_the_code_location_exist():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["memory-platform"] == "memory_platform.cli:main"
    definitions = importlib.import_module("memory_platform.definitions")
    assert callable(definitions.defs)


@cache
def click_program(name: str) -> click.Command:
    """The click command a console script runs (dagster's scripts wrap theirs in main())."""
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == name]
    target = script.load()
    if isinstance(target, click.Command):
        return target
    command = importlib.import_module(script.module).cli
    assert isinstance(command, click.Command), name
    return command


def image_paths() -> dict[str, str]:
    """Files the Dockerfile copies into the image: their path there -> here."""
    return {dest: str(ROOT / source) for sources, dest in copy_sources(instructions())
            for source in sources}


def parse_command(argv: list[str]) -> click.Context:
    """Parse ``argv`` with the real CLI of argv[0], down to the leaf command, running
    nothing; click raises on an unknown command, option or a bad value. A path the image
    holds is checked as the file the Dockerfile copies there."""
    command = click_program(argv[0])
    args = [image_paths().get(arg, arg) for arg in argv[1:]]
    ctx = command.make_context(argv[0], args)
    while isinstance(command, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        name, command, rest = command.resolve_command(ctx, rest)
        assert command is not None, argv
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx


def test_the_command_parser_refuses_what_the_cli_refuses():
    with pytest.raises(click.UsageError):
        parse_command(["memory-platform", "api", "--bind", "0.0.0.0"])
    with pytest.raises(click.UsageError):
        parse_command(["dagster", "code-server", "launch", "-m", "x"])
    assert parse_command(["memory-platform", "api", "--port", "8080"]).params["port"] == 8080


def check_python_snippet(code: str) -> None:
    """Compile ``python -c`` code and import every name it imports."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "s":
            assert node.attr in Settings.model_fields, node.attr


def check_command(argv: list[str]) -> None:
    """A container command: a console script, ``python -c``, or ``sh -c`` of those."""
    if argv[0] == "sh" and argv[1] == "-c":
        for part in argv[2].split("&&"):
            check_command(shlex.split(part))
        return
    if argv[0] == "python" and argv[1] == "-c":
        check_python_snippet(argv[2])
        return
    parse_command(argv)


def compose() -> dict:
    return load_yaml(COMPOSE)


def container_commands() -> list[list[str]]:
    commands = []
    for service, spec in compose()["services"].items():
        if service == "postgres":
            continue
        commands.append(spec["command"])
        test = spec.get("healthcheck", {}).get("test", [""])
        if test[0] == "CMD":
            commands.append(test[1:])
    for path in (K8S_API, K8S_MIGRATE):
        for doc in load_all_yaml(path):
            if doc["kind"] in ("Deployment", "Job"):
                for container in doc["spec"]["template"]["spec"]["containers"]:
                    commands.append(container["command"])
    for keyword, args in instructions():
        if keyword == "CMD":
            commands.append(json.loads(args))
    commands.append(helm_code_server_command())
    return commands


def test_every_command_parses_with_the_real_cli():
    commands = container_commands()
    assert len(commands) >= 10
    for argv in commands:
        check_command(argv)


def test_the_api_listens_where_the_probes_and_ports_look():
    commands = [c for c in container_commands() if c[:2] == ["memory-platform", "api"]]
    assert len(commands) >= 3  # Dockerfile CMD, compose, k8s
    for argv in commands:
        ctx = parse_command(argv)
        assert ctx.params["host"] == "0.0.0.0" and ctx.params["port"] == API_PORT, argv


# --- API routes behind the probes ---------------------------------------------------------------

@cache
def api_get_paths() -> frozenset[str]:
    from starlette.routing import Match

    from api.app import create_app

    app = create_app(Settings(database_url="postgresql://probe:probe@localhost/probe"))

    def answers(path: str) -> bool:
        scope = {"type": "http", "path": path, "method": "GET", "root_path": ""}
        return any(route.matches(scope)[0] == Match.FULL for route in app.routes)

    return frozenset(p for p in ("/healthz", "/readyz", "/nope-not-a-route") if answers(p))


def test_the_probe_checker_knows_a_wrong_path():
    assert "/healthz" in api_get_paths() and "/nope-not-a-route" not in api_get_paths()


def test_compose_healthchecks_use_real_routes():
    for service in ("api", "webserver"):
        test = " ".join(compose()["services"][service]["healthcheck"]["test"])
        (url,) = re.findall(r"http://127\.0\.0\.1:(\d+)(/[\w/]*)", test)
        port, path = url
        if service == "api":
            assert int(port) == API_PORT and path in api_get_paths()
        else:
            import dagster_webserver

            source = Path(dagster_webserver.__file__).parent / "webserver.py"
            assert f'"{path}"' in source.read_text(), f"the webserver has no route {path}"


# --- compose -------------------------------------------------------------------------------------

SERVICES = {"postgres", "migrate", "api", "code-server", "webserver", "daemon"}


def test_compose_has_the_services_with_healthchecks_and_order():
    services = compose()["services"]
    assert set(services) == SERVICES
    for name in SERVICES - {"migrate"}:
        assert services[name]["healthcheck"]["test"], name
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "code-server"):
        assert services[name]["depends_on"]["migrate"]["condition"] \
            == "service_completed_successfully", name
    for name in ("webserver", "daemon"):
        assert services[name]["depends_on"]["code-server"]["condition"] == "service_healthy"
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")


def test_compose_builds_the_image_from_the_repository_root():
    for name, spec in compose()["services"].items():
        if name == "postgres":
            continue
        build = spec["build"]
        context = (COMPOSE.parent / build["context"]).resolve()
        assert context == ROOT and (context / build["dockerfile"]) == DOCKERFILE, name
        assert [e["path"] for e in spec["env_file"]] == [".env"], name


def test_compose_variables_are_defined_in_the_env_example():
    defined = {line.split("=", 1)[0] for line in ENV_EXAMPLE.read_text().splitlines()
               if line and not line.startswith("#")}
    used = set(re.findall(r"\$\{([A-Z0-9_]+)(?::?[-?][^}]*)?\}", COMPOSE.read_text()))
    assert used and used <= defined, used - defined


def test_the_dagster_services_share_one_instance_and_workspace():
    services = compose()["services"]
    workspace = load_yaml(WORKSPACE)["load_from"][0]["grpc_server"]
    root_workspace = load_yaml(ROOT / "workspace.yaml")["load_from"][0]["python_module"]
    from memory_platform.launch import LOCATION_NAME

    assert workspace["location_name"] == root_workspace["location_name"] == LOCATION_NAME
    assert workspace["host"] == "code-server" and workspace["port"] == CODE_SERVER_PORT
    code_server = parse_command(services["code-server"]["command"]).params
    assert code_server["port"] == CODE_SERVER_PORT
    assert code_server["location_name"] == LOCATION_NAME
    assert code_server["module_name"] == "memory_platform.definitions"
    for name in ("webserver", "daemon"):
        assert parse_command(services[name]["command"]).params["workspace"] \
            == (str(WORKSPACE),), name
    logs = load_yaml(DAGSTER_YAML)["compute_logs"]["config"]["base_dir"]
    for name in ("code-server", "webserver", "daemon"):
        assert any(v.endswith(f":{logs}") for v in services[name]["volumes"]), name
        env = services[name]["environment"]
        assert env["DAGSTER_PG_DB"] == env["MEMORY_DAGSTER_DATABASE_NAME"] \
            == Settings.model_fields["dagster_database_name"].default


# --- dagster.yaml --------------------------------------------------------------------------------

def test_dagster_yaml_is_a_valid_instance_config(tmp_path):
    from dagster._core.instance.config import dagster_instance_config

    (tmp_path / "dagster.yaml").write_text(DAGSTER_YAML.read_text())
    config, _ = dagster_instance_config(str(tmp_path))
    assert "postgres" in config["storage"]


def test_dagster_yaml_storage_resolves_from_the_compose_environment(monkeypatch):
    from dagster._config import process_config
    from dagster_postgres import DagsterPostgresStorage

    env = compose()["services"]["daemon"]["environment"]
    for name, value in env.items():
        monkeypatch.setenv(name, value.replace("${POSTGRES_USER}", "memory")
                           .replace("${POSTGRES_PASSWORD}", "secret"))
    storage = load_yaml(DAGSTER_YAML)["storage"]["postgres"]
    result = process_config(DagsterPostgresStorage.config_type(), storage)
    assert result.success, result.errors
    assert result.value["postgres_db"]["db_name"] == "dagster"
    names = set(re.findall(r"env: (\w+)", DAGSTER_YAML.read_text()))
    assert names and names <= set(env), names - set(env)


def test_dagster_yaml_has_the_platforms_pools_and_run_limits():
    from memory_platform.orchestration.home import dagster_yaml

    dev = json.loads(dagster_yaml(
        "postgresql+psycopg2://x@y/dagster", logs_dir=Path("/tmp/logs"),
        writer_pool_limit=Settings.model_fields["dagster_writer_pool_limit"].default))
    deployed = load_yaml(DAGSTER_YAML)
    assert deployed["concurrency"] == dev["concurrency"]
    assert deployed["run_monitoring"] == dev["run_monitoring"]


# --- MEMORY_* settings ---------------------------------------------------------------------------

def test_every_memory_variable_named_is_a_setting():
    prefix = Settings.model_config["env_prefix"]
    fields = set(Settings.model_fields)
    named = set()
    for path in ALL_FILES:
        named |= set(re.findall(rf"\b{prefix}[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    named.discard("MEMORY_PLATFORM_IMAGE")  # compose's image variable, not a setting
    assert len(named) > 10
    unknown = {n for n in named if n[len(prefix):].lower() not in fields}
    assert not unknown, f"not settings: {sorted(unknown)}"


# --- Helm values ---------------------------------------------------------------------------------

def _obj(properties: dict, *, required: tuple = (), closed: bool = True) -> dict:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    if closed:
        schema["additionalProperties"] = False
    return schema


_IMAGE = _obj({"repository": {"type": "string"}, "tag": {"type": ["string", "integer", "null"]},
               "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]}},
              required=("repository", "pullPolicy"))
_SECRET_REFS = {"type": "array", "items": {"type": "object", "required": ["name"]}}
_ANY_OBJECT = {"type": "object"}
_ENV = {"anyOf": [{"type": "object", "additionalProperties": {"type": "string"}},
                  {"type": "array", "items": {"type": "object", "required": ["name"]}}]}
_TAG_LIMIT = _obj({"key": {"type": "string"}, "value": {}, "limit": {"type": "integer"}},
                  required=("key", "limit"))

# The parts of dagster/dagster's values.schema.json these values touch, transcribed from the
# chart's pydantic models (helm/dagster/schema in dagster-io/dagster: DagsterHelmValues,
# UserDeployment, RunLauncher/K8sRunLauncherConfig/RunK8sConfig, Concurrency, PostgreSQL,
# Daemon). Closed where the chart forbids extra keys; values are merged with the chart's
# defaults, so only a user deployment (a list item replaces the default entry) must be whole.
HELM_SCHEMA = _obj({
    "global": _obj({"postgresqlSecretName": {"type": "string"},
                    "serviceAccountName": {"type": "string"},
                    "dagsterHome": {"type": "string"},
                    "celeryConfigSecretName": {"type": "string"}}),
    "postgresql": _obj({
        "postgresqlScheme": {"type": "string"}, "image": _IMAGE, "enabled": {"type": "boolean"},
        "postgresqlHost": {"type": "string"}, "postgresqlUsername": {"type": "string"},
        "postgresqlPassword": {"type": "string"}, "postgresqlDatabase": {"type": "string"},
        "postgresqlParams": _ANY_OBJECT,
        "service": _obj({"port": {"type": "integer"}}, required=("port",))}, closed=False),
    "generatePostgresqlPasswordSecret": {"type": "boolean"},
    "dagster-user-deployments": _obj({
        "enabled": {"type": "boolean"}, "enableSubchart": {"type": "boolean"},
        "imagePullSecrets": _SECRET_REFS,
        "deployments": {"type": "array", "minItems": 1, "items": _obj({
            "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
            "image": _IMAGE, "port": {"type": "integer"},
            "dagsterApiGrpcArgs": {"type": "array", "items": {"type": "string"}},
            "codeServerArgs": {"type": "array", "items": {"type": "string"}},
            "includeConfigInLaunchedRuns": _obj({"enabled": {"type": "boolean"}},
                                                required=("enabled",)),
            "env": _ENV, "envConfigMaps": _SECRET_REFS, "envSecrets": _SECRET_REFS,
            "annotations": _ANY_OBJECT, "nodeSelector": _ANY_OBJECT, "affinity": _ANY_OBJECT,
            "tolerations": {"type": "array"}, "podSecurityContext": _ANY_OBJECT,
            "securityContext": _ANY_OBJECT, "resources": _ANY_OBJECT,
            "livenessProbe": _ANY_OBJECT, "readinessProbe": _ANY_OBJECT,
            "startupProbe": _ANY_OBJECT, "labels": _ANY_OBJECT, "volumeMounts": {"type": "array"},
            "volumes": {"type": "array"}, "schedulerName": {"type": "string"}},
            required=("name", "image", "port"), closed=False)}}),
    "runLauncher": _obj({
        "type": {"enum": ["CeleryK8sRunLauncher", "K8sRunLauncher", "CustomRunLauncher"]},
        "config": _obj({"k8sRunLauncher": _obj({
            "image": _IMAGE, "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
            "jobNamespace": {"type": ["string", "null"]},
            "loadInclusterConfig": {"type": "boolean"},
            "kubeconfigFile": {"type": ["string", "null"]},
            "envConfigMaps": _SECRET_REFS, "envSecrets": _SECRET_REFS,
            "envVars": {"type": "array", "items": {"type": "string"}},
            "volumeMounts": {"type": "array"}, "volumes": {"type": "array"},
            "labels": _ANY_OBJECT, "failPodOnRunFailure": {"type": "boolean"},
            "resources": _ANY_OBJECT, "schedulerName": {"type": "string"},
            "securityContext": _ANY_OBJECT,
            "runK8sConfig": _obj({k: _ANY_OBJECT for k in (
                "containerConfig", "podSpecConfig", "podTemplateSpecMetadata",
                "jobSpecConfig", "jobMetadata")})})}, closed=False)},
        required=("type",)),
    "concurrency": _obj({
        "enabled": {"type": "boolean"},
        "pools": _obj({"defaultLimit": {"type": ["integer", "null"]},
                       "granularity": {"enum": ["run", "op", None]},
                       "opGranularityRunBuffer": {"type": ["integer", "null"]}}),
        "runs": _obj({"maxConcurrentRuns": {"type": ["integer", "null"]},
                      "tagConcurrencyLimits": {"type": "array", "items": _TAG_LIMIT}})}),
    "dagsterDaemon": _obj({
        "enabled": {"type": "boolean"},
        "runCoordinator": _obj({
            "enabled": {"type": "boolean"},
            "type": {"enum": ["QueuedRunCoordinator", "CustomRunCoordinator"]},
            "config": _ANY_OBJECT}),
        "runMonitoring": _ANY_OBJECT, "runRetries": _ANY_OBJECT, "resources": _ANY_OBJECT},
        closed=False),
    "dagsterWebserver": _obj({"replicaCount": {"type": "integer"}}, closed=False),
    "telemetry": _obj({"enabled": {"type": "boolean"}}),
    "computeLogManager": _ANY_OBJECT,
}, closed=False)


def helm_values() -> dict:
    return load_yaml(HELM_VALUES)


def helm_deployment() -> dict:
    (deployment,) = helm_values()["dagster-user-deployments"]["deployments"]
    return deployment


def helm_code_server_command() -> list[str]:
    """What the chart's user-deployment template runs for codeServerArgs."""
    deployment = helm_deployment()
    return ["dagster", "code-server", "start", "-h", "0.0.0.0", "-p", str(deployment["port"]),
            *deployment["codeServerArgs"]]


def test_helm_values_match_the_charts_schema():
    jsonschema.validate(helm_values(), HELM_SCHEMA)


def test_the_helm_schema_refuses_a_misspelt_key():
    values = helm_values()
    values["concurrency"]["pools"]["default_limit"] = 2  # dagster.yaml's spelling
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, HELM_SCHEMA)


def test_helm_runs_our_code_location_with_k8s_runs_and_the_platforms_limits():
    values = helm_values()
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["dagsterDaemon"]["runCoordinator"]["type"] == "QueuedRunCoordinator"
    params = parse_command(helm_code_server_command()).params
    assert params["module_name"] == "memory_platform.definitions"
    assert helm_deployment()["port"] == CODE_SERVER_PORT
    assert helm_deployment()["includeConfigInLaunchedRuns"]["enabled"] is True
    instance = load_yaml(DAGSTER_YAML)["concurrency"]
    concurrency = values["concurrency"]
    assert concurrency["enabled"] is True
    assert concurrency["pools"] == {"defaultLimit": instance["pools"]["default_limit"],
                                    "granularity": instance["pools"]["granularity"]}
    assert concurrency["runs"]["tagConcurrencyLimits"] \
        == instance["runs"]["tag_concurrency_limits"]
    queued = values["dagsterDaemon"]["runCoordinator"].get("config", {})
    assert not queued.get("queuedRunCoordinator", {}).get("tagConcurrencyLimits")


def test_helm_uses_the_external_database_and_the_apis_secret_and_image():
    values = helm_values()
    assert values["postgresql"]["enabled"] is False
    assert values["generatePostgresqlPasswordSecret"] is False
    assert values["postgresql"]["postgresqlDatabase"] \
        == Settings.model_fields["dagster_database_name"].default
    api = api_container()
    api_secrets = {e["secretRef"]["name"] for e in api["envFrom"]}
    assert {s["name"] for s in helm_deployment()["envSecrets"]} == api_secrets
    assert {s["name"] for s in values["runLauncher"]["config"]["k8sRunLauncher"]["envSecrets"]} \
        == api_secrets
    image = helm_deployment()["image"]
    assert f"{image['repository']}:{image['tag']}" == api["image"]


# --- Kubernetes manifests ------------------------------------------------------------------------

def api_documents() -> dict[str, dict]:
    return {doc["kind"]: doc for doc in load_all_yaml(K8S_API)}


def api_container() -> dict:
    (container,) = api_documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def test_the_api_manifests_parse_and_select_their_pods():
    docs = api_documents()
    assert set(docs) == {"Deployment", "Service"}
    deployment, service = docs["Deployment"], docs["Service"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    ports = {p["name"]: p["containerPort"] for p in api_container()["ports"]}
    assert ports == {"http": API_PORT}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= set(ports)
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert api_container()["resources"]["requests"]


def test_the_api_probes_point_at_real_routes():
    container = api_container()
    probes = [container[p] for p in ("readinessProbe", "livenessProbe", "startupProbe")]
    paths = [p["httpGet"]["path"] for p in probes if "httpGet" in p]
    assert "/readyz" in paths and "/healthz" in paths
    for probe in probes:
        action = probe.get("httpGet") or probe.get("tcpSocket")
        assert action["port"] in ("http", API_PORT)
        if "httpGet" in probe:
            assert probe["httpGet"]["path"] in api_get_paths()


def test_the_migration_job_runs_once_with_the_apis_secret():
    (job,) = load_all_yaml(K8S_MIGRATE)
    assert job["kind"] == "Job"
    spec = job["spec"]["template"]["spec"]
    assert spec["restartPolicy"] == "Never"
    (container,) = spec["containers"]
    assert container["image"] == api_container()["image"]
    assert container["envFrom"] == api_container()["envFrom"]
    assert "memory-platform db migrate" in " ".join(container["command"])
    assert spec["securityContext"]["runAsNonRoot"] is True


# --- the documentation ---------------------------------------------------------------------------

def test_the_deploy_doc_covers_every_file():
    text = DOC.read_text()
    for path in ALL_FILES:
        if path != DOC:
            assert str(path.relative_to(ROOT)) in text, path
