"""The inspector's graph stage (api/inspector/static/graph/) alone, in headless Chromium.

No server: Playwright answers the requests of a made-up origin from the files on disk, with
the inspector's Content-Security-Policy (script-src 'self', no 'unsafe-eval'), so the
component is also proved to load as a plain <script src> without eval or inline script.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from memory_platform.foundation.settings import PROJECT_ROOT

GRAPH_DIR = PROJECT_ROOT / "api" / "inspector" / "static" / "graph"
ORIGIN = "http://inspector.test"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; "
       "img-src 'self' data:")
UUID = "3f2a1b2c-4d5e-6f70-8192-a3b4c5d6e7f8"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8">
<link rel="stylesheet" href="/graph/graph-stage.css">
<link rel="stylesheet" href="/test.css">
<script src="/graph/cytoscape.min.js"></script>
<script src="/graph/graph-stage.js"></script>
<script src="/harness.js"></script>
</head><body>
<div id="layout"><div id="graph"></div><aside id="card"><p>card</p></aside></div>
</body></html>"""

TEST_CSS = """body { margin: 0; }
#layout { display: flex; height: 900px; width: 1500px; }
#graph { flex: 1 1 0; min-width: 0; height: 900px; }
#card { flex: 0 0 360px; overflow: auto; height: 900px; }
"""

# The page's own glue, as the inspector's pages would have it: a script file, no inline code.
HARNESS_JS = """
window.events = [];
window.mountGraph = function (data, options) {
  if (window.handle) window.handle.destroy();
  var opts = Object.assign({onSelect: function (id) { window.events.push(id); }}, options || {});
  window.handle = InspectorGraph.mount(document.getElementById('graph'), data, opts);
  return window.handle.ready.then(function () { return window.handle.layoutMs; });
};
"""

FILES = {
    "/": ("text/html", PAGE),
    "/test.css": ("text/css", TEST_CSS),
    "/harness.js": ("application/javascript", HARNESS_JS),
}


def _serve(route) -> None:
    path = route.request.url[len(ORIGIN):].split("?")[0]
    if path in FILES:
        kind, body = FILES[path]
        route.fulfill(status=200, content_type=kind, body=body, headers={
            "Content-Security-Policy": CSP})
        return
    if path.startswith("/graph/"):
        target = GRAPH_DIR / Path(path).name
        if target.is_file():
            kind = "text/css" if target.suffix == ".css" else "application/javascript"
            route.fulfill(status=200, content_type=kind, body=target.read_bytes())
            return
    route.fulfill(status=404, body="not found")


@pytest.fixture
def stage(page):
    """The test page with the component loaded; records CSP violations and page errors."""
    page.route(f"{ORIGIN}/**", _serve)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(msg.text)
            if msg.type == "error" else None)
    page.goto(f"{ORIGIN}/")
    assert page.evaluate("typeof window.InspectorGraph") == "object"
    yield page
    assert problems == []


def mount(page, data, options=None) -> float:
    return page.evaluate("([d, o]) => window.mountGraph(d, o)", [data, options or {}])


def node(node_id, label=None, kind="entity"):
    return {"id": node_id, "label": label or node_id, "kind": kind}


def edge(edge_id, source, target, relation="related_to", kind="relation"):
    return {"id": edge_id, "source": source, "target": target, "relation": relation,
            "kind": kind}


