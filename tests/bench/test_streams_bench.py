"""``python -m bench.streams --quick`` runs end to end and prints every figure."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_streams_bench_quick_prints_all_figures() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.streams", "--quick", "--tracing"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    rows = re.findall(r"^\s*(1|10|100)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)\s+"
                      r"([\d.]+)/([\d.]+) \| ([\d.]+)/([\d.]+)\s+([\d,]+), ([\d.]+), "
                      r"([\d.]+)\s+([\d.]+)$", out, re.MULTILINE)
    assert [row[0] for row in rows] == ["1", "10", "100"], out
    for row in rows:
        ours, bare, off = (float(row[i].replace(",", "")) for i in (1, 2, 8))
        assert ours > 0 and bare > 0 and off > 0
        assert abs(float(row[3]) - ours / bare) < 0.01 + 0.01 * ours / bare
        # chatql with metrics off took part in the same rounds: on ÷ off is printed.
        assert abs(float(row[9]) - ours / off) < 0.01 + 0.01 * ours / off
        # So did chatql exporting traces: tracing on ÷ off is printed last.
        assert float(row[11]) > 0
    assert re.search(r"RSS per idle subscriber: -?[\d.,]+ KiB .*bare relay -?[\d.,]+ KiB",
                     out), out
    assert re.search(r"RSS per 1 MiB buffered stream: -?[\d.,]+ MiB", out), out
    assert re.search(r"endStream persist of 500 messages: .* ratio [\d.]+ \(median of rounds "
                     r"[\d.]+\)|persist: skipped", out), out
    growth = re.findall(r"^push growth (memory|redis): .* = ([\d.]+)$", out, re.MULTILINE)
    assert [name for name, _ in growth] == ["memory", "redis"], out
    assert all(float(ratio) > 0 for _, ratio in growth)
    assert re.search(r"^redis push / memory push at start: .* = [\d.]+$", out, re.MULTILINE), out
    scale = re.findall(r"^\s*(10|100)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)\|([\d.]+) "
                       r"\(([\d.]+)\)\s+([\d.]+) \(x([\d.]+) of N=10\)\|[\d.]+\s+(\d+) of (\d+)$",
                       out, re.MULTILINE)
    assert [row[0] for row in scale] == ["10", "100"], out
    for row in scale:
        ours, bare = (float(row[i].replace(",", "")) for i in (1, 2))
        assert ours > 0 and bare > 0
        assert abs(float(row[3]) - ours / bare) < 0.01 + 0.01 * ours / bare
        # Every subscription the server acknowledged was served.
        assert (row[9], row[10]) == ("0", row[0]), row
    # The latency from when each push was due, beside the one from each chunk's making.
    due = re.findall(r"^\s+p99 ms from when each push was due: ([\d.]+)\|([\d.]+) "
                     r"\(([\d.]+)\); server CPU per chunk delivered [\d.]+\|[\d.]+ µs$",
                     out, re.MULTILINE)
    assert len(due) == 2 and all(float(ours) > 0 and float(bare) > 0
                                 for ours, bare, _ in due), out
    assert re.search(r"^redis push / memory push over HTTP: .* = [\d.]+$", out, re.MULTILINE), out


def test_streams_bench_persist_alone() -> None:
    """``--persist`` prints only the persist figure, from the rounds asked for."""
    run = subprocess.run(
        [sys.executable, "-m", "bench.streams", "--persist", "--quick", "--rounds", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1, run.stdout
    found = re.fullmatch(r"endStream persist of 500 messages: ([\d.,]+) ms; asyncpg "
                         r"copy_records_to_table: ([\d.,]+) ms; ratio ([\d.]+) \(median of "
                         r"rounds ([\d.]+)\)|persist: skipped, .*", lines[0])
    assert found, run.stdout
    if found.group(1) is not None:
        ours, copy = (float(found.group(i).replace(",", "")) for i in (1, 2))
        assert abs(float(found.group(3)) - ours / copy) < 0.01 + 0.01 * ours / copy
        assert float(found.group(4)) > 0


def test_streams_bench_scale_with_niced_clients() -> None:
    """``CHATQL_BENCH_CLIENT_NICE`` runs the scale figure with the client processes at a
    lower CPU priority: every acknowledged subscription is still served, for both."""
    run = subprocess.run(
        [sys.executable, "-m", "bench.streams", "--scale-only", "--quick"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "CHATQL_BENCH_CLIENT_NICE": "5"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert re.search(r"^scale: .* sockets per client process \(nice 5\);", out, re.MULTILINE), out
    rows = re.findall(r"^\s*(10|100)\s+([\d,]+)\s+([\d,]+)\s+[\d.]+\s+.*\s(\d+) of (\d+)$",
                      out, re.MULTILINE)
    assert [row[0] for row in rows] == ["10", "100"], out
    for n, ours, bare, unserved, acked in rows:
        assert float(ours.replace(",", "")) > 0 and float(bare.replace(",", "")) > 0
        assert (unserved, acked) == ("0", n)
