"""Generate the Python client's models from the API's OpenAPI document.

    .venv/bin/python scripts/client_models.py           # rewrite memory_platform/client/models.py
    .venv/bin/python scripts/client_models.py --check   # exit 1 when the file is out of step

The server's request and response models (``api/schemas``) are the one source of truth; the
client cannot import them (they import the server's domain modules, psycopg among them), so
``memory_platform/client/models.py`` is generated from ``/openapi.json`` by
datamodel-code-generator (pinned in constraints.txt) and committed. ``tests/client`` fails
when the committed file differs from a fresh generation, i.e. when a route's model or a field
exists on one side and not the other.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from datamodel_code_generator import (
    DataModelType,
    Formatter,
    InputFileType,
    PythonVersion,
    generate,
)

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "memory_platform" / "client" / "models.py"
HEADER = ('"""The API\'s request and response models, generated from /openapi.json by '
          "scripts/client_models.py:\ndo not edit; regenerate after changing api/schemas "
          '(tests/client fails until you do)."""')


def openapi_document() -> dict:
    sys.path.insert(0, str(ROOT))
    from api.openapi import build_document
    from api.table import TABLE
    return build_document(TABLE)


def generated_source() -> str:
    """The models module as datamodel-code-generator writes it for today's document."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "models.py"
        generate(
            json.dumps(openapi_document()),
            input_file_type=InputFileType.OpenAPI,
            output=out,
            output_model_type=DataModelType.PydanticV2BaseModel,
            target_python_version=PythonVersion.PY_311,
            use_standard_collections=True,
            use_union_operator=True,
            snake_case_field=True,
            disable_timestamp=True,
            enum_field_as_literal="all",
            collapse_root_models=True,
            collapse_constrained_root_models_as_annotated=True,
            use_annotated=True,
            allow_population_by_field_name=True,
            custom_file_header=HEADER,
            formatters=[Formatter.RUFF_FORMAT],
        )
        return out.read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare; exit 1 when the committed file is out of step")
    args = parser.parse_args(argv)
    fresh = generated_source()
    if args.check:
        if TARGET.read_text() != fresh:
            print(f"{TARGET.relative_to(ROOT)} is out of step with /openapi.json: run "
                  "`.venv/bin/python scripts/client_models.py`", file=sys.stderr)
            return 1
        print("client models are in step with /openapi.json")
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(fresh)
    print(f"wrote {TARGET.relative_to(ROOT)} ({fresh.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
