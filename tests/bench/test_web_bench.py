"""``python -m bench.web --quick`` runs the app and the bare page in Chromium and prints
both latency figures with their ratios, the long tasks of each page while an answer
streams at 100 tokens a second into a 200-message chat, and the initial JavaScript's
gzipped size against its goal."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

from bench.web import initial_javascript
from tests.clients.node import ROOT, require_node
from tests.clients.test_browser import WEB_DIR, chromium


def test_web_bench_quick_prints_both_ratios_long_tasks_and_initial_javascript() -> None:
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
    tasks = re.findall(r"^  (app|bare)\s+(\d+) long tasks, longest\s+([\d.]+) ms, "
                       r"total\s+([\d.]+) ms \((\d+) tokens/s pushed\)$", run.stdout, re.M)
    assert [row[0] for row in tasks] == ["app", "bare"], run.stdout
    for _kind, count, longest, total, rate in tasks:
        assert (int(count) == 0) == (float(longest) == 0), run.stdout
        assert float(total) >= float(longest)
        assert 25 <= int(rate) <= 105, run.stdout  # paced at 100 a second
    size = re.search(r"^initial JavaScript of index.html, gzipped: ([\d.]+) KB in (\d+) files, "
                     r"÷ the 250 KB goal ([\d.]+)$", run.stdout, re.M)
    assert size is not None, run.stdout
    assert float(size[1]) > 0 and int(size[2]) >= 1
    assert abs(float(size[1]) / 250 - float(size[3])) < 0.01, run.stdout


def test_initial_javascript_counts_what_index_html_loads_at_start(tmp_path: Path) -> None:
    """The entry, its modulepreloads and their static imports; not a lazy ``import()``,
    not the playground's scripts."""
    assets = tmp_path / "assets"
    assets.mkdir()
    (tmp_path / "index.html").write_text(
        '<script type="module" crossorigin src="/assets/index.js"></script>\n'
        '<link rel="modulepreload" crossorigin href="/assets/preloaded.js">\n'
        '<link rel="stylesheet" href="/assets/index.css">')
    (tmp_path / "playground.html").write_text(
        '<script type="module" src="/assets/gql.js"></script>')
    files = {
        "index.js": 'import{a as b}from"./shared.js";import"./side.js";'
                    'const lazy=()=>import("./lazy.js");export*from"./reexported.js";',
        "preloaded.js": "export const p=1;",
        "shared.js": 'import"./side.js";export const a=2;',
        "side.js": "console.log(3);",
        "reexported.js": "export const r=4;",
        "lazy.js": "export const l=5;" * 100,
        "gql.js": "export const g=6;" * 100,
    }
    for name, text in files.items():
        (assets / name).write_text(text)
    sizes = initial_javascript(tmp_path)
    loaded = ["index.js", "preloaded.js", "shared.js", "side.js", "reexported.js"]
    assert sorted(sizes) == sorted(f"/assets/{name}" for name in loaded)
    for name in loaded:
        assert sizes[f"/assets/{name}"] == len(gzip.compress(files[name].encode(), 6, mtime=0))
