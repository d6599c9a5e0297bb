"""``conformance/ui/cases.json`` is what ``conformance/generate_ui_cases.py`` writes.

The file holds recorded replies, the UI message chunks the ``POST /ai/chat`` mapper sends
for them and the final parts both front ends must show; the TypeScript client's test reads
the same file and requires its own mapper and this one to give those parts. This test
fails when the Python mapper (or the recording) drifts from the committed file, so a
change to either side shows up as a diff to review, then regenerate.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_cases_are_what_the_mapper_gives() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_ui_cases", ROOT / "conformance" / "generate_ui_cases.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    committed = json.loads((ROOT / "conformance" / "ui" / "cases.json").read_text())
    assert committed == generator.build(), (
        "regenerate: .venv/bin/python conformance/generate_ui_cases.py")
    assert len(committed["cases"]) >= 5
