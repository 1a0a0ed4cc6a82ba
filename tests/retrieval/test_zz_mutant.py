"""Scratch: the property must catch a leaky predicate (mutation check, not committed)."""
import pytest
from psycopg import sql
import memory_platform.retrieval.filters as filters
from tests.retrieval.test_visibility_property import *  # noqa
from tests.retrieval import test_visibility_property as prop

MUTANT = pytest.mark.parametrize("mutant", ["private", "team", "instance"])

@MUTANT
def test_mutants_are_caught(monkeypatch, mutant, db, config):
    original = filters.visibility_predicate
    def leaky(ctx, alias="m"):
        base = original(ctx, alias)
        a = sql.Identifier(alias, "visibility_scope")
        if mutant == "private":
            return sql.SQL("({} OR ({}.instance_key = {} AND {} = 'private'))").format(base, sql.Identifier(alias), sql.Literal(ctx.instance_key), a)
        if mutant == "team":
            return sql.SQL("({} OR ({}.instance_key = {} AND {} = 'team'))").format(base, sql.Identifier(alias), sql.Literal(ctx.instance_key), a)
        return sql.SQL("({} OR {} = 'workspace')").format(base, a)
    monkeypatch.setattr(filters, "visibility_predicate", leaky)
    with pytest.raises(AssertionError):
        prop.test_no_read_path_returns_a_row_the_rules_forbid(db=db, config=config)
