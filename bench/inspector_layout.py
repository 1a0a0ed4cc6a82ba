"""Responsiveness of the inspector's graph stage (api/inspector/static/graph/) in headless Chromium.

Loads the component alone (Playwright answers a made-up origin from the files on disk, under
the inspector's Content-Security-Policy; nothing reaches the network) and mounts a synthetic
knowledge graph: clusters of different sizes (entities with some stored-fact nodes), isolated
entities, about 1.5 links per node of which some are parallel relations between one pair.
For each size (default 200, 500 and 2,000 nodes) it measures:

- mount to layout done and drawn (``handle.ready``; median of ``--rounds``), split into the
  layout's own CPU time (it works in slices and yields), building the Cytoscape elements
  (headless, in chunks) and the first paint, and the longest frame gap from mount to the
  first frame after ``ready`` (the first paint is one blocking frame);
- frame times (requestAnimationFrame deltas, p50/p95/max) during a pan and wheel-zoom
  sequence driven by real mouse input;
- select + centre: the synchronous cost of ``handle.select`` and the time until the centring
  animation (320 ms by design) has finished.

    .venv/bin/python bench/inspector_layout.py --sizes 200 500 2000 --rounds 5

Results: stdout and bench/results/inspector_layout.json. Headless Chromium runs with
--disable-gpu (software canvas), as the browser tests do; frames are paced at 60 Hz, so a
p50 near 16.7 ms means every frame made it.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS_DIR, machine_info, percentile, write_result

ROOT = Path(__file__).resolve().parent.parent
GRAPH_DIR = ROOT / "api" / "inspector" / "static" / "graph"
ORIGIN = "http://inspector.bench"
CSP = "default-src 'none'; script-src 'self'; style-src 'self'"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1600, "height": 1000}

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/graph/graph-stage.css"><link rel="stylesheet" href="/bench.css">
<script src="/graph/cytoscape.min.js"></script><script src="/graph/graph-stage.js"></script>
<script src="/bench.js"></script></head>
<body><div id="layout"><div id="graph"></div><aside id="card"></aside></div></body></html>"""
BENCH_CSS = """body { margin: 0; } #layout { display: flex; height: 960px; }
#graph { flex: 1 1 0; min-width: 0; height: 960px; } #card { flex: 0 0 380px; }"""
BENCH_JS = """
window.frames = null;
function frameLoop() {
  var last = performance.now();
  window.frames = [];
  function tick(now) {
    if (!window.frames) return;
    window.frames.push(now - last); last = now;
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}
window.startFrames = function () { frameLoop(); };
window.stopFrames = function () { var f = window.frames || []; window.frames = null; return f; };
window.benchMount = function (data) {
  if (window.handle) { window.handle.destroy(); window.handle = null; }
  frameLoop();
  var t0 = performance.now();
  var h = InspectorGraph.mount(document.getElementById('graph'), data, {onSelect: function () {}});
  window.handle = h;
  return h.ready.then(function () {
    var wall = performance.now() - t0;
    // one more frame, so that the gap of the frame that first drew the graph is counted
    return new Promise(function (resolve) {
      requestAnimationFrame(function () { resolve(wall); });
    });
  }).then(function (wall) {
    var gaps = window.stopFrames();
    return {wall_ms: wall, layout_ms: h.layoutMs, layout_cpu_ms: h.layoutCpuMs,
            layout_wall_ms: h.layoutWallMs, draw_ms: h.drawMs, first_paint_ms: wall - h.layoutMs,
            max_frame_gap_ms: gaps.length ? Math.max.apply(null, gaps) : null};
  });
};
window.benchSelect = function (id) {
  var t0 = performance.now();
  var p = handle.select(id);
  var call = performance.now() - t0;
  return p.then(function () { return {call_ms: call, centred_ms: performance.now() - t0}; });
};
"""
FILES = {"/": ("text/html", PAGE), "/bench.css": ("text/css", BENCH_CSS),
         "/bench.js": ("application/javascript", BENCH_JS)}