def clustered_graph(sizes, isolated=0, seed=7):
    """Clusters of the given sizes (a ring plus chords each, some fact nodes) and isolated
    entities; returns the data and each node's cluster number (-1 isolated)."""
    rng = random.Random(seed)
    nodes, edges, cluster = [], [], {}
    for c, size in enumerate(sizes):
        ids = [f"c{c}n{i}" for i in range(size)]
        for i, nid in enumerate(ids):
            kind = "fact" if i % 5 == 4 else "entity"
            nodes.append(node(nid, f"Node {nid}", kind))
            cluster[nid] = c
        for i in range(size):
            edges.append(edge(f"c{c}e{i}", ids[i], ids[(i + 1) % size]))
        for k in range(size // 3):
            a, b = rng.sample(ids, 2)
            edges.append(edge(f"c{c}x{k}", a, b, "knows"))
    for i in range(isolated):
        nodes.append(node(f"iso{i}"))
        cluster[f"iso{i}"] = -1
    return {"nodes": nodes, "edges": edges}, cluster


def stage_box(page):
    return page.evaluate("""() => { const r = document.querySelector('#graph .ig-stage')
        .getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height}; }""")


def wait_still(page):
    """Wait until the viewport (zoom and pan) has stopped changing for longer than the
    centring animation lasts (320 ms): a shorter window can fall between two frames of a
    running animation on a busy machine."""
    page.wait_for_function("""() => new Promise(resolve => {
        const a = JSON.stringify([handle.zoom(), handle.pan()]);
        setTimeout(() => resolve(a === JSON.stringify([handle.zoom(), handle.pan()])), 450);
    })""", polling=100, timeout=10000)


# --- layout -----------------------------------------------------------------------------------


def test_layout_is_deterministic(stage):
    data, _ = clustered_graph([40, 15, 6], isolated=4)
    mount(stage, data)
    first = stage.evaluate("handle.positions()")
    mount(stage, data)
    second = stage.evaluate("handle.positions()")
    assert set(first) == {n["id"] for n in data["nodes"]}
    assert first == second
    # a real layout, not everything at one spot
    xs = {round(p["x"]) for p in first.values()}
    ys = {round(p["y"]) for p in first.values()}
    assert len(xs) > 30 and len(ys) > 30


def test_connected_nodes_cluster_and_clusters_are_packed_apart(stage):
    data, cluster = clustered_graph([45, 20, 8, 3], isolated=6)
    mount(stage, data)
    pos = stage.evaluate("handle.positions()")
    boxes = {}
    for nid, p in pos.items():
        c = cluster[nid]
        if c < 0:
            continue
        x0, y0, x1, y1 = boxes.get(c, (math.inf, math.inf, -math.inf, -math.inf))
        boxes[c] = (min(x0, p["x"]), min(y0, p["y"]), max(x1, p["x"]), max(y1, p["y"]))
    # clusters side by side: bounding boxes (grown by a node radius) never overlap
    r = 15
    for a in boxes:
        for b in boxes:
            if a < b:
                ax0, ay0, ax1, ay1 = boxes[a]
                bx0, by0, bx1, by1 = boxes[b]
                apart = (ax1 + r < bx0 - r or bx1 + r < ax0 - r or
                         ay1 + r < by0 - r or by1 + r < ay0 - r)
                assert apart, f"clusters {a} and {b} overlap: {boxes[a]} {boxes[b]}"
    # isolated nodes sit outside every cluster's box
    for nid, p in pos.items():
        if cluster[nid] < 0:
            for x0, y0, x1, y1 in boxes.values():
                assert not (x0 - r <= p["x"] <= x1 + r and y0 - r <= p["y"] <= y1 + r)
    # linked nodes are much closer than nodes of different clusters
    def dist(a, b):
        return math.dist((pos[a]["x"], pos[a]["y"]), (pos[b]["x"], pos[b]["y"]))

    linked = sorted(dist(e["source"], e["target"]) for e in data["edges"])
    median_linked = linked[len(linked) // 2]
    across = [dist(a, b) for a in pos for b in pos
              if cluster[a] >= 0 and cluster[b] >= 0 and cluster[a] != cluster[b]]
    assert median_linked * 3 < sum(across) / len(across)
    assert median_linked < 150


def test_parallel_relations_are_drawn_as_separate_curves(stage):
    data = {"nodes": [node("a", "Anna"), node("b", "Billing service"), node("c", "Berlin")],
            "edges": [edge("r1", "a", "b", "works_on"), edge("r2", "a", "b", "leads"),
                      edge("r3", "b", "c", "located_in")]}
    mount(stage, data)
    pos = stage.evaluate("handle.positions()")
    m1 = stage.evaluate("handle.edgeMidpoint('r1')")
    m2 = stage.evaluate("handle.edgeMidpoint('r2')")
    m3 = stage.evaluate("handle.edgeMidpoint('r3')")
    assert math.dist((m1["x"], m1["y"]), (m2["x"], m2["y"])) > 10
    # each of the pair bends away from the straight line, the single edge does not
    straight_ab = ((pos["a"]["x"] + pos["b"]["x"]) / 2, (pos["a"]["y"] + pos["b"]["y"]) / 2)
    straight_bc = ((pos["b"]["x"] + pos["c"]["x"]) / 2, (pos["b"]["y"] + pos["c"]["y"]) / 2)
    assert math.dist((m1["x"], m1["y"]), straight_ab) > 4
    assert math.dist((m2["x"], m2["y"]), straight_ab) > 4
    assert math.dist((m3["x"], m3["y"]), straight_bc) < 1


# --- selection and viewport -----------------------------------------------------------------


def test_click_selects_and_centres_with_a_gentle_zoom(stage):
    data, _ = clustered_graph([80, 40, 20], isolated=10)
    mount(stage, data)
    wait_still(stage)            # the fit after mount has settled (a busy machine is slow)
    z0 = stage.evaluate("handle.zoom()")
    assert z0 < 0.8  # the whole graph fits: clicking must zoom in, by one gentle step at most
    box = stage_box(stage)
    target = "c1n3"
    p = stage.evaluate(f"handle.renderedPosition('{target}')")
    stage.mouse.click(box["x"] + p["x"], box["y"] + p["y"])
    stage.wait_for_function("window.events.length > 0", timeout=3000)
    assert stage.evaluate("window.events") == [target]
    assert stage.evaluate("handle.selected()") == target
    wait_still(stage)
    z1 = stage.evaluate("handle.zoom()")
    assert z0 < z1 <= z0 * 1.5 + 1e-9
    p = stage.evaluate(f"handle.renderedPosition('{target}')")
    assert abs(p["x"] - box["width"] / 2) < 2 and abs(p["y"] - box["height"] / 2) < 2
    # a second selection steps again but never by more than the step
    stage.evaluate("handle.select('c0n10')")
    wait_still(stage)
    z2 = stage.evaluate("handle.zoom()")
    assert z1 < z2 <= z1 * 1.5 + 1e-9
    assert stage.evaluate("window.events") == [target, "c0n10"]


def test_selection_never_zooms_past_a_moderate_level(stage):
    data = {"nodes": [node("a"), node("b")], "edges": [edge("e", "a", "b")]}
    mount(stage, data, {"maxZoomStep": 3})
    stage.evaluate("handle.select('a')")
    wait_still(stage)
    z = stage.evaluate("handle.zoom()")
    assert z <= 1.2 + 1e-9  # fit would zoom a two-node graph far in; the stage keeps it moderate
    box = stage_box(stage)
    p = stage.evaluate("handle.renderedPosition('a')")
    assert abs(p["x"] - box["width"] / 2) < 2 and abs(p["y"] - box["height"] / 2) < 2


def test_background_click_clears_the_selection(stage):
    data, _ = clustered_graph([30, 10])
    mount(stage, data)
    stage.evaluate("handle.select('c0n1')")
    wait_still(stage)
    box = stage_box(stage)
    rendered = stage.evaluate("""() => Object.keys(handle.positions())
        .map(id => handle.renderedPosition(id))""")
    empty = None
    for gx in range(40, int(box["width"]) - 40, 30):
        for gy in range(40, int(box["height"]) - 40, 30):
            if all(math.dist((gx, gy), (q["x"], q["y"])) > 60 for q in rendered):
                empty = (gx, gy)
                break
        if empty:
            break
    assert empty is not None
    stage.mouse.click(box["x"] + empty[0], box["y"] + empty[1])
    stage.wait_for_function("window.events.length > 1", timeout=3000)
    assert stage.evaluate("window.events") == ["c0n1", None]
    assert stage.evaluate("handle.selected()") is None


def test_wheel_zoom_keeps_the_point_under_the_cursor(stage):
    data, _ = clustered_graph([60, 20], isolated=5)
    mount(stage, data)
    box = stage_box(stage)
    cursor = (box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.7)
    before = stage.evaluate("[handle.zoom(), handle.pan()]")
    model = ((cursor[0] - box["x"] - before[1]["x"]) / before[0],
             (cursor[1] - box["y"] - before[1]["y"]) / before[0])
    stage.mouse.move(*cursor)
    for _ in range(3):
        stage.mouse.wheel(0, -120)
    wait_still(stage)
    zoom, pan = stage.evaluate("[handle.zoom(), handle.pan()]")
    assert zoom > before[0] * 1.1
    screen = (box["x"] + pan["x"] + model[0] * zoom, box["y"] + pan["y"] + model[1] * zoom)
    assert math.dist(screen, cursor) < 2


def test_drag_pans_with_the_cursor(stage):
    data, _ = clustered_graph([60, 20])
    mount(stage, data)
    box = stage_box(stage)
    start = stage.evaluate("handle.pan()")
    x, y = box["x"] + 25, box["y"] + 25  # a corner, away from the nodes
    stage.mouse.move(x, y)
    stage.mouse.down()
    stage.mouse.move(x + 80, y + 60, steps=8)
    stage.mouse.move(x + 137, y + 91, steps=8)
    stage.mouse.up()
    end = stage.evaluate("handle.pan()")
    assert abs(end["x"] - start["x"] - 137) < 2 and abs(end["y"] - start["y"] - 91) < 2


def test_stage_keeps_its_size_when_the_card_beside_it_grows(stage):
    data, _ = clustered_graph([30])
    mount(stage, data)
    before = stage_box(stage)
    stage.evaluate("""() => { const card = document.getElementById('card');
        for (let i = 0; i < 400; i++) { const p = document.createElement('p');
          p.textContent = 'history entry ' + i + ' ' + 'x'.repeat(300); card.appendChild(p); } }""")
    stage.evaluate("handle.select('c0n2')")
    wait_still(stage)
    assert stage_box(stage) == before
    assert before["width"] > 800 and before["height"] > 700


# --- captions and legend --------------------------------------------------------------------


@pytest.mark.parametrize(("label", "kind", "expected"), [
    (f"Session: agent:main:{UUID}", "entity", "Session: agent:main \u00b7 3f2a1b2c\u2026"),
    (f"User: {UUID}", "entity", "User: 3f2a1b2c\u2026"),
    (f"document {UUID} draft", "entity", "document 3f2a1b2c\u2026 draft"),
    ("Anna Müller", "entity", "Anna Müller"),
    ("- Shared fact: Anna prefers email.", "fact", "Anna prefers email."),
    ("* Shared fact - The portal moved to Berlin.", "fact", "The portal moved to Berlin."),
    ("1. Invoice 4711 was paid.", "fact", "Invoice 4711 was paid."),
    ("Shared fact: - Lea owns the migration.", "fact", "Lea owns the migration."),
])
def test_captions_are_display_cleaned(stage, label, kind, expected):
    assert stage.evaluate("([l, k]) => InspectorGraph.caption(l, k)", [label, kind]) == expected


def test_long_captions_are_shortened_and_drawn_cleaned(stage):
    long_fact = "- Shared fact: " + "the quarterly review was moved again " * 6
    caption = stage.evaluate("l => InspectorGraph.caption(l, 'fact')", long_fact)
    assert caption.startswith("the quarterly review") and caption.endswith("\u2026")
    assert len(caption) <= 90


def test_legend_explains_nodes_and_links_above_the_stage(stage):
    mount(stage, {"nodes": [node("a"), node("f", "- Shared fact: x", "fact")],
                  "edges": [edge("e", "a", "f", "", "fact")]})
    items = stage.evaluate("""() => [...document.querySelectorAll('#graph .ig-legend-item')]
        .map(e => e.textContent.trim())""")
    assert items == ["Entity", "Stored fact", "Relation", "Fact link"]
    legend_box, graph_box = stage.evaluate("""() => ['.ig-legend', '.ig-stage'].map(s => {
        const r = document.querySelector('#graph ' + s).getBoundingClientRect();
        return {top: r.top, bottom: r.bottom}; })""")
    assert legend_box["bottom"] <= graph_box["top"]
    # the swatches differ: a round entity, a square fact, a solid and a dashed link
    styles = stage.evaluate("""() => ['entity', 'fact', 'relation', 'fact-link'].map(k => {
        const s = getComputedStyle(document.querySelector('.ig-swatch-' + k));
        return [s.borderRadius, s.borderTopStyle, s.backgroundColor]; })""")
    assert styles[0] != styles[1] and styles[2][1] == "solid" and styles[3][1] == "dashed"


def test_destroy_removes_the_stage(stage):
    mount(stage, {"nodes": [node("a")], "edges": []})
    stage.evaluate("handle.destroy()")
    assert stage.evaluate("document.querySelectorAll('#graph > *').length") == 0
