"""``python -m bench.web --quick`` runs the app and the bare page in Chromium and prints
both figures with their ratios."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.clients.node import ROOT, require_node
from tests.clients.test_browser import WEB_DIR, chromium


def test_web_bench_quick_prints_both_ratios() -> None:
    require_node(WEB_DIR)
    chromium()
    run = subprocess.run([sys.executable, "-m", "bench.web", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = re.findall(r"^  (Enter → first token|last chunk → DOM)\s+app\s+([\d.]+) ms\s+bare\s+"
                      r"([\d.]+) ms\s+ratio ([\d.]+)$", run.stdout, re.M)
    assert [row[0] for row in rows] == ["Enter → first token", "last chunk → DOM"], run.stdout
    for _label, app, bare, ratio in rows:
        assert float(app) > 0 and float(bare) > 0
        assert abs(float(app) / float(bare) - float(ratio)) < 0.01 + 0.001 * float(ratio) \
            + float(app) / float(bare) * (0.05 / float(bare)), run.stdout
