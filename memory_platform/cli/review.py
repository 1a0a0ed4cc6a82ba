"""`memory-platform review`: the review queues and a person's decisions from the shell (the
same functions as /api/v1/review). ``--reviewer`` is the person deciding: the queues and
decisions are those the visibility rule opens to that user of the instance."""

from __future__ import annotations

import json
from uuid import UUID

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.features.review.people import OPERATOR
from memory_platform.foundation.settings import get_settings

_INSTANCE = click.option("--instance", default=None,
                         help="Instance (default MEMORY_INSTANCE_KEY).")
_REVIEWER = click.option("--reviewer", required=True, help="The user id of the reviewer.")


def _run(call):
    with platform_connection() as conn:
        return call(conn)


def _ctx(instance: str | None, reviewer: str):
    from memory_platform.shared.access import AccessContext

    return AccessContext(instance or get_settings().instance_key, user_id=reviewer)


def _echo(value) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


@click.group(cls=PlatformGroup)
def review() -> None:
    """Review queues: pending assertions, open conflicts and Wiki drafts."""


@review.command("list")
@click.option("--kind", type=click.Choice(["assertion", "conflict", "wiki_draft"]),
              default="assertion", show_default=True)
@click.option("--type", "assertion_type", default=None)
@click.option("--audience", default=None)
@click.option("--origin", default=None)
@click.option("--limit", type=int, default=None)
@click.option("--cursor", default=None)
@_INSTANCE
@_REVIEWER
def list_queue(kind, assertion_type, audience, origin, limit, cursor, instance, reviewer):
    """List one queue as JSON (items with evidence, and the next cursor)."""
    from memory_platform.features.review.queues import review_queue

    items, following = _run(lambda conn: review_queue(
        conn, _ctx(instance, reviewer), kind, assertion_type=assertion_type,
        audience=audience, origin=origin, limit=limit, cursor=cursor))
    _echo({"items": items, "nextCursor": following})


@review.command("decide")
@click.argument("assertion_id", type=click.UUID)
@click.argument("decision", type=click.Choice(["approve", "reject", "supersede"]))
@click.option("--successor", type=click.UUID, default=None,
              help="The assertion that replaces this one (supersede).")
@click.option("--reason", "reason_code", default=None, help="A reason code (snake_case).")
@click.option("--note", default=None)
@_INSTANCE
@_REVIEWER
def decide(assertion_id: UUID, decision, successor, reason_code, note, instance, reviewer):
    """Approve, reject or supersede one assertion."""
    from memory_platform.features.review.decisions import decide_assertion

    settings = get_settings()
    result = _run(lambda conn: decide_assertion(
        conn, settings, _ctx(instance, reviewer), assertion_id, decision,
        reason_code=reason_code, successor_id=successor, note=note, key_kind=OPERATOR))
    _echo(result.as_json())


@review.command("bulk")
@click.argument("decision", type=click.Choice(["approve", "reject"]))
@click.option("--type", "assertion_type", default=None)
@click.option("--audience", default=None)
@click.option("--origin", default=None)
@click.option("--limit", type=click.IntRange(1, 500), default=500, show_default=True)
@click.option("--reason", "reason_code", default=None)
@_INSTANCE
@_REVIEWER
def bulk(decision, assertion_type, audience, origin, limit, reason_code, instance, reviewer):
    """Approve or reject the pending assertions of a filtered queue (at most --limit)."""
    from memory_platform.features.review.decisions import decide_pending

    settings = get_settings()
    result = _run(lambda conn: decide_pending(
        conn, settings, _ctx(instance, reviewer), decision, assertion_type=assertion_type,
        audience=audience, origin=origin, limit=limit, reason_code=reason_code, key_kind=OPERATOR))
    _echo(result.as_json())


@review.command("resolve")
@click.argument("conflict_id", type=click.UUID)
@click.argument("action", type=click.Choice(["keep_one", "keep_both", "merge",
                                             "reject_challenger"]))
@click.option("--keep", "keep_id", type=click.UUID, default=None,
              help="The assertion that stays (keep_one, merge).")
@_INSTANCE
@_REVIEWER
def resolve(conflict_id, action, keep_id, instance, reviewer):
    """Resolve an open conflict."""
    from memory_platform.features.review.decisions import resolve as resolve_conflict

    settings = get_settings()
    result = _run(lambda conn: resolve_conflict(conn, settings, _ctx(instance, reviewer),
                                                conflict_id, action, keep_id=keep_id,
                                                key_kind=OPERATOR))
    _echo(result.as_json())


@review.command("wiki")
@click.argument("proposal_id", type=click.UUID)
@click.argument("decision", type=click.Choice(["approve", "reject"]))
@click.option("--reason", default=None)
@_INSTANCE
@_REVIEWER
def wiki(proposal_id, decision, reason, instance, reviewer):
    """Approve or reject a Wiki draft."""
    from memory_platform.features.review.decisions import decide_wiki_draft

    result = _run(lambda conn: decide_wiki_draft(conn, _ctx(instance, reviewer), proposal_id,
                                                 decision, reason=reason, key_kind=OPERATOR))
    _echo(result.as_json())


COMMANDS = (review,)  # collected by memory_platform.cli
