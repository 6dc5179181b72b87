"""`gpusteward api-token`: create, revoke and list the control API's per-person tokens (hashed at rest)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import click

from service.api_tokens import ROLES, Role, create_token, list_tokens, revoke_tokens

_FILE = click.option(
    "--file",
    "path",
    type=click.Path(dir_okay=False),
    required=True,
    help="Token file the service reads (--tokens-file, config service.token_files).",
)


@click.group("api-token")
def api_token() -> None:
    """Per-person control API tokens: each has an identity (named in the audit) and a role."""


@api_token.command("create")
@click.argument("identity")
@click.option("--role", type=click.Choice(ROLES), required=True,
              help="viewer: GETs; operator: silence, acknowledge, reviews, retries; approver: also plans; admin: all.")
@_FILE
def create(identity: str, role: str, path: str) -> None:
    """Add a token for IDENTITY; print it once (only its SHA-256 is stored)."""
    try:
        token = create_token(Path(path), identity, cast(Role, role))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="IDENTITY") from exc
    click.echo(token)
    click.echo(f"stored {identity} ({role}) in {path}; a running service takes it from its next request", err=True)


@api_token.command("revoke")
@click.argument("identity")
@_FILE
def revoke(identity: str, path: str) -> None:
    """Remove every token of IDENTITY from the file."""
    if not Path(path).exists():
        raise click.ClickException(f"no token file {path}")
    removed = revoke_tokens(Path(path), identity)
    if removed == 0:
        raise click.ClickException(f"{path} has no token of {identity}")
    click.echo(f"revoked {removed} token(s) of {identity}; a running service refuses them from its next request")


@api_token.command("list")
@_FILE
def list_(path: str) -> None:
    """Identities and roles in the file (never a token or its hash)."""
    try:
        entries = list_tokens(Path(path))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{path}: {exc}") from exc
    for identity, role in entries:
        click.echo(f"{identity}\t{role}")
