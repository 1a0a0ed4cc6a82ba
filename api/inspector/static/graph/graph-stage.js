/* The inspector's graph stage: a deterministic force layout drawn with Cytoscape.js.
 *
 * window.InspectorGraph.mount(container, data, options) -> handle
 *   data    = {nodes: [{id, label, kind: "entity"|"fact", type?, audience?}],
 *              edges: [{id, source, target, relation, kind: "relation"|"fact"}]}
 *   options = {onSelect: function(nodeId or null), maxZoomStep?: 1.5}
 *   handle  = {select(id) -> Promise, clear(), positions(), zoom(), pan(), destroy(),
 *              layoutMs, ready (Promise), renderedPosition(id), edgeMidpoint(id)}
 * window.InspectorGraph.caption(label, kind) -> the display-cleaned caption.
 *
 * The layout is ours, not Cytoscape's: connected components are laid out one by one with a
 * Fruchterman-Reingold simulation (Barnes-Hut repulsion) from a deterministic spiral start
 * and a fixed number of iterations, then packed side by side on shelves. No Math.random, no
 * clock in the maths: the same data gives the same positions. Cytoscape draws (canvas 2D),
 * pans, zooms at the cursor, hit-tests and separates parallel edges (curve-style bezier).
 * No eval, no inline script: loads as a plain <script src> under script-src 'self'.
 */
