/* The Dreams page: recent runs (id, trigger, status with the failure reason, model, counts,
 * graph extraction counts, rollback state), links into the Dagster UI, the per-Dream graph
 * filter, one Dream in detail (what it accepted and rejected, and why), the persisted model
 * selector, launch and rollback. */
(function () {
  "use strict";
  var I = window.Inspector, el = I.el;
  var statusEl = document.getElementById("dreams-status");
  function n(v) { return el("td", { className: "num", text: v === null || v === undefined ? "\u2013" : String(v) }); }
  // A Dream that ran and changed nothing (a re-Dream of unchanged input) is told apart from one
  // that added knowledge: "no change" beside its status.
  function noChange(d) {
    var s = d.stats || {};
    return !d.dryRun && d.status === "completed" && s.created === 0 && !s.activated && !s.wikiProposals;
  }
  function statusCell(d) {
    return el("td", { className: "dream-status" }, [
      I.pill(d.status), d.dryRun ? " dry run" : "",
      noChange(d) ? el("span", { className: "muted no-change", text: " no change" }) : null,
      d.error ? el("div", { className: "error failure-reason", text: d.error }) : null,
      d.diagnostics && d.diagnostics.length ? el("div", { className: "muted", text: d.diagnostics.join(", ") }) : null]);
  }
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
        el("td", { text: I.when(d.startedAt).replace(" UTC", ""), title: I.when(d.startedAt) }),
        el("td", {}, [el("a", { href: "#detail-" + d.id, className: "dream-id", title: d.id, text: d.id.slice(0, 8) })]),
        el("td", {}, [el("code", { text: d.partitionKey })]),
        el("td", { className: "trigger", text: d.trigger || "" }),
        statusCell(d),
        el("td", { text: d.model || "" }),
        n(s.inputs), n(s.accepted), n(s.activated), n(s.rejected),
        el("td", { text: d.graph.entities + " / " + d.graph.claims + " / " + d.graph.edges }),
        el("td", { className: "rollback-state", text: rolled }),
        el("td", {}, [d.links.run ? el("a", { href: d.links.run, target: "_blank", rel: "noopener", text: "run" }) : null,
                      d.links.run ? " \u00b7 " : "",
                      el("a", { href: d.links.asset, target: "_blank", rel: "noopener", text: "asset" })]),
        actions]));
    });
    followHash();
  }
  function table(heads, rows, empty) {
    if (!rows.length) return el("p", { className: "muted empty", text: empty });
    return el("table", { className: "data" }, [
      el("thead", {}, [el("tr", {}, heads.map(function (h) { return el("th", { text: h }); }))]),
      el("tbody", {}, rows.map(function (cells) {
        return el("tr", {}, cells.map(function (c) { return el("td", { text: c === null || c === undefined ? "" : String(c) }); }));
      }))]);
  }
  function renderDetail(d) {
    var section = document.getElementById("dream-detail"), box = document.getElementById("dream-detail-body");
    I.clear(box);
    document.getElementById("dream-detail-title").textContent = "Dream " + d.id;
    var facts = [["Partition", d.partitionKey], ["Trigger", d.trigger], ["Status", d.status + (d.dryRun ? " (dry run)" : "")],
                 ["Model", (d.effectiveModel.model || "\u2013") + (d.effectiveModel.source ? " (" + d.effectiveModel.source + ")" : "")],
                 ["Started", I.when(d.startedAt)], ["Finished", d.finishedAt ? I.when(d.finishedAt) : "\u2013"]];
    if (d.error) facts.push(["Failure", d.error]);
    if (d.rollback.rolledBack) facts.push(["Rolled back", I.when(d.rollback.rolledBackAt) + " (" + d.rollback.reverted + " reverted, " + d.rollback.keptByPerson + " kept by a person)"]);
    box.appendChild(el("dl", { className: "facts" }, facts.reduce(function (out, f) {
      return out.concat([el("dt", { text: f[0] }), el("dd", { text: f[1], className: f[0] === "Failure" ? "error" : null })]);
    }, [])));
    if (d.privateTextWithheld) box.appendChild(el("p", { className: "muted", text: "Another user's private Dream: ids, states and reasons only." }));
    box.appendChild(el("h3", { text: "Accepted (" + d.accepted.length + ")" }));
    box.appendChild(table(["Assertion", "Type", "New", "Status", "Review", "Decision", "Reason"], d.accepted.map(function (a) {
      return [a.text || a.assertionId, a.type, a.created ? "yes" : "reused", a.status, a.reviewState, a.decision || "", a.reasonCode || ""];
    }), "Nothing accepted: this Dream added no knowledge."));
    box.appendChild(el("h3", { text: "Rejected (" + d.rejected.length + ")" }));
    box.appendChild(table(["Kind", "Item", "Reason", "Stage"], d.rejected.map(function (r) {
      var item = r.text || (r.item === null || r.item === undefined ? "" : (r.kind === "assertion" && typeof r.item === "number" ? "#" + r.item : String(r.item)));
      return [r.kind, item, r.reasonCode + (r.detail ? ": " + r.detail : ""), r.stage];
    }), "Nothing rejected."));
    box.appendChild(el("h3", { text: "Wiki drafts (" + d.wikiProposals.length + ")" }));
    box.appendChild(table(["Title", "Page", "State", "Reason"], d.wikiProposals.map(function (w) {
      return [w.title, w.slug, w.state, w.reason || ""];
    }), "No wiki draft."));
    section.hidden = false;
    section.scrollIntoView();
  }
  function showDetail(id) {
    return I.get("/inspector/api/dreams/" + encodeURIComponent(id)).then(renderDetail)
      .catch(function (err) { I.status(statusEl, err.message, true); });
  }
  function followHash() {
    var hash = window.location.hash.slice(1);
    if (hash.indexOf("detail-") === 0) { showDetail(hash.slice(7)); return; }
    if (hash) {
      var target = document.getElementById(hash);
      if (target) target.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", followHash);
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
