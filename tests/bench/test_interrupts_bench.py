"""``python -m bench.interrupts --quick`` runs end to end on each backend and prints its
figures.

No timing is asserted (the figures depend on the machine); the run must finish — a
worker answers, asks for approval and resumes after the decision, the inbox shows the
seeded interrupts — and report both ratios as numbers, in its table too.
"""

from __future__ import annotations

import re

import pytest

from tests.bench.quick import backend_choice, run_quick


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_quick_interrupts_bench_runs(backend: str, request: pytest.FixtureRequest) -> None:
    out = run_quick("interrupts", *backend_choice(backend, request))
    assert "skipped" not in out, out
    assert re.search(r"decision / question = \d+\.\d\d", out), out
    assert re.search(r"inbox / chat list = \d+\.\d\d", out), out
    assert re.search(r"inbox / chat list \(executor\) = \d+\.\d\d", out), out
    assert re.search(rf"^{backend} decision / question +\d+\.\d\d +<= 1\.2 +(yes|no)$", out,
                     re.MULTILINE), out
    assert re.search(rf"^{backend} inbox \(300\) / chat list +\d+\.\d\d +<= 1\.2 +(yes|no)$",
                     out, re.MULTILINE), out
