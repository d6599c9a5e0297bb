"""``chatql-client``: the kit's command line (``chatql-client demo`` runs the demo agent)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys

from chatql_client.demo import run_demo

__all__ = ["main"]

#: The identity the demo uses against a service in ``dev`` auth mode when given none.
DEV_IDENTITY = {"X-User-Id": "demo-agent", "X-Roles": "agent"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chatql-client")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="answer every chat of an assistant with the demo agent",
        description="Answers every chat of ASSISTANT awaiting a reply. With OPENAI_BASE_URL "
                    "or OPENAI_API_KEY set it asks that OpenAI-compatible endpoint (model "
                    "OPENAI_MODEL); otherwise an offline model streams thinking, a tool "
                    "call and markdown text.")
    demo.add_argument("--url", required=True, help="the GraphQL endpoint, e.g. "
                      "http://127.0.0.1:8000/graphql")
    demo.add_argument("--assistant", required=True, help="the assistant id to answer for")
    demo.add_argument("--token", help="a JWT sent as Authorization: Bearer")
    demo.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                      help="a header for every request (repeatable), e.g. X-Tenant-Id=acme; "
                           "without --token or headers: X-User-Id=demo-agent, X-Roles=agent")
    demo.add_argument("--pace", type=float, default=0.02,
                      help="seconds between the offline model's tokens (default 0.02)")
    demo.add_argument("--concurrency", type=int, default=8,
                      help="answers in progress at once (default 8)")
    demo.add_argument("-v", "--verbose", action="store_true", help="log each answer")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    headers: dict[str, str] = {}
    for item in args.header:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            print(f"chatql-client: --header takes NAME=VALUE, not {item!r}", file=sys.stderr)
            return 2
        headers[name.strip()] = value.strip()
    if not headers and not args.token:
        headers = dict(DEV_IDENTITY)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(message)s")
    # The kit's own INFO lines are shown either way: the line saying which server,
    # assistant and identity (user, tenant) the agent serves — a tenant other than the
    # chats' leaves the agent silent — and reconnects.
    logging.getLogger("chatql_client").setLevel(logging.INFO)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_demo(args.url, args.assistant, headers=headers, token=args.token,
                             pace=args.pace, concurrency=args.concurrency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
