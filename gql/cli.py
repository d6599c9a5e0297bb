"""The ``chatql`` command: ``serve``, ``migrate`` and ``export-schema``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from gql.settings import Settings

    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:  # pragma: no cover - uvloop is not built for every platform
        loop = "asyncio"
    uvicorn.run(
        "gql.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        loop=loop,
        ws="websockets-sansio",
        # Stream frames are small and frequent: compression costs more than it saves.
        ws_per_message_deflate=False,
        # A WebSocket message is held to the same limit as an HTTP request body.
        ws_max_size=Settings.from_env().max_body_bytes,
        log_level=args.log_level,
        timeout_graceful_shutdown=30,
    )
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from gql.settings import Settings
    from store.database import Database
    from store.migrate import migrate

    async def run() -> None:
        db = Database(args.database_url or Settings.from_env().database_url)
        try:
            await migrate(db)
        finally:
            await db.dispose()

    asyncio.run(run())
    return 0


def schema_sdl() -> str:
    from strawberry.printer import print_schema

    from gql.schema import schema

    return print_schema(schema) + "\n"


def _export_schema(args: argparse.Namespace) -> int:
    text = schema_sdl()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chatql", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info")
    serve.set_defaults(run=_serve)
    migrate = commands.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("--database-url", default=None, help="default: CHATQL_DATABASE_URL")
    migrate.set_defaults(run=_migrate)
    export = commands.add_parser("export-schema", help="write the schema as GraphQL SDL")
    export.add_argument("-o", "--output", default="schema.graphql", help="'-' for stdout")
    export.set_defaults(run=_export_schema)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
