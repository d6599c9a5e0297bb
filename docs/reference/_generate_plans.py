"""Write the architecture page's table of fast plans (docs/architecture.md) from the
planner's registry, ``PLANS`` in ``chatql.gql.plans.planner``.

    python docs/reference/_generate_plans.py [--page docs/architecture.md]

The table sits between two HTML comments (:data:`START`, :data:`END`); only what is
between them is rewritten: one row per plan, in the registry's order, with its name,
operation, root fields and transports. The page is committed; ``make reference``
rewrites it and the test suite fails when the table no longer matches the registry
(tests/gql/test_plans.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "architecture.md"
START = "<!-- plans: written from PLANS by `make reference` -->"
END = "<!-- end of plans -->"
#: How each transport is named in the table.
TRANSPORTS = {"http": "HTTP", "sse": "SSE", "ws": "WebSocket"}


def table() -> str:
    """The table's Markdown, from the registry."""
    from chatql.gql.plans.planner import PLANS

    rows = [f"| `{plan.name}` | {plan.operation} | "
            + ", ".join(f"`{name}`" for name in plan.fields) + " | "
            + ", ".join(TRANSPORTS[kind] for kind in sorted(plan.transports)) + " |"
            for plan in PLANS]
    return "\n".join(["| Plan | Operation | Root fields | Transports |",
                      "| --- | --- | --- | --- |", *rows])


def rewritten(text: str) -> str:
    """``text`` (the page) with the table between the markers written afresh."""
    start = text.index(START) + len(START)
    end = text.index(END, start)
    return f"{text[:start]}\n{table()}\n{text[end:]}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to rewrite")
    options = parser.parse_args(argv)
    options.page.write_text(rewritten(options.page.read_text(encoding="utf-8")),
                            encoding="utf-8")


if __name__ == "__main__":
    main()
