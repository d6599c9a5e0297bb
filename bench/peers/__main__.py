"""``python -m bench.peers``: see the package docstring."""

from __future__ import annotations

import sys

from bench.peers import main

sys.exit(main())