def synthetic_graph(n: int, seed: int = 2026) -> dict[str, Any]:
    """``n`` nodes: clusters of shares 30/20/12/8/6% and 12 small ones, ~5% isolated,
    one node in five a stored fact, ~1.5 links per node, 2% of relations doubled (parallel)."""
    rng = random.Random(seed)
    isolated = max(2, n // 20)
    shares = [0.30, 0.20, 0.12, 0.08, 0.06]
    sizes = [max(3, int(n * s)) for s in shares]
    rest = n - isolated - sum(sizes)
    small = 12
    sizes += [rest // small + (1 if i < rest % small else 0) for i in range(small)]
    sizes = [s for s in sizes if s > 0]
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    relations = ("works_on", "knows", "located_in", "owns", "reports_to", "uses")

    def add_edge(a: str, b: str, kind: str, relation: str) -> None:
        edges.append({"id": f"e{len(edges)}", "source": a, "target": b,
                      "relation": relation, "kind": kind})

    for c, size in enumerate(sizes):
        ids = [f"c{c}n{i}" for i in range(size)]
        kinds = ["fact" if i % 5 == 4 else "entity" for i in range(size)]
        entities = [nid for nid, k in zip(ids, kinds, strict=True) if k == "entity"]
        for nid, kind in zip(ids, kinds, strict=True):
            label = (f"- Shared fact: {nid} was confirmed in the weekly review" if kind == "fact"
                     else f"Entity {nid}")
            nodes.append({"id": nid, "label": label, "kind": kind})
        for i, nid in enumerate(entities[1:], start=1):  # a random tree keeps it connected
            add_edge(entities[rng.randrange(i)], nid, "relation", rng.choice(relations))
        for nid, kind in zip(ids, kinds, strict=True):
            if kind == "fact":
                add_edge(rng.choice(entities), nid, "fact", "")
        for _ in range(int(len(entities) * 0.7)):
            a, b = rng.sample(entities, 2) if len(entities) > 1 else (entities[0], entities[0])
            if a != b:
                add_edge(a, b, "relation", rng.choice(relations))
    relation_edges = [e for e in edges if e["kind"] == "relation"]
    for e in rng.sample(relation_edges, max(1, len(relation_edges) // 50)):
        add_edge(e["source"], e["target"], "relation", "also_" + e["relation"])
    for i in range(isolated):
        nodes.append({"id": f"iso{i}", "label": f"Session: agent:main:{rng.getrandbits(128):032x}",
                      "kind": "entity"})
    return {"nodes": nodes, "edges": edges, "clusters": len(sizes), "isolated": isolated}


def _serve(route) -> None:
    path = route.request.url[len(ORIGIN):].split("?")[0]
    if path in FILES:
        kind, body = FILES[path]
        route.fulfill(status=200, content_type=kind, body=body,
                      headers={"Content-Security-Policy": CSP})
    elif path.startswith("/graph/") and (GRAPH_DIR / Path(path).name).is_file():
        target = GRAPH_DIR / Path(path).name
        kind = "text/css" if target.suffix == ".css" else "application/javascript"
        route.fulfill(status=200, content_type=kind, body=target.read_bytes())
    else:
        route.fulfill(status=404, body="not found")


def _pan_zoom_frames(page) -> list[float]:
    box = page.evaluate("""() => { const r = document.querySelector('#graph .ig-stage')
        .getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }""")
    x0, y0, w, h = box
    page.evaluate("startFrames()")
    cx, cy = x0 + w / 2, y0 + h / 2
    page.mouse.move(cx, cy)
    for step in range(12):  # zoom in at moving points, then out
        page.mouse.move(cx + 10 * step, cy - 6 * step)
        page.mouse.wheel(0, -100)
    page.mouse.move(cx - 200, cy - 150)
    page.mouse.down()
    page.mouse.move(cx + 150, cy + 120, steps=30)
    page.mouse.move(cx - 100, cy + 200, steps=30)
    page.mouse.up()
    for _ in range(12):
        page.mouse.wheel(0, 100)
    page.wait_for_timeout(300)
    return page.evaluate("stopFrames()")


def measure(browser, n: int, rounds: int) -> dict[str, Any]:
    graph = synthetic_graph(n)
    data = {"nodes": graph["nodes"], "edges": graph["edges"]}
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.route(f"{ORIGIN}/**", _serve)
        page.goto(f"{ORIGIN}/")
        mounts = [page.evaluate("d => benchMount(d)", data) for _ in range(rounds)]
        frames = _pan_zoom_frames(page)
        targets = [graph["nodes"][i]["id"] for i in (0, n // 3, n // 2, n - 1)]
        selects = []
        for target in targets:
            page.evaluate("handle.clear()")
            selects.append(page.evaluate("id => benchSelect(id)", target))
        page.evaluate("handle.destroy()")
    finally:
        context.close()

    def med(key: str, rows: list[dict[str, Any]]) -> float:
        return round(statistics.median(r[key] for r in rows), 1)

    return {
        "nodes": len(graph["nodes"]), "edges": len(graph["edges"]),
        "clusters": graph["clusters"], "isolated": graph["isolated"], "rounds": rounds,
        "mount_to_ready_ms_median": med("wall_ms", mounts),
        "layout_ms_median": med("layout_ms", mounts),
        "layout_cpu_ms_median": med("layout_cpu_ms", mounts),
        "layout_wall_ms_median": med("layout_wall_ms", mounts),
        "draw_ms_median": med("draw_ms", mounts),
        "first_paint_ms_median": med("first_paint_ms", mounts),
        "max_frame_gap_during_layout_ms_median": med("max_frame_gap_ms", mounts),
        "mount_rounds_ms": [round(r["wall_ms"], 1) for r in mounts],
        "pan_zoom_frames": len(frames),
        "frame_ms_p50": round(percentile(frames, 50) or 0, 1),
        "frame_ms_p95": round(percentile(frames, 95) or 0, 1),
        "frame_ms_max": round(max(frames) if frames else 0, 1),
        "select_call_ms_median": med("call_ms", selects),
        "select_to_centred_ms_median": med("centred_ms", selects),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 2000],
                        help="graph sizes in nodes (default: 200 500 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="mounts per size (median)")
    parser.add_argument("--chromium", default=None,
                        help="the Chromium binary (default: chromium on PATH, /usr/bin/chromium)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)

    chromium = args.chromium or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).is_file():
        parser.error(f"no Chromium at {chromium}: run scripts/install-browser or pass --chromium")
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            version = browser.version
            for n in args.sizes:
                row = measure(browser, n, args.rounds)
                rows.append(row)
                print(f"{row['nodes']:>5} nodes {row['edges']:>5} edges: "
                      f"ready {row['mount_to_ready_ms_median']:7.1f} ms "
                      f"(layout cpu {row['layout_cpu_ms_median']:7.1f} ms, "
                      f"build {row['draw_ms_median']:6.1f} ms, "
                      f"first paint {row['first_paint_ms_median']:6.1f} ms, "
                      f"max frame gap {row['max_frame_gap_during_layout_ms_median']:5.1f} ms) | "
                      f"pan/zoom frames p50 {row['frame_ms_p50']:5.1f} "
                      f"p95 {row['frame_ms_p95']:5.1f} max {row['frame_ms_max']:6.1f} ms | "
                      f"select {row['select_call_ms_median']:5.1f} ms, centred "
                      f"{row['select_to_centred_ms_median']:6.1f} ms", flush=True)
        finally:
            browser.close()
    machine = machine_info()
    machine["chromium"] = version
    machine["chromium_flags"] = CHROMIUM_ARGS
    target = write_result("inspector_layout", {"sizes": rows, "machine": machine},
                          args.results_dir)
    print(f"machine: {machine['cores']} cores, {machine['ram_gb']} GB, {machine['cpu']}, "
          f"Chromium {version}")
    print(f"results: {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
