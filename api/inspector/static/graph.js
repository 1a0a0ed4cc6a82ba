/* The graph page: the views (Personal, Team, Channel, all scopes), search, the Dream
 * filter, the tables, the interactive dialog (InspectorGraph, static/graph/) and the node
 * card beside the stage: a fixed header and one scrolling body. */
(function () {
  "use strict";
  var I = window.Inspector, el = I.el;
  var params = new URLSearchParams(window.location.search);
  var tabs = document.querySelectorAll("#view-tabs [data-view]");
  var available = Array.prototype.map.call(tabs, function (t) { return t.dataset.view; });
  var state = {
    view: available.indexOf(params.get("view")) >= 0 ? params.get("view") : available[0],
    channel: params.get("channel") || "", q: params.get("q") || "", dream: params.get("dream") || ""
  };
  var data = null, handle = null;
  var dialog = document.getElementById("graph-dialog");
  var card = document.getElementById("node-card");
  var summary = document.getElementById("graph-summary");
  document.getElementById("search").value = state.q;
  document.getElementById("dream").value = state.dream;

  function syncUrl() {
    var q = I.query({ view: state.view, channel: state.view === "channel" ? state.channel : "",
                      q: state.q, dream: state.dream });
    window.history.replaceState(null, "", window.location.pathname + q);
  }

  function showTabs() {
    tabs.forEach(function (t) {
      t.setAttribute("aria-selected", t.dataset.view === state.view ? "true" : "false");
    });
    document.getElementById("channel-picker").hidden = state.view !== "channel";
    document.getElementById("all-scopes-banner").hidden = state.view !== "all";
  }

  function loadChannels() {
    return I.get("/inspector/api/channels").then(function (body) {
      var select = document.getElementById("channel");
      I.clear(select);
      if (!body.channels.length) select.appendChild(el("option", { value: "", text: "(no channel membership)" }));
      body.channels.forEach(function (c) { select.appendChild(el("option", { value: c, text: c })); });
      if (!state.channel && body.channels.length) state.channel = body.channels[0];
      select.value = state.channel;
    });
  }

  function row(cells, nodeId) {
    var tr = el("tr", { "data-node": nodeId, tabindex: "0", title: "Show in the graph" },
                cells.map(function (c) { return c instanceof Node ? el("td", {}, [c]) : el("td", { text: c }); }));
    tr.addEventListener("click", function () { openGraph(nodeId); });
    return tr;
  }

  function num(v) { var td = el("td", { className: "num", text: v }); return td; }

  function fillTables() {
    var eb = document.querySelector("#entities-table tbody"), cb = document.querySelector("#claims-table tbody");
    I.clear(eb); I.clear(cb);
    data.entities.forEach(function (e) {
      var tr = row([e.label, e.type, I.pill(e.visibility), e.linkedRecord || ""], "entity:" + e.id);
      tr.appendChild(num(e.evidence)); eb.appendChild(tr);
    });
    data.claims.forEach(function (c) {
      var tr = row([c.text, c.predicate, I.pill(c.visibility)], "claim:" + c.id);
      tr.appendChild(num(c.confidence)); tr.appendChild(num(c.sourceRefs)); tr.appendChild(num(c.evidence));
      cb.appendChild(tr);
    });
    if (!data.entities.length) eb.appendChild(el("tr", { className: "empty" }, [el("td", { colspan: "5", className: "muted", text: "No entities in this view." })]));
    if (!data.claims.length) cb.appendChild(el("tr", { className: "empty" }, [el("td", { colspan: "6", className: "muted", text: "No claims in this view." })]));
  }

  function load() {
    showTabs(); syncUrl();
    if (state.view === "channel" && !state.channel) {
      data = { nodes: [], edges: [], entities: [], claims: [], components: { shown: 0, total: 0 } };
      fillTables(); summary.textContent = "Pick a channel you are a member of."; return Promise.resolve();
    }
    summary.textContent = "Loading\u2026";
    var url = "/inspector/api/graph" + I.query({ view: state.view, channel: state.view === "channel" ? state.channel : "",
                                                 q: state.q, dream: state.dream });
    return I.get(url).then(function (body) {
      data = body; fillTables();
      summary.textContent = body.nodes.length + " nodes, " + body.edges.length + " links, " +
        body.components.shown + " of " + body.components.total + " connected components shown" +
        (body.truncated ? " (cut to the display budget)" : "") +
        (body.dreamId ? " \u00b7 filtered to Dream " + body.dreamId : "") +
        (body.search ? " \u00b7 matching \u201c" + body.search + "\u201d" : "") + ".";
    }).catch(function (err) { summary.textContent = err.message; summary.className = "error"; });
  }

  // --- the card ---------------------------------------------------------------------------
  function section(title, children) {
    // An empty list says so instead of showing a bare heading.
    var shown = children.map(function (c) {
      return c && c.tagName === "UL" && !c.firstChild ? el("p", { className: "muted empty", text: "None." }) : c;
    });
    return el("section", {}, [el("h4", { text: title })].concat(shown));
  }
  function dl(pairs) {
    var list = el("dl");
    pairs.forEach(function (p) {
      if (p[1] === null || p[1] === undefined || p[1] === "") return;
      list.appendChild(el("dt", { text: p[0] })); list.appendChild(el("dd", { text: p[1] }));
    });
    return list;
  }
  function jump(nodeId, text) {
    if (!nodeId) return document.createTextNode(text || "");
    return el("button", { type: "button", className: "link", text: text,
                          onclick: function () { if (handle) handle.select(nodeId); showCard(nodeId); } });
  }
  function renderCard(c) {
    document.getElementById("node-card-title").textContent = c.title;
    document.getElementById("node-card-subtitle").textContent = c.subtitle;
    var body = document.getElementById("node-card-body");
    I.clear(body);
    var m = c.metadata;
    var counts = Object.keys(m.evidenceCounts || {}).map(function (k) { return k + ": " + m.evidenceCounts[k]; }).join(", ");
    body.appendChild(section("Explainer", [el("p", { text: c.explainer })]));
    body.appendChild(section("Metadata", [dl([
      ["Type", m.type], ["Aliases", (m.aliases || []).join(", ")],
      ["Linked record", m.linkedRecord ? m.linkedRecord.type + ": " + m.linkedRecord.id : ""],
      ["Subject refs", Object.keys(m.subjectRefs || {}).length ? JSON.stringify(m.subjectRefs) : ""],
      ["Visibility", m.visibility], ["Audience key", m.audienceKey],
      ["Confidence", m.confidence === null || m.confidence === undefined ? "" : String(m.confidence)],
      ["Evidence", counts || "none"], ["Updated", I.when(m.updatedAt)]])]));
    body.appendChild(section("Assertions (" + c.assertions.length + ")", [el("ul", {},
      c.assertions.map(function (a) {
        return el("li", { "data-claim": a.id }, [el("div", { text: a.text }),
          el("div", { className: "muted" }, [jump(a.subjectNodeId, a.subject), " \u2014 " + a.predicate +
            (a.object ? " \u2192 " : ""), a.object ? jump(a.objectNodeId, a.object) : null,
            " \u00b7 confidence " + a.confidence + " \u00b7 " + a.evidence + " evidence"])]);
      }))]));
    body.appendChild(section("Relationships (" + c.relationships.length + ")", [el("ul", {},
      c.relationships.map(function (r) {
        return el("li", {}, [jump(r.sourceNodeId, r.source), " \u2014 " + r.relation + " \u2192 ",
                             jump(r.targetNodeId, r.target || ""), el("span", { className: "muted", text: " (" + r.confidence + ")" })]);
      }))]));
    body.appendChild(section("Evidence (" + c.evidence.length + ")", [el("ul", {},
      c.evidence.map(function (e) {
        return el("li", { "data-evidence": e.id }, [
          el("div", {}, [I.pill(e.kind, "kind"), " ", e.assertionText || ""]),
          e.excerpt ? el("blockquote", { text: e.excerpt }) : null,
          el("div", { className: "muted" }, [
            e.assertionStatus ? "assertion " + e.assertionStatus + (e.reviewState ? " / " + e.reviewState : "") + " \u00b7 " : "",
            e.sourceLink ? el("a", { href: e.sourceLink, target: "_blank", rel: "noopener", text: "source memory" }) : null,
            e.sourceLink && e.dreamLink ? " \u00b7 " : "",
            e.dreamLink ? el("a", { href: e.dreamLink, text: "Dream " + e.dreamId.slice(0, 8) }) : null,
            " \u00b7 " + I.when(e.createdAt)])]);
      }))]));
    body.scrollTop = 0;
    card.hidden = false;
  }
  function showCard(nodeId) {
    if (!nodeId) { card.hidden = true; return; }
    var url = "/inspector/api/node" + I.query({ view: state.view, node: nodeId,
                                                channel: state.view === "channel" ? state.channel : "" });
    I.get(url).then(renderCard).catch(function (err) {
      document.getElementById("node-card-title").textContent = err.message; card.hidden = false;
    });
  }

  // --- the dialog -------------------------------------------------------------------------
  function openGraph(nodeId) {
    if (!data) return;
    if (!dialog.open) dialog.showModal();
    document.getElementById("graph-dialog-scope").textContent =
      (state.view === "all" ? "all scopes (admin)" : state.view + " view") +
      (state.dream ? " \u00b7 Dream " + state.dream : "") + " \u00b7 " + data.nodes.length + " nodes";
    var stage = document.getElementById("graph-stage");
    if (handle) { handle.destroy(); handle = null; }
    I.clear(stage);
    card.hidden = true;
    handle = window.InspectorGraph.mount(stage, { nodes: data.nodes, edges: data.edges },
                                         { onSelect: showCard });
    window.inspectorGraph = handle;      // the stage's handle (tests click at its positions)
    if (nodeId) handle.ready.then(function () { handle.select(nodeId); showCard(nodeId); });
  }
  function closeGraph() {
    if (handle) { handle.destroy(); handle = null; }
    if (dialog.open) dialog.close();
  }

  tabs.forEach(function (t) {
    t.addEventListener("click", function () {
      state.view = t.dataset.view;
      (state.view === "channel" ? loadChannels() : Promise.resolve()).then(load);
    });
  });
  document.getElementById("channel").addEventListener("change", function (e) { state.channel = e.target.value; load(); });
  document.getElementById("search-form").addEventListener("submit", function (e) {
    e.preventDefault();
    state.q = document.getElementById("search").value.trim();
    state.dream = document.getElementById("dream").value.trim();
    load();
  });
  document.getElementById("clear-filters").addEventListener("click", function () {
    state.q = ""; state.dream = "";
    document.getElementById("search").value = ""; document.getElementById("dream").value = "";
    load();
  });
  document.getElementById("open-graph").addEventListener("click", function () { openGraph(null); });
  document.getElementById("close-graph").addEventListener("click", closeGraph);
  document.getElementById("node-card-close").addEventListener("click", function () {
    card.hidden = true; if (handle) handle.clear();
  });
  dialog.addEventListener("close", function () { if (handle) { handle.destroy(); handle = null; } });
  (state.view === "channel" ? loadChannels() : Promise.resolve()).then(load);
})();
