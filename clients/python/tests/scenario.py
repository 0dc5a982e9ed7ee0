"""The contract's scenarios (contract/scenarios.json), and the marker naming one."""

from __future__ import annotations

import json
import pathlib
from typing import Any, Callable, Dict, TypeVar

import pytest

SCENARIOS_FILE = pathlib.Path(__file__).resolve().parents[3] / "contract" / "scenarios.json"
F = TypeVar("F", bound=Callable[..., Any])


def scenarios() -> Dict[str, str]:
    doc = json.loads(SCENARIOS_FILE.read_text())
    return {s["name"]: s["what"] for s in doc["scenarios"]}


def scenario(name: str) -> Callable[[F], F]:
    """Mark a test as the one showing scenario ``name`` of contract/scenarios.json."""
    mark: Callable[[F], F] = pytest.mark.scenario(name)
    return mark
