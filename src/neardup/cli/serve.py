"""``neardup serve``: an index served over HTTP (:mod:`neardup.index.service`)."""

from __future__ import annotations

import click

from neardup.cli.index_options import directory_option, synchronous_option
from neardup.cli.options import CONTEXT, handle_errors


@click.command(context_settings=CONTEXT)
@directory_option
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback unless told otherwise).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--token",
    envvar="NEARDUP_TOKEN",
    default=None,
    help="Require `Authorization: Bearer TOKEN` on /v1 requests. Visible to other users in "
    "`ps`: prefer --token-file or the NEARDUP_TOKEN environment variable.",
)
@click.option(
    "--token-file",
    envvar="NEARDUP_TOKEN_FILE",
    type=click.Path(dir_okay=False),
    default=None,
    help="Read the token from this file (its first line; or set NEARDUP_TOKEN_FILE).",
)
@click.option(
    "--read-only",
    "readonly",
    is_flag=True,
    help="Serve queries only, next to another process that writes the index.",
)
@synchronous_option(
    "normal: an acknowledged add survives a crash of the process; full: also power loss."
)
@click.option(
    "--max-batch",
    type=click.IntRange(1, 100_000),
    default=1000,
    show_default=True,
    help="Most documents per request (more: 413).",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(1024, 1 << 30),
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest request body (more: 413).",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
)
@handle_errors
def serve(
    directory,
    host,
    port,
    token,
    token_file,
    readonly,
    synchronous,
    max_batch,
    max_body_bytes,
    log_level,
):
    """Serve an index over HTTP (JSON API; OpenAPI docs at /docs).

    \b
    POST /v1/documents   add one {id, text|fingerprint, timestamp} or {"documents": [...]}
    POST /v1/query       the same probe, nothing stored
    GET/DELETE /v1/documents/{id}, GET /v1/stats, GET /healthz

    \b
    Examples:
      neardup serve -d crawl.idx
      NEARDUP_TOKEN=s3cret neardup serve -d crawl.idx --port 8080
      neardup serve -d crawl.idx --token-file /run/secrets/neardup-token
    """
    try:
        from neardup.index.service import _is_loopback
        from neardup.index.service import serve as run
    except ImportError as error:
        raise ValueError(
            f"neardup serve needs FastAPI and uvicorn ({error.name} is missing): "
            "pip install 'neardup[service]'"
        ) from None

    if token_file is not None:
        if token is not None:
            raise ValueError("give one of --token (or NEARDUP_TOKEN) and --token-file")
        token = _read_token_file(token_file)
    if not _is_loopback(host) and not token:
        click.echo(
            f"neardup: warning: serving on {host} without --token: anyone who can reach "
            "it may add and remove documents",
            err=True,
        )
    run(
        directory,
        host=host,
        port=port,
        token=token,
        readonly=readonly,
        synchronous=synchronous,
        max_batch=max_batch,
        max_body_bytes=max_body_bytes,
        log_level=log_level,
        # Printed once the index is open, so an unopenable index gives only its error.
        announce=lambda line: click.echo(line, err=True),
    )


def _read_token_file(path: str) -> str:
    """The token in ``path``: its first line, without surrounding whitespace. O(file)."""
    with open(path, encoding="utf-8") as fh:
        token = fh.readline().strip()
    if not token:
        raise ValueError(f"--token-file {path}: the first line is empty (expected the token)")
    return token
