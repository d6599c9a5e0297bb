"""``python -m bench.ui_stream --quick`` runs end to end and prints every figure
(``/ai/chat``, ``/ag-ui`` and ``chatStream``)."""

from __future__ import annotations

import re

from tests.bench.quick import run_quick


def test_ui_stream_bench_quick_prints_all_figures() -> None:
    out = run_quick("ui_stream", timeout=300)
    rows = re.findall(r"^\s*(/ai/chat|/ag-ui|chatStream)\s+([\d,]+)\s+([\d.]+)/([\d.]+)$",
                      out, re.MULTILINE)
    assert [row[0] for row in rows] == ["/ai/chat", "/ag-ui", "chatStream"], out
    rates = {}
    for name, rate, p50, p99 in rows:
        rates[name] = float(rate.replace(",", ""))
        assert rates[name] > 0 and 0 < float(p50) <= float(p99), out
    for name in ("/ai/chat", "/ag-ui"):
        ratio = re.search(rf"^throughput of a 3,000-delta reply, {name} / chatStream over SSE "
                          r"= ([\d.]+) \(goal >= 0\.9\)$", out, re.MULTILINE)
        assert ratio, out
        # The printed ratio is the two rates' (rounded as printed).
        expected = rates[name] / rates["chatStream"]
        assert abs(float(ratio.group(1)) - expected) < 0.01 + 0.01 * expected, out
