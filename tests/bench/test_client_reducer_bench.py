"""``python -m bench.client_reducer --quick`` runs the Node benchmark and prints every figure."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.clients.node import ROOT, require_node


def test_client_reducer_bench_quick_prints_all_figures() -> None:
    require_node()
    run = subprocess.run([sys.executable, "-m", "bench.client_reducer", "--quick"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    ratios = re.findall(r"^  (TypeScript|Python)\s+([\d.]+) / ([\d.]+) ms = ([\d.]+)", out, re.M)
    assert [name for name, *_ in ratios] == ["TypeScript", "Python"], out
    for _name, last, first, ratio in ratios:
        # The times are printed to 0.01 ms, so the ratio of the printed times may be off
        # by their rounding: allow exactly that (plus the ratio's own rounding).
        shown = float(last) / float(first)
        slack = shown * (0.005 / float(last) + 0.005 / float(first)) + 0.006
        assert abs(shown - float(ratio)) <= slack, out
    rate = re.search(r"TypeScript ([\d,]+)  Python ([\d,]+)  ratio ([\d.]+)", out)
    assert rate is not None, out
    ts, py = (float(rate.group(i).replace(",", "")) for i in (1, 2))
    assert ts > 0 and py > 0
    assert abs(ts / py - float(rate.group(3))) < 0.02 + 0.01 * ts / py
