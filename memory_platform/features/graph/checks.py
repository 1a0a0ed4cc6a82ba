"""The graph's support invariant, checked: every active claim and edge of a partition has a
current supporting ref (an assertion that may be told now).

Retraction keeps this true after ledger events and the sweep catches expiry; this check
proves it (tests, operator status) instead of trusting either. Support is decided by the
one SQL rule, ``memory_v2_graph_refs_have_current_support`` (migration 0018), which joins
each ref's assertion by id.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# How many offending ids a failed check names.
SAMPLE_SIZE = 10

_CHECK = """
    SELECT count(*), count(*) FILTER (WHERE NOT s.supported),
           (array_agg(s.id ORDER BY s.id) FILTER (WHERE NOT s.supported))[1:%(sample)s]
      FROM (SELECT k.id,
                   memory_v2_graph_refs_have_current_support(k.instance_key, k.source_refs)
                       AS supported
              FROM {table} k
             WHERE k.instance_key = %(instance)s AND k.visibility_scope = %(kind)s
               AND k.audience_key = %(key)s AND k.status = 'active') s
"""


def graph_support_check(conn: psycopg.Connection, instance_key: str, audience_kind: str,
                        audience_key: str) -> dict:
    """``{"passed", "checked", "unsupported_claims", "unsupported_edges", "sample"}`` for
    one audience partition: ``checked`` active claims and edges, ``sample`` up to SAMPLE_SIZE
    offending claim and edge ids."""
    params = {"instance": instance_key, "kind": audience_kind, "key": audience_key,
              "sample": SAMPLE_SIZE}
    checked, counts, sample = 0, {}, []
    for name, table in (("claims", "agent_knowledge_claims"),
                        ("edges", "agent_knowledge_edges")):
        total, unsupported, ids = conn.execute(
            sql.SQL(_CHECK).format(table=sql.Identifier(table)), params).fetchone()
        checked += total
        counts[name] = unsupported
        sample.extend(ids or [])
    return {"passed": counts["claims"] == 0 and counts["edges"] == 0, "checked": checked,
            "unsupported_claims": counts["claims"], "unsupported_edges": counts["edges"],
            "sample": [str(i) for i in sample[:SAMPLE_SIZE]]}