(function () {
  "use strict";

  var IDEAL = 60;            // ideal edge length, model units
  var THETA = 0.8;           // Barnes-Hut opening angle
  var COMPONENT_GAP = 70;    // space between packed components
  var MODERATE_ZOOM = 1.2;   // the zoom a selection centres at (from below, by gentle steps)
  var FRAME_BUDGET_MS = 12;  // layout work per slice before yielding to the browser
  var UUID_RE = /\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b/gi;
  var HEX_ID_RE = /\b[0-9a-f]{24,}\b/gi;
  var MAX_CAPTION = { entity: 48, fact: 90 };
  var CY_STYLESHEET_ID = "__________cytoscape_stylesheet";

  // --- captions -------------------------------------------------------------------------

  function abbreviateIds(text) {
    return text
      .replace(UUID_RE, function (m) { return m.replace(/-/g, "").slice(0, 8) + "\u2026"; })
      .replace(HEX_ID_RE, function (m) { return m.slice(0, 8) + "\u2026"; });
  }

  function isOpaqueSegment(segment) {
    var s = segment.trim();
    if (!s) return true;
    UUID_RE.lastIndex = 0; HEX_ID_RE.lastIndex = 0;
    var bare = s.replace(UUID_RE, "").replace(HEX_ID_RE, "");
    UUID_RE.lastIndex = 0; HEX_ID_RE.lastIndex = 0;
    return bare.replace(/[\s:._\-\/#]/g, "") === "";
  }

  function shorten(text, max) {
    if (text.length <= max) return text;
    var cut = text.slice(0, max - 1);
    var space = cut.lastIndexOf(" ");
    if (space > max * 0.6) cut = cut.slice(0, space);
    return cut.replace(/[\s,;:.\-]+$/, "") + "\u2026";
  }

  function caption(label, kind) {
    var text = String(label == null ? "" : label).replace(/\s+/g, " ").trim();
    if (kind === "fact") {
      // "- Shared fact: X", "* X", "1. X", "• Shared fact - X" -> "X" (repeated boilerplate too)
      var previous;
      do {
        previous = text;
        text = text.replace(/^(?:[-*\u2022\u2013\u2014>]+|\d+[.)])\s*/, "");
        text = text.replace(/^shared\s+fact\s*[:\-\u2013\u2014]\s*/i, "");
        text = text.replace(/^fact\s*:\s*/i, "");
      } while (text !== previous);
      text = abbreviateIds(text);
      return shorten(text || String(label || ""), MAX_CAPTION.fact);
    }
    // Fallback entity labels: "Session: agent:main:<uuid>" -> "Session: agent:main · 1a2b3c4d…"
    var m = /^([A-Za-z][\w ]{0,30}):\s*(.+)$/.exec(text);
    if (m && /[:\/]/.test(m[2]) && (UUID_RE.test(m[2]) || HEX_ID_RE.test(m[2]))) {
      UUID_RE.lastIndex = 0; HEX_ID_RE.lastIndex = 0;
      var parts = m[2].split(/[:\/]/);
      var readable = [], opaque = [];
      for (var i = 0; i < parts.length; i++) {
        if (isOpaqueSegment(parts[i])) { if (parts[i].trim()) opaque.push(parts[i].trim()); }
        else readable.push(parts[i].trim());
      }
      var tail = opaque.length ? abbreviateIds(opaque[opaque.length - 1]) : "";
      text = m[1] + ": " + readable.join(":") + (tail ? (readable.length ? " \u00b7 " : "") + tail : "");
    }
    UUID_RE.lastIndex = 0; HEX_ID_RE.lastIndex = 0;
    return shorten(abbreviateIds(text), MAX_CAPTION.entity);
  }

  // --- layout ---------------------------------------------------------------------------

  function components(n, adj) {
    var comp = new Int32Array(n).fill(-1), list = [];
    for (var s = 0; s < n; s++) {
      if (comp[s] !== -1) continue;
      var members = [s]; comp[s] = list.length;
      for (var h = 0; h < members.length; h++) {
        var nb = adj[members[h]];
        for (var k = 0; k < nb.length; k++) {
          if (comp[nb[k]] === -1) { comp[nb[k]] = list.length; members.push(nb[k]); }
        }
      }
      list.push(members);
    }
    return list;
  }

  // One component's simulation, run in slices: step(deadline) -> done?
  function ComponentSim(members, adj) {
    var n = members.length, local = new Map();
    for (var i = 0; i < n; i++) local.set(members[i], i);
    // BFS order from the highest-degree node (ties: first in input) seeds the spiral.
    var best = 0;
    for (i = 1; i < n; i++) if (adj[members[i]].length > adj[members[best]].length) best = i;
    var order = [best], seen = new Uint8Array(n); seen[best] = 1;
    for (var h = 0; h < order.length; h++) {
      var nb = adj[members[order[h]]];
      for (var k = 0; k < nb.length; k++) {
        var j = local.get(nb[k]);
        if (!seen[j]) { seen[j] = 1; order.push(j); }
      }
    }
    this.x = new Float64Array(n); this.y = new Float64Array(n);
    var golden = Math.PI * (3 - Math.sqrt(5));
    for (i = 0; i < n; i++) {
      var r = IDEAL * 0.55 * Math.sqrt(i), a = i * golden;
      this.x[order[i]] = r * Math.cos(a); this.y[order[i]] = r * Math.sin(a);
    }
    var es = [], pair = new Set();
    for (i = 0; i < n; i++) {
      var list = adj[members[i]];
      for (k = 0; k < list.length; k++) {
        j = local.get(list[k]);
        if (j > i && !pair.has(i * n + j)) { pair.add(i * n + j); es.push(i, j); }
      }
    }
    this.edges = Int32Array.from(es);
    this.n = n; this.members = members;
    this.iterations = n <= 2 ? 0 : n < 60 ? 300 : n < 400 ? 250 : 200;
    this.iter = 0;
    this.temp0 = IDEAL * Math.max(2, Math.sqrt(n) * 0.6);
    this.dx = new Float64Array(n); this.dy = new Float64Array(n);
    if (n === 2) { this.x[0] = -IDEAL / 2; this.y[0] = 0; this.x[1] = IDEAL / 2; this.y[1] = 0; }
  }

  // Barnes-Hut quadtree in flat arrays: per cell its mass centre, mass, size, children
  // (the arrays are reused from one iteration to the next).
  var reuse = null;
  function buildTree(x, y, n) {
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    for (var i = 0; i < n; i++) {
      if (x[i] < minX) minX = x[i]; if (x[i] > maxX) maxX = x[i];
      if (y[i] < minY) minY = y[i]; if (y[i] > maxY) maxY = y[i];
    }
    var size = Math.max(maxX - minX, maxY - minY, 1) * 1.0001;
    var cap = 4 * n + 8;
    var t = reuse;
    if (!t || t.cx.length < cap) {
      t = reuse = {
        cx: new Float64Array(cap), cy: new Float64Array(cap), half: new Float64Array(cap),
        mx: new Float64Array(cap), my: new Float64Array(cap), mass: new Float64Array(cap),
        child: new Int32Array(cap * 4), body: new Int32Array(cap), count: 1,
      };
    }
    t.count = 1;
    t.mass[0] = 0; t.mx[0] = 0; t.my[0] = 0; t.body[0] = -1;
    t.child[0] = t.child[1] = t.child[2] = t.child[3] = -1;
    t.cx[0] = minX + size / 2; t.cy[0] = minY + size / 2; t.half[0] = size / 2;
    for (i = 0; i < n; i++) insert(t, 0, i, x, y, 0);
    return t;
  }

  function grow(t) {
    var cap = t.cx.length * 2;
    ["cx", "cy", "half", "mx", "my", "mass"].forEach(function (k) {
      var a = new Float64Array(cap); a.set(t[k]); t[k] = a;
    });
    var c = new Int32Array(cap * 4); c.set(t.child); t.child = c;
    var b = new Int32Array(cap); b.set(t.body); t.body = b;
  }

  function insert(t, cell, i, x, y, depth) {
    for (;;) {
      var m = t.mass[cell];
      t.mx[cell] = (t.mx[cell] * m + x[i]) / (m + 1);
      t.my[cell] = (t.my[cell] * m + y[i]) / (m + 1);
      t.mass[cell] = m + 1;
      var leaf = t.child[cell * 4] === -1 && t.child[cell * 4 + 1] === -1 &&
        t.child[cell * 4 + 2] === -1 && t.child[cell * 4 + 3] === -1;
      if (leaf && m === 0) { t.body[cell] = i; return; }
      if (depth > 40) { t.body[cell] = -2; return; } // coincident bodies: an aggregate leaf
      if (leaf && t.body[cell] >= 0) {
        var old = t.body[cell]; t.body[cell] = -1;
        var q0 = quad(t, cell, x[old], y[old]);
        var c0 = makeChild(t, cell, q0);
        t.mx[c0] = x[old]; t.my[c0] = y[old]; t.mass[c0] = 1; t.body[c0] = old;
      }
      var q = quad(t, cell, x[i], y[i]);
      var c = t.child[cell * 4 + q];
      if (c === -1) c = makeChild(t, cell, q);
      cell = c; depth++;
    }
  }

  function quad(t, cell, px, py) {
    return (px >= t.cx[cell] ? 1 : 0) + (py >= t.cy[cell] ? 2 : 0);
  }

  function makeChild(t, cell, q) {
    if (t.count >= t.cx.length) grow(t);
    var c = t.count++, h = t.half[cell] / 2;
    t.half[c] = h; t.mass[c] = 0; t.mx[c] = 0; t.my[c] = 0; t.body[c] = -1;
    t.child[c * 4] = t.child[c * 4 + 1] = t.child[c * 4 + 2] = t.child[c * 4 + 3] = -1;
    t.cx[c] = t.cx[cell] + (q & 1 ? h : -h);
    t.cy[c] = t.cy[cell] + (q & 2 ? h : -h);
    t.child[cell * 4 + q] = c;
    return c;
  }

  var stack = new Int32Array(4096);

  ComponentSim.prototype.step = function (deadline) {
    var n = this.n, x = this.x, y = this.y, dx = this.dx, dy = this.dy, k2 = IDEAL * IDEAL;
    while (this.iter < this.iterations) {
      var t = buildTree(x, y, n);
      for (var i = 0; i < n; i++) {
        var fx = 0, fy = 0, sp = 0;
        stack[sp++] = 0;
        while (sp > 0) {
          var c = stack[--sp];
          var ddx = x[i] - t.mx[c], ddy = y[i] - t.my[c];
          var d2 = ddx * ddx + ddy * ddy;
          var isLeaf = t.body[c] !== -1;
          if (isLeaf && t.body[c] === i) continue;
          var w = t.half[c] * 2;
          if (isLeaf || w * w < THETA * THETA * d2) {
            var mass = t.body[c] === i ? 0 : t.mass[c];
            if (d2 < 0.01) { // coincident: a fixed, index-derived nudge
              ddx = ((i * 7919) % 13 - 6) * 0.05 + 0.01; ddy = ((i * 104729) % 11 - 5) * 0.05;
              d2 = ddx * ddx + ddy * ddy;
            }
            var f = k2 * mass / d2;
            fx += ddx * f; fy += ddy * f;
          } else {
            for (var q = 0; q < 4; q++) {
              var ch = t.child[c * 4 + q];
              if (ch !== -1) stack[sp++] = ch;
            }
          }
        }
        dx[i] = fx; dy[i] = fy;
      }
      var e = this.edges;
      for (var p = 0; p < e.length; p += 2) {
        var a = e[p], b = e[p + 1];
        var ex = x[a] - x[b], ey = y[a] - y[b];
        var d = Math.sqrt(ex * ex + ey * ey) + 1e-9;
        var fa = d / IDEAL; // |F| = d^2 / k, applied to the unit vector
        dx[a] -= ex * fa; dy[a] -= ey * fa; dx[b] += ex * fa; dy[b] += ey * fa;
      }
      var temp = this.temp0 * (1 - this.iter / this.iterations) + 0.5;
      var gravity = 0.08 * Math.sqrt(n);
      for (i = 0; i < n; i++) {
        var gx = dx[i] - x[i] * gravity / 10, gy = dy[i] - y[i] * gravity / 10;
        var len = Math.sqrt(gx * gx + gy * gy);
        if (len > 0) {
          var s = Math.min(len, temp) / len;
          x[i] += gx * s; y[i] += gy * s;
        }
      }
      this.iter++;
      if (deadline && performance.now() > deadline) break;
    }
    return this.iter >= this.iterations;
  };

  // Pack component boxes on shelves, tallest first, rows about as wide as the stage's aspect.
  function pack(boxes, aspect) {
    var area = 0, widest = 0;
    boxes.forEach(function (b) { area += b.w * b.h; widest = Math.max(widest, b.w); });
    var rowWidth = Math.max(widest, Math.sqrt(area * aspect));
    var order = boxes.map(function (b, i) { return i; });
    order.sort(function (a, b) { return boxes[b].h - boxes[a].h || a - b; });
    var cx = 0, cy = 0, shelf = 0;
    order.forEach(function (i) {
      var b = boxes[i];
      if (cx > 0 && cx + b.w > rowWidth) { cx = 0; cy += shelf + COMPONENT_GAP; shelf = 0; }
      b.ox = cx; b.oy = cy;
      cx += b.w + COMPONENT_GAP; shelf = Math.max(shelf, b.h);
    });
  }

  function Layout(nodes, edges, aspect) {
    var n = nodes.length, index = new Map(), adj = [];
    for (var i = 0; i < n; i++) { index.set(nodes[i].id, i); adj.push([]); }
    edges.forEach(function (e) {
      var a = index.get(e.source), b = index.get(e.target);
      if (a === undefined || b === undefined || a === b) return;
      adj[a].push(b); adj[b].push(a);
    });
    var comps = components(n, adj);
    var singles = [], multi = [];
    comps.forEach(function (c) { (c.length === 1 ? singles : multi).push(c); });
    multi.sort(function (a, b) { return b.length - a.length || a[0] - b[0]; });
    this.sims = multi.map(function (c) { return new ComponentSim(c, adj); });
    this.singles = singles.map(function (c) { return c[0]; });
    this.current = 0; this.n = n; this.aspect = aspect; this.nodes = nodes;
    this.x = new Float64Array(n); this.y = new Float64Array(n);
  }

  Layout.prototype.step = function (deadline) {
    while (this.current < this.sims.length) {
      if (!this.sims[this.current].step(deadline)) return false;
      this.current++;
      if (deadline && performance.now() > deadline) return this.current >= this.sims.length && this.finish();
    }
    return this.finish();
  };

  Layout.prototype.finish = function () {
    if (this.done) return true;
    var boxes = [], self = this, margin = 20;
    this.sims.forEach(function (s) {
      var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
      for (var i = 0; i < s.n; i++) {
        minX = Math.min(minX, s.x[i]); maxX = Math.max(maxX, s.x[i]);
        minY = Math.min(minY, s.y[i]); maxY = Math.max(maxY, s.y[i]);
      }
      boxes.push({ w: maxX - minX + 2 * margin, h: maxY - minY + 2 * margin,
        place: function (ox, oy) {
          for (var i = 0; i < s.n; i++) {
            self.x[s.members[i]] = s.x[i] - minX + margin + ox;
            self.y[s.members[i]] = s.y[i] - minY + margin + oy;
          }
        } });
    });
    if (this.singles.length) { // isolated nodes: one grid block
      var cols = Math.ceil(Math.sqrt(this.singles.length * this.aspect));
      var rows = Math.ceil(this.singles.length / cols), singles = this.singles;
      boxes.push({ w: (cols - 1) * IDEAL + 2 * margin, h: (rows - 1) * IDEAL + 2 * margin,
        place: function (ox, oy) {
          singles.forEach(function (v, k) {
            self.x[v] = ox + margin + (k % cols) * IDEAL;
            self.y[v] = oy + margin + Math.floor(k / cols) * IDEAL;
          });
        } });
    }
    pack(boxes, this.aspect);
    boxes.forEach(function (b) { b.place(b.ox, b.oy); });
    this.done = true;
    return true;
  };

  // --- drawing --------------------------------------------------------------------------

  var STYLE = [
    { selector: "node", style: {
      "label": "data(caption)", "font-size": 10, "color": "#1f2933",
      "text-valign": "bottom", "text-margin-y": 4, "text-wrap": "none",
      "min-zoomed-font-size": 7, "text-background-color": "#ffffff",
      "text-background-opacity": 0.7, "text-background-padding": 1 } },
    { selector: "node.ig-entity", style: {
      "shape": "ellipse", "width": 24, "height": 24, "background-color": "#3a6ea5",
      "border-width": 1.5, "border-color": "#24486f" } },
    { selector: "node.ig-fact", style: {
      "shape": "round-rectangle", "width": 16, "height": 16, "background-color": "#f2b84b",
      "border-width": 1.5, "border-color": "#a8761c", "font-size": 9, "color": "#5b4310",
      // above the square: a fact sits beside its subject, whose label is below it, so a
      // wide caption below the fact would cover that label
      "text-wrap": "wrap", "text-max-width": 150, "text-valign": "top", "text-margin-y": -6 } },
    { selector: "node.ig-fact.ig-caption-below", style: {
      "text-valign": "bottom", "text-margin-y": 4 } },
    { selector: "edge", style: {
      "curve-style": "bezier", "control-point-step-size": 26, "width": 1.4,
      "line-color": "#8795a8", "target-arrow-color": "#8795a8", "target-arrow-shape": "triangle",
      "arrow-scale": 0.7, "label": "data(relation)", "font-size": 8, "color": "#4a5566",
      "min-zoomed-font-size": 9, "text-rotation": "autorotate",
      "text-background-color": "#ffffff", "text-background-opacity": 0.7 } },
    // one link between a pair: a straight line (cheaper to draw); parallel links: bezier curves
    { selector: "edge.ig-single", style: { "curve-style": "straight" } },
    { selector: "edge.ig-fact-link", style: {
      "line-style": "dashed", "line-dash-pattern": [5, 4], "line-color": "#d29a36",
      "target-arrow-shape": "none", "width": 1.2, "label": "" } },
    // level of detail: while labels would be too small to read they are not laid out at all
    { selector: ".ig-nolabel", style: { "label": "" } },
    { selector: "node.ig-selected", style: {
      "label": "data(caption)",
      "border-width": 5, "border-color": "#e4572e", "z-index": 20,
      "font-weight": "bold", "text-background-opacity": 0.95 } },
    { selector: "edge.ig-adjacent", style: { "width": 2.6, "z-index": 19 } },
  ];

  function legend() {
    var el = document.createElement("div");
    el.className = "ig-legend";
    el.setAttribute("aria-label", "Graph legend");
    [["ig-swatch-entity", "Entity", "an extracted entity (person, project, session, ...)"],
     ["ig-swatch-fact", "Stored fact", "a stored claim's statement"],
     ["ig-swatch-relation", "Relation", "a relation between two entities (solid)"],
     ["ig-swatch-fact-link", "Fact link", "an entity and a fact about it (dashed)"]]
      .forEach(function (item) {
        var span = document.createElement("span");
        span.className = "ig-legend-item";
        span.setAttribute("data-legend", item[1].toLowerCase().replace(" ", "-"));
        span.title = item[2];
        var sw = document.createElement("span");
        sw.className = "ig-swatch " + item[0];
        sw.setAttribute("aria-hidden", "true");
        span.appendChild(sw);
        span.appendChild(document.createTextNode(item[1]));
        el.appendChild(span);
      });
    return el;
  }

  function mount(container, data, options) {
    if (typeof window.cytoscape !== "function") throw new Error("cytoscape.min.js is not loaded");
    options = options || {};
    var onSelect = typeof options.onSelect === "function" ? options.onSelect : function () {};
    var maxStep = Number(options.maxZoomStep) > 1 ? Number(options.maxZoomStep) : 1.5;
    var nodes = (data && data.nodes) || [], edges = (data && data.edges) || [];
    var started = performance.now();

    container.classList.add("ig-root");
    var legendEl = legend();
    var stage = document.createElement("div");
    stage.className = "ig-stage";
    container.insertBefore(stage, container.firstChild);
    container.insertBefore(legendEl, stage);

    var ids = new Set();
    var cleanNodes = nodes.filter(function (v) {
      if (v == null || v.id == null || ids.has(String(v.id))) return false;
      ids.add(String(v.id)); return true;
    }).map(function (v) {
      return { id: String(v.id), label: v.label, kind: v.kind === "fact" ? "fact" : "entity" };
    });
    var edgeIds = new Set();
    var cleanEdges = edges.filter(function (e) {
      return e && ids.has(String(e.source)) && ids.has(String(e.target));
    }).map(function (e, i) {
      var id = e.id != null && !edgeIds.has(String(e.id)) && !ids.has(String(e.id))
        ? String(e.id) : "ig-edge-" + i;
      edgeIds.add(id);
      return { id: id, source: String(e.source), target: String(e.target),
        relation: e.relation == null ? "" : String(e.relation),
        kind: e.kind === "fact" ? "fact" : "relation" };
    });

    var rect = stage.getBoundingClientRect();
    var aspect = rect.width > 0 && rect.height > 0 ? rect.width / rect.height : 1.6;
    var layout = new Layout(cleanNodes, cleanEdges, Math.min(3, Math.max(0.5, aspect)));
    var big = cleanNodes.length > 300;
    var cy = null, selected = null, destroyed = false, timer = null;
    var handle = { layoutMs: NaN, layoutCpuMs: 0, drawMs: 0 };

    handle.ready = new Promise(function (resolve, reject) {
      function slice() {
        timer = null;
        if (destroyed) return;
        var t0 = performance.now();
        var done;
        try { done = layout.step(t0 + FRAME_BUDGET_MS); } catch (err) { reject(err); return; }
        handle.layoutCpuMs += performance.now() - t0;
        if (!done) { later(slice); return; }
        handle.layoutWallMs = performance.now() - started;
        building = elementChunks();
        later(build);
      }
      // Cytoscape styles every element it is given, which is the dearest part at 2,000 nodes:
      // the elements go in in chunks, one per task, so the page keeps painting meanwhile.
      function build() {
        timer = null;
        if (destroyed) return;
        var t0 = performance.now();
        try {
          if (!cy) createCy();
          cy.add(building.shift());
        } catch (err) { reject(err); return; }
        handle.drawMs = (handle.drawMs || 0) + performance.now() - t0;
        if (building.length) { later(build); return; }
        handle.styleMs = handle.drawMs;
        t0 = performance.now();
        cy.mount(stage);
        fitToLayout();
        if (big) { levelOfDetail(); cy.on("zoom", levelOfDetail); }
        stage.classList.remove("ig-building");
        handle.mountMs = performance.now() - t0;
        handle.drawMs += handle.mountMs;
        handle.layoutMs = performance.now() - started;
        // resolve once the first frame with the whole graph has been painted
        requestAnimationFrame(function () { resolve(handle); });
      }
      later(slice);
    });

    function later(fn) {
      if (typeof MessageChannel === "function") {
        var ch = new MessageChannel();
        ch.port1.onmessage = function () { ch.port1.close(); if (timer === ch) fn(); };
        timer = ch;
        ch.port2.postMessage(0);
      } else {
        timer = setTimeout(fn, 0);
      }
    }

    var building = null;
    // Big graphs start without labels (the fitted view is too small to read them, and
    // measuring thousands of labels is the dearest part of the first paint); they come back
    // once the zoom makes them legible.
    var LABEL_ZOOM = 0.7;
    var labelsOff = big;
    function levelOfDetail() {
      var want = cy.zoom() < LABEL_ZOOM;
      if (want === labelsOff) return;
      labelsOff = want;
      cy.batch(function () {
        if (want) cy.elements().addClass("ig-nolabel");
        else cy.elements().removeClass("ig-nolabel");
      });
    }
    var CHUNK = 700;
    // A fact's caption goes above it, unless the layout put the fact below the entity it is
    // linked to: then below, away from that entity's label either way.
    function factsBelowTheirEntity() {
      var index = new Map(), below = new Set();
      cleanNodes.forEach(function (v, i) { index.set(v.id, i); });
      cleanEdges.forEach(function (e) {
        if (e.kind !== "fact") return;
        var s = index.get(e.source), t = index.get(e.target);
        if (s === undefined || t === undefined) return;
        var fact = cleanNodes[s].kind === "fact" ? s : (cleanNodes[t].kind === "fact" ? t : -1);
        var other = fact === s ? t : s;
        if (fact >= 0 && layout.y[fact] > layout.y[other] + 4) below.add(fact);
      });
      return below;
    }
    function elementChunks() {
      var elements = [], below = factsBelowTheirEntity();
      cleanNodes.forEach(function (v, i) {
        elements.push({ group: "nodes",
          classes: (v.kind === "fact" ? "ig-fact" : "ig-entity") + (below.has(i) ? " ig-caption-below" : "") +
            (labelsOff ? " ig-nolabel" : ""),
          data: { id: v.id, caption: caption(v.label, v.kind) },
          position: { x: layout.x[i], y: layout.y[i] } });
      });
      var pairs = new Map();
      cleanEdges.forEach(function (e) {
        var key = e.source < e.target ? e.source + "\u0000" + e.target : e.target + "\u0000" + e.source;
        e.pairKey = key;
        pairs.set(key, (pairs.get(key) || 0) + 1);
      });
      cleanEdges.forEach(function (e) {
        elements.push({ group: "edges",
          classes: (e.kind === "fact" ? "ig-fact-link" : "ig-relation") + (labelsOff ? " ig-nolabel" : "") +
            (pairs.get(e.pairKey) === 1 && e.source !== e.target ? " ig-single" : ""),
          data: { id: e.id, source: e.source, target: e.target, relation: e.relation } });
      });
      var chunks = [];
      for (var i = 0; i < elements.length; i += CHUNK) chunks.push(elements.slice(i, i + CHUNK));
      if (!chunks.length) chunks.push([]);
      return chunks;
    }

    // Fit the whole graph from the layout's own box: cy.fit() would measure every label first.
    function fitToLayout() {
      var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
      for (var i = 0; i < layout.n; i++) {
        minX = Math.min(minX, layout.x[i]); maxX = Math.max(maxX, layout.x[i]);
        minY = Math.min(minY, layout.y[i]); maxY = Math.max(maxY, layout.y[i]);
      }
      if (!layout.n) { minX = minY = maxX = maxY = 0; }
      var pad = 40, w = cy.width(), h = cy.height();
      var z = Math.min((w - 2 * pad) / Math.max(maxX - minX, 1),
        (h - 2 * pad) / Math.max(maxY - minY, 1), MODERATE_ZOOM);
      z = Math.max(cy.minZoom(), Math.min(cy.maxZoom(), z));
      cy.viewport({ zoom: z, pan: { x: w / 2 - (minX + maxX) / 2 * z,
        y: h / 2 - (minY + maxY) / 2 * z } });
    }

    function createCy() {
      // Cytoscape injects a <style> (".__________cytoscape_container {position: relative}")
      // unless an element of its id exists; that inline style breaks under a style-src 'self'
      // policy, and graph-stage.css already positions the stage, so a marker stands in for it.
      if (!document.getElementById(CY_STYLESHEET_ID)) {
        var marker = document.createElement("meta");
        marker.id = CY_STYLESHEET_ID;
        (document.head || document.documentElement).appendChild(marker);
      }
      stage.classList.add("ig-building");
      // built headless (styled, not drawn), mounted on the stage once complete
      cy = window.cytoscape({
        headless: true, styleEnabled: true, elements: [], style: STYLE, layout: { name: "preset" },
        minZoom: 0.02, maxZoom: 4, boxSelectionEnabled: false, autounselectify: true,
        autoungrabify: true, textureOnViewport: big, hideEdgesOnViewport: false,
        motionBlur: false, pixelRatio: "auto",
      });
      cy.on("tap", "node", function (evt) { select(evt.target.id()); });
      cy.on("tap", function (evt) { if (evt.target === cy) clear(); });
    }

    function mark(id) {
      cy.batch(function () {
        cy.elements(".ig-selected, .ig-adjacent").removeClass("ig-selected ig-adjacent");
        if (id != null) {
          var node = cy.getElementById(id);
          node.addClass("ig-selected");
          node.connectedEdges().addClass("ig-adjacent");
        }
      });
    }

    function select(id) {
      if (!cy || destroyed) return Promise.resolve(false);
      var node = cy.getElementById(String(id));
      if (node.empty() || !node.isNode()) return Promise.resolve(false);
      selected = node.id();
      mark(selected);
      cy.resize();   // the stage may have changed size since the last measure (a dialog opening)
      var z = cy.zoom();
      var target = z < MODERATE_ZOOM ? Math.min(MODERATE_ZOOM, z * maxStep) : z;
      var p = node.position();
      var pan = { x: cy.width() / 2 - p.x * target, y: cy.height() / 2 - p.y * target };
      cy.stop(true, false);
      var done = new Promise(function (resolve) {
        cy.animate({ zoom: target, pan: pan },
          { duration: 320, easing: "ease-in-out-cubic", complete: function () { resolve(true); } });
      });
      onSelect(selected);
      return done;
    }

    function clear() {
      if (!cy || destroyed) return;
      var had = selected !== null;
      selected = null;
      mark(null);
      if (had) onSelect(null);
    }

    handle.select = select;
    handle.clear = clear;
    handle.selected = function () { return selected; };
    handle.positions = function () {
      var out = {};
      if (cy) cy.nodes().forEach(function (v) { var p = v.position(); out[v.id()] = { x: p.x, y: p.y }; });
      else if (layout.done) cleanNodes.forEach(function (v, i) { out[v.id] = { x: layout.x[i], y: layout.y[i] }; });
      return out;
    };
    handle.zoom = function () { return cy ? cy.zoom() : 1; };
    handle.pan = function () { var p = cy ? cy.pan() : { x: 0, y: 0 }; return { x: p.x, y: p.y }; };
    // Diagnostics for tests and the benchmark: a node's position in stage pixels, an edge's
    // drawn midpoint in model coordinates.
    handle.renderedPosition = function (id) {
      var v = cy && cy.getElementById(String(id));
      if (!v || v.empty()) return null;
      var p = v.renderedPosition(); return { x: p.x, y: p.y };
    };
    handle.edgeMidpoint = function (id) {
      var e = cy && cy.getElementById(String(id));
      if (!e || e.empty()) return null;
      var p = e.midpoint(); return { x: p.x, y: p.y };
    };
    handle.destroy = function () {
      destroyed = true;
      if (timer !== null && typeof timer !== "object") clearTimeout(timer);
      timer = null;
      if (cy) { cy.stop(true, false); cy.destroy(); cy = null; }
      if (stage.parentNode) stage.parentNode.removeChild(stage);
      if (legendEl.parentNode) legendEl.parentNode.removeChild(legendEl);
      container.classList.remove("ig-root");
    };
    return handle;
  }

  window.InspectorGraph = { mount: mount, caption: caption };
})();
