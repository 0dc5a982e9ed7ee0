"""The client against the shared contract: every scenario has its test, every operation of
the document its method, and the models match the document."""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys

from scenario import scenarios

import s3q
from s3q.client import OPERATION_METHODS
from s3q.models import OPERATIONS

HERE = pathlib.Path(__file__).resolve().parent


def scenario_tests() -> dict[str, list[str]]:
    """Scenario name → the tests marked with it, read from the test files' source."""
    out: dict[str, list[str]] = {}
    for f in sorted(HERE.glob("test_*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for d in node.decorator_list:
                if (
                    isinstance(d, ast.Call)
                    and isinstance(d.func, ast.Name)
                    and d.func.id == "scenario"
                    and d.args
                    and isinstance(d.args[0], ast.Constant)
                ):
                    out.setdefault(str(d.args[0].value), []).append(f"{f.name}::{node.name}")
    return out


def test_every_scenario_has_a_test_and_every_test_names_a_known_one() -> None:
    want = set(scenarios())
    have = scenario_tests()
    assert sorted(want - set(have)) == [], "scenarios of contract/scenarios.json without a test"
    assert sorted(set(have) - want) == [], "tests naming a scenario contract/scenarios.json does not have"
    assert {n: t for n, t in have.items() if len(t) > 1} == {}, "a scenario with more than one test"


def test_every_operation_of_the_document_has_a_method() -> None:
    ops = {f"{o.method} {o.path}" for o in OPERATIONS}
    assert sorted(ops - set(OPERATION_METHODS)) == [], "operations of the document without a client method"
    assert sorted(set(OPERATION_METHODS) - ops) == [], "client methods for operations the document does not have"
    for name in OPERATION_METHODS.values():
        assert callable(getattr(s3q.Client, name)), name


def test_models_match_the_document() -> None:
    gen = HERE.parent / "scripts" / "genmodels.py"
    r = subprocess.run([sys.executable, str(gen), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_models_cover_every_schema() -> None:
    doc = json.loads((HERE.parents[2] / "shared" / "api" / "openapi.json").read_text())
    for name in doc["components"]["schemas"]:
        assert hasattr(s3q.models, name), name


def test_the_docs_table_names_every_operation_and_its_method() -> None:
    docs = (HERE.parents[2] / "docs" / "clients.md").read_text()
    for o in OPERATIONS:
        row = f"| `{o.operation_id}` | {o.method} `{o.path}` | `{OPERATION_METHODS[o.method + ' ' + o.path]}` |"
        assert row in docs, f"docs/clients.md lacks the row {row}"
    assert all(o.operation_id for o in OPERATIONS), "an operation without an operationId"
