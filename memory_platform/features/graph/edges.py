"""The active edges around given entities, bounded: the one FROM clause that the search's edge
expansion and the neighbour hops of ``reads.neighbors`` share.

Per anchor entity it reads at most ``EDGE_SCAN_MAX`` outgoing and as many incoming active
edges (each direction one index range), so a hub with thousands of edges costs no more than
that; both endpoints must be active entities. The caller adds its visibility predicate over
``g`` (the edge) in its WHERE clause and selects from ``anchor`` (the entity the edge was
reached from), ``g``, ``s`` (source entity) and ``t`` (target entity).
"""

from __future__ import annotations

from psycopg import sql

EDGE_SCAN_MAX = 500

_AROUND = """
      FROM unnest({anchors}::uuid[]) AS anchor(id)
     CROSS JOIN LATERAL (
           (SELECT * FROM agent_knowledge_edges x
             WHERE x.instance_key = {instance} AND x.source_entity_id = anchor.id
               AND x.status = 'active' LIMIT {scan})
           UNION ALL
           (SELECT * FROM agent_knowledge_edges x
             WHERE x.instance_key = {instance} AND x.target_entity_id = anchor.id
               AND x.status = 'active' LIMIT {scan})) g
      JOIN agent_knowledge_entities s
        ON s.instance_key = g.instance_key AND s.id = g.source_entity_id AND s.status = 'active'
      JOIN agent_knowledge_entities t
        ON t.instance_key = g.instance_key AND t.id = g.target_entity_id AND t.status = 'active'
"""


def edges_around(anchors: sql.Composable, instance: sql.Composable) -> sql.Composed:
    """The FROM clause over the anchor ids ``anchors`` (a uuid[] placeholder) of
    ``instance`` (a placeholder or literal)."""
    return sql.SQL(_AROUND).format(anchors=anchors, instance=instance,
                                   scan=sql.Literal(EDGE_SCAN_MAX))
