"""The ``chatql`` command: ``serve``, ``migrate``, ``export-schema``, ``export``,
``import`` and ``export-feedback`` (:data:`DESCRIPTION` is what ``chatql --help`` says
of it).

``export``, ``import`` and ``export-feedback`` talk to the database directly
(``CHATQL_DATABASE_URL`` or ``--database-url``), as an operator: ``export`` reads any
chat by its id, whatever its tenant (``--tenant`` only narrows: a chat of another tenant
is then not found), ``import`` makes ``--user`` of ``--tenant`` the new chat's owner,
``export-feedback`` writes every rating (of every tenant, or of ``--tenant``) as JSON
Lines. Expected failures print one line on stderr and exit with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

__all__ = ["DESCRIPTION", "main"]

DESCRIPTION = """\
The chat of record for AI agents: a GraphQL service for chats, messages and live agent
streams.

'chatql serve' runs the server (the web app at /, GraphQL at /graphql). 'export',
'import' and 'export-feedback' talk to the database directly (CHATQL_DATABASE_URL or
--database-url), as an operator: 'export' reads any chat by its id, whatever its tenant
(--tenant only narrows), 'import' makes --user of --tenant the new chat's owner,
'export-feedback' writes the ratings of people as JSON Lines. Expected failures print one
line on stderr and exit with status 1. Configuration is read from CHATQL_* variables.
"""


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from chatql.gql.settings import Settings

    settings = Settings.from_env()
    if args.workers < 1:
        sys.stderr.write("chatql serve: --workers must be at least 1\n")
        return 2
    if args.workers > 1 and settings.broker_url.split(":", 1)[0].lower() == "memory":
        # Each process would keep its own streams: a subscriber on one would never see
        # the chunks pushed to another.
        sys.stderr.write(
            f"chatql serve: --workers {args.workers} needs streams shared through Redis;"
            f" CHATQL_BROKER_URL is {settings.broker_url!r} (one process's memory). Set"
            " CHATQL_BROKER_URL=redis://host:port/db, or serve with one worker.\n")
        return 2
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:  # pragma: no cover - uvloop is not built for every platform
        loop = "asyncio"
    metrics_dir = None
    if args.workers > 1 and settings.metrics and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Every worker writes its metrics here and a scrape of any one sums them all;
        # the folder is fresh for each run (stale files would add old counts).
        metrics_dir = tempfile.mkdtemp(prefix="chatql-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    logging = _logging_for(settings, args.log_level)
    if logging is None:
        return 2
    _say_where(settings, args)
    try:
        _run_uvicorn(uvicorn, args, settings, loop, logging)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
    return 0


def _logging_for(settings: Any, level: str) -> dict[str, Any] | None:
    """The logging of the served process, applied here too (so the start line is in
    the same format); None, with the reason on stderr, for a format that cannot be."""
    import logging.config

    from chatql.gql.ops.logs import log_config

    try:
        config = log_config(settings.log_format, level)
    except ValueError as error:
        sys.stderr.write(f"chatql serve: {error}\n")
        return None
    logging.config.dictConfig(config)
    return config


def _say_where(settings: Any, args: argparse.Namespace) -> None:
    """One line at start: where to open it, which database, which auth mode, which
    broker — what a newcomer needs to tell a server from another."""
    import logging
    from importlib.metadata import PackageNotFoundError, version

    from sqlalchemy.engine import make_url

    from chatql.gql.ops.logs import SERVICE_LOGGER

    try:
        database = make_url(settings.database_url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL fails at start with its own error
        database = "(unparsable CHATQL_DATABASE_URL)"
    try:
        broker = make_url(settings.broker_url).render_as_string(hide_password=True)
    except Exception:
        broker = settings.broker_url.split("@")[-1]
    try:
        release = version("chatql")
    except PackageNotFoundError:  # pragma: no cover - run from a checkout without install
        release = "(not installed)"
    host = f"[{args.host}]" if ":" in args.host else args.host
    logging.getLogger(SERVICE_LOGGER).info(
        "chatql %s serving http://%s:%s/ (GraphQL at /graphql): database %s, auth %s,"
        " streams %s, %s worker(s)", release, host, args.port, database,
        settings.auth, broker, args.workers)


def _run_uvicorn(uvicorn: Any, args: argparse.Namespace, settings: Any, loop: str,
                 log_config: dict[str, Any]) -> None:
    uvicorn.run(
        "chatql.gql.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        # Several processes on one socket (the kernel spreads connections over them);
        # they share streams through the Redis broker.
        workers=args.workers if args.workers > 1 else None,
        loop=loop,
        ws="websockets-sansio",
        # Stream frames are small and frequent: compression costs more than it saves.
        ws_per_message_deflate=False,
        # A WebSocket message is held to the same limit as an HTTP request body.
        ws_max_size=settings.max_body_bytes,
        log_level=args.log_level,
        # Every line in CHATQL_LOG_FORMAT; chatql writes the request lines itself, from
        # a thread (gql/ops/logs.py), so uvicorn's access line is off.
        log_config=log_config,
        access_log=False,
        timeout_graceful_shutdown=30,
    )


def _migrate(args: argparse.Namespace) -> int:
    from chatql.gql.settings import Settings
    from chatql.store.db.database import Database
    from chatql.store.db.migrate import migrate
    from chatql.store.db.partitions import check_partitions

    settings = Settings.from_env()
    count = settings.pg_partitions if args.partitions is None else args.partitions
    try:
        check_partitions(count)
        if args.batch_rows < 1:
            raise ValueError(f"--batch-rows must be at least 1, got {args.batch_rows}")
    except ValueError as error:
        sys.stderr.write(f"chatql migrate: {error}\n")
        return 2

    async def report(table: str, batches: int) -> None:
        # Converting a large database takes a while: say how far it got.
        if not table:
            sys.stderr.write("chatql migrate: swapping in the partitioned tables\n")
        elif batches % 100 == 1:
            sys.stderr.write(f"chatql migrate: {table}: {batches} batches copied\n")

    async def run() -> None:
        db = Database(args.database_url or settings.database_url)
        try:
            await migrate(db, pg_partitions=count, convert=True, batch_rows=args.batch_rows,
                          progress=report)
        finally:
            await db.dispose()

    asyncio.run(run())
    return 0


def _transfer(args: argparse.Namespace, work: Any) -> int:
    from chatql.gql.settings import Settings
    from chatql.store.db.database import Database
    from chatql.store.errors import ChatqlError

    async def run() -> None:
        db = Database(args.database_url or Settings.from_env().database_url)
        try:
            await work(db)
        finally:
            await db.dispose()

    try:
        asyncio.run(run())
    except ChatqlError as error:
        sys.stderr.write(f"chatql {args.command}: {error}\n")
        return 1
    return 0


def _export_chat(args: argparse.Namespace) -> int:
    from chatql.store.errors import NotFound
    from chatql.store.keeping.export import chat_tenant, export_chat, open_export
    from chatql.store.records import Identity

    out = sys.stdout.buffer

    async def work(db: Any) -> None:
        # Chat ids are unique across tenants: the operator need not know the tenant.
        tenant = args.tenant or await chat_tenant(db, args.chat_id)
        if tenant is None:
            raise NotFound(f"chat {args.chat_id!r} not found")
        who = Identity(user_id="chatql-cli", tenant_id=tenant, roles=frozenset({"admin"}))
        chat = await open_export(db, who, args.chat_id)
        async for line in export_chat(db, chat):
            out.write(line)
        out.flush()

    return _transfer(args, work)


def _import_chat(args: argparse.Namespace) -> int:
    from chatql.store.keeping.imports import import_file
    from chatql.store.records import Identity

    who = Identity(user_id=args.user, tenant_id=args.tenant, team_id=args.team)

    async def work(db: Any) -> None:
        chat, written = await import_file(
            db, who, args.file, import_id=args.import_id, chat_id=args.chat_id,
            assistant_id=args.assistant_id, batch_lines=args.batch,
        )
        sys.stdout.write(f"{chat.id}\t{written} lines written\n")

    return _transfer(args, work)


def _moment(value: str | None, option: str) -> Any:
    """An ISO 8601 time given on the command line (a date alone is its midnight UTC)."""
    from datetime import UTC, datetime

    from chatql.store.errors import InvalidArgument

    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(f"{option} must be an ISO 8601 time, got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _export_feedback(args: argparse.Namespace) -> int:
    import orjson

    from chatql.store.messages.feedback import FeedbackFilter, export_feedback

    async def work(db: Any) -> None:
        wanted = FeedbackFilter(assistant_id=args.assistant,
                                since=_moment(args.since, "--since"),
                                until=_moment(args.until, "--until"))
        wanted.check()
        # The file is opened once the arguments are known to be good.
        with contextlib.ExitStack() as stack:
            out: IO[bytes] = (sys.stdout.buffer if args.output == "-"
                              else stack.enter_context(open(args.output, "wb")))
            async for line in export_feedback(db, wanted, tenant_id=args.tenant):
                out.write(orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE))
            out.flush()

    return _transfer(args, work)


def _mcp(args: argparse.Namespace) -> int:
    from chatql.gql.transport.mcp_stdio import RemoteRefused, mcp_endpoint, serve_stdio

    headers: dict[str, str] = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            sys.stderr.write(f"chatql mcp: --header must be 'Name: value', got {header!r}\n")
            return 2
        headers[name.strip()] = value.strip()
    token = args.token or os.environ.get("CHATQL_MCP_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        mcp_endpoint(args.url)
    except ValueError as error:
        sys.stderr.write(f"chatql mcp: {error}\n")
        return 2
    try:
        # stdout is the protocol's: everything else this process says goes to stderr.
        asyncio.run(serve_stdio(args.url, headers))
    except RemoteRefused as error:
        sys.stderr.write(f"chatql mcp: {error}\n")
        return 1
    return 0


def schema_sdl() -> str:
    from strawberry.printer import print_schema

    from chatql.gql.schema.root import build_schema

    return print_schema(build_schema()) + "\n"


def _export_schema(args: argparse.Namespace) -> int:
    text = schema_sdl()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="chatql", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the GraphQL server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug", "trace"],
                       help="the level of every line, request lines included (info)")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes (more than one needs CHATQL_BROKER_URL=redis://…)")
    serve.set_defaults(run=_serve)
    migrate = commands.add_parser(
        "migrate", help="apply database migrations; on Postgres also convert the per-chat"
        " tables of an existing database to hash partitions, batch by batch")
    migrate.add_argument("--database-url", default=None, help="default: CHATQL_DATABASE_URL")
    migrate.add_argument("--partitions", type=int, default=None,
                         help="hash partitions on Postgres (default: CHATQL_PG_PARTITIONS,"
                         " 16; 0 keeps plain tables)")
    migrate.add_argument("--batch-rows", type=int, default=5_000,
                         help="rows copied per transaction while converting")
    migrate.set_defaults(run=_migrate)
    export = commands.add_parser("export-schema", help="write the schema as GraphQL SDL")
    export.add_argument("-o", "--output", default="schema.graphql", help="'-' for stdout")
    export.set_defaults(run=_export_schema)
    chat_export = commands.add_parser("export", help="write a chat as JSON Lines to stdout")
    chat_export.add_argument("chat_id")
    chat_export.add_argument("--tenant", default=None,
                             help="only a chat of this tenant (default: any tenant)")
    chat_export.add_argument("--database-url", default=None, help="default: CHATQL_DATABASE_URL")
    chat_export.set_defaults(run=_export_chat)
    chat_import = commands.add_parser(
        "import", help="create a chat from a JSON Lines export (resumable; see --import-id)")
    chat_import.add_argument("file")
    chat_import.add_argument("--tenant", default="default")
    chat_import.add_argument("--user", default="dev", help="the new chat's owner")
    chat_import.add_argument("--team", default=None)
    chat_import.add_argument("--chat-id", default=None, help="default: the export's chat id")
    chat_import.add_argument("--assistant-id", default=None)
    chat_import.add_argument("--import-id", default=None,
                             help="default: derived from the file's content")
    chat_import.add_argument("--batch", type=int, default=5_000, help="lines per transaction")
    chat_import.add_argument("--database-url", default=None, help="default: CHATQL_DATABASE_URL")
    chat_import.set_defaults(run=_import_chat)
    feedback_export = commands.add_parser(
        "export-feedback", help="write people's ratings of messages as JSON Lines, oldest"
        " first: one object per rating, with the question, the answer, the model and the"
        " request id")
    feedback_export.add_argument("-o", "--output", default="-", help="a file ('-': stdout)")
    feedback_export.add_argument("--since", default=None,
                                 help="only ratings set at or after this ISO 8601 time")
    feedback_export.add_argument("--until", default=None,
                                 help="only ratings set before this ISO 8601 time")
    feedback_export.add_argument("--assistant", default=None,
                                 help="only ratings of this assistant's messages")
    feedback_export.add_argument("--tenant", default=None,
                                 help="only this tenant's (default: every tenant's)")
    feedback_export.add_argument("--database-url", default=None,
                                 help="default: CHATQL_DATABASE_URL")
    feedback_export.set_defaults(run=_export_feedback)
    mcp = commands.add_parser(
        "mcp", help="serve a running chatql's MCP tools over stdio (for desktop MCP"
        " clients): every request goes to the server's /mcp as the identity given")
    mcp.add_argument("--url", required=True,
                     help="the chatql server, e.g. http://127.0.0.1:8000 (its /mcp), or"
                     " the full address of its MCP endpoint")
    mcp.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                     help="a header sent with every request, e.g. 'X-User-Id: bob' in dev"
                     " mode (repeatable)")
    mcp.add_argument("--token", default=None,
                     help="a bearer token for JWT mode (default: CHATQL_MCP_TOKEN)")
    mcp.set_defaults(run=_mcp)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
