"""``python -m bench.producer --quick`` runs end to end and prints every figure."""

from __future__ import annotations

import re

from tests.bench.quick import run_quick


def test_producer_bench_quick_prints_all_figures() -> None:
    out = run_quick("producer", timeout=300)
    rows = re.findall(r"^\s*(burst|paced)\s+(\d+)\s+(\d+)\s+([\d.]+)/([\d.]+) \| "
                      r"([\d.]+)/([\d.]+)\s+([\d.]+)$", out, re.MULTILINE)
    assert [row[0] for row in rows] == ["burst", "paced"], out
    for _, kit_requests, hand_requests, _, kit_p99, _, hand_p99, ratio in rows:
        assert int(kit_requests) >= 3 and int(hand_requests) >= 3
        assert float(kit_p99) > 0 and float(hand_p99) > 0
        assert abs(float(ratio) - float(kit_p99) / float(hand_p99)) < 0.01 + 0.01 * float(ratio)
    # A burst of 1,000 tokens goes in batches of 256: start, four pushes, end.
    assert rows[0][1] == "6", out
    cpu = re.search(r"^kit CPU per token: ([\d.]+) µs; hand-batched loop ([\d.]+) µs; "
                    r"ratio ([\d.]+)$", out, re.MULTILINE)
    assert cpu and float(cpu.group(1)) > 0 and float(cpu.group(2)) > 0, out
