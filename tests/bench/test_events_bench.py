"""``python -m bench.events --quick`` runs end to end and prints both ratios."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_events_bench_quick_prints_both_ratios() -> None:
    run = subprocess.run([sys.executable, "-m", "bench.events", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "20 sidebars (10 users x 2)" in out, out
    throughput = re.search(r"without subscribers ([\d, /]+), with ([\d, /]+) \(alternating\): "
                           r"with / without = ([\d.]+)x", out)
    assert throughput, out
    without, with_ = ([float(v.replace(",", "")) for v in group.split(" / ")]
                      for group in throughput.groups()[:2])
    ratio = float(throughput.group(3))
    # Three runs without the sidebars around two with them.
    assert len(without) == 3 and len(with_) == 2, out
    assert all(rate > 0 for rate in [*without, *with_])
    # The printed figures are rounded to whole appends per second.
    expected = (sum(with_) / 2) / (sum(without) / 3)
    assert abs(ratio - expected) < 0.02 + 0.02 * ratio
    latency = re.search(r"p99 write -> event ([\d.]+) ms over ([\d,]+) events, p99 chatStream "
                        r"chunk ([\d.]+) ms over ([\d,]+) chunks: event / chunk = ([\d.]+)x", out)
    assert latency, out
    # Every paced append reached both of its writer's sidebars, every chunk its viewer.
    assert latency.group(2) == "120" and latency.group(4) == "60", out
    assert float(latency.group(1)) > 0 and float(latency.group(3)) > 0
    own = re.search(r"this process \(writers and sidebars\) CPU per append: without ([\d.]+) ms, "
                    r"with ([\d.]+) ms", out)
    assert own and float(own.group(1)) > 0 and float(own.group(2)) > 0, out
