/* The Dreams page: recent runs (status, model, counts, graph extraction counts, rollback
 * state), links into the Dagster UI, the per-Dream graph filter, the persisted model
 * selector, launch and rollback. */
(function () {
  "use strict";
  var I = window.Inspector, el = I.el;
  var statusEl = document.getElementById("dreams-status");
  function n(v) { return el("td", { className: "num", text: v === null || v === undefined ? "\u2013" : String(v) }); }
  function render(body) {
    var tbody = document.querySelector("#dreams-table tbody");
    I.clear(tbody);
    document.getElementById("dreams-empty").hidden = body.dreams.length > 0;
    document.getElementById("model").value = body.model || "";
    var select = document.getElementById("partition");
    var chosen = select.value;
    I.clear(select);
    select.appendChild(el("option", { value: "", text: "all eligible (" + body.eligible.length + ")" }));
    body.eligible.forEach(function (p) { select.appendChild(el("option", { value: p, text: p })); });
    select.value = chosen;
    document.querySelector("#launch-form button").disabled = !body.canLaunch;
    if (!body.canLaunch) document.querySelector("#launch-form button").title = "this API process has no Dream launcher";
    body.dreams.forEach(function (d) {
      var s = d.stats || {}, rb = s.rollback;
      var rolled = d.rolledBackAt ? "rolled back " + I.when(d.rolledBackAt) +
        (rb ? " (" + rb.tombstoned + " reverted, " + rb.protected + " kept by a person)" : "") : "\u2013";
      var actions = el("td", { className: "actions" }, [
        el("a", { href: d.links.graph, text: "Graph" }), " ",
        d.rolledBackAt || d.dryRun ? null : el("button", { type: "button", className: "small danger", text: "Roll back",
          "data-rollback": d.id, onclick: function () { rollback(d); } })]);
      tbody.appendChild(el("tr", { id: "dream-" + d.id, "data-id": d.id }, [
        el("td", { text: I.when(d.startedAt) }),
        el("td", {}, [el("code", { text: d.partitionKey })]),
        el("td", {}, [I.pill(d.status), d.dryRun ? " dry run" : ""]),
        el("td", { text: d.model || "" }),
        n(s.inputs), n(s.accepted), n(s.activated), n(s.rejected),
        el("td", { text: d.graph.entities + " / " + d.graph.claims + " / " + d.graph.edges }),
        el("td", { className: "rollback-state", text: rolled }),
        el("td", {}, [d.links.run ? el("a", { href: d.links.run, target: "_blank", rel: "noopener", text: "run" }) : null,
                      d.links.run ? " \u00b7 " : "",
                      el("a", { href: d.links.asset, target: "_blank", rel: "noopener", text: "asset" })]),
        actions]));
    });
    if (window.location.hash) {
      var target = document.getElementById(window.location.hash.slice(1));
      if (target) target.scrollIntoView();
    }
  }
  function load() { return I.get("/inspector/api/dreams").then(render).catch(function (err) { I.status(statusEl, err.message, true); }); }
  function rollback(d) {
    if (!window.confirm("Roll back Dream " + d.id + "? What no person decided is reverted.")) return;
    I.status(statusEl, "Rolling back\u2026");
    I.post("/inspector/api/dreams/" + d.id + "/rollback", {}).then(function (r) {
      I.status(statusEl, "Dream " + d.id.slice(0, 8) + ": " + r.status + ", " + r.tombstoned.length +
               " reverted, " + r.protected.length + " kept by a person.");
      return load();
    }).catch(function (err) { I.status(statusEl, err.message, true); });
  }
  document.getElementById("model-form").addEventListener("submit", function (e) {
    e.preventDefault();
    I.post("/inspector/api/dreams/model", { model: document.getElementById("model").value.trim() }).then(function (r) {
      I.status(statusEl, "Dreaming model saved: " + (r.model || "automatic") + ".");
    }).catch(function (err) { I.status(statusEl, err.message, true); });
  });
  document.getElementById("launch-form").addEventListener("submit", function (e) {
    e.preventDefault();
    var partition = document.getElementById("partition").value;
    var model = document.getElementById("model").value.trim();
    var body = partition ? { partition: partition } : { allEligible: true };
    if (model) body.model = model;
    body.dryRun = document.getElementById("dry-run").checked;
    I.post("/inspector/api/dreams/launch", body).then(function (r) {
      I.status(statusEl, r.runId ? "Launched run " + r.runId + " for " + r.partitions.length + " partition(s)." : "Nothing eligible to dream.");
      return load();
    }).catch(function (err) { I.status(statusEl, err.message, true); });
  });
  load();
})();
