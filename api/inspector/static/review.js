/* The review page: pending assertions, conflicts and wiki drafts with their evidence;
 * decisions with a reason; bulk decisions on the filtered list. */
(function () {
  "use strict";
  var I = window.Inspector, el = I.el;
  var kind = "assertion", items = [];
  var statusEl = document.getElementById("review-status");
  var HEADS = {
    assertion: ["Assertion", "Type", "Audience", "Origin", "Conf.", "Created", "Decision"],
    conflict: ["Assertion", "Conflicting assertion", "Audience", "Reason", "Created", "Resolution"],
    wiki_draft: ["Draft", "Rationale", "Audience", "Cited assertions", "Created", "Decision"]
  };
  function filters() {
    return { type: document.getElementById("f-type").value.trim(),
             audience: document.getElementById("f-audience").value,
             origin: document.getElementById("f-origin").value.trim() };
  }
  function reason() { return { reasonCode: document.getElementById("reason").value,
                               note: document.getElementById("note").value.trim() || null }; }
  function evidence(list) {
    return el("ul", { className: "evidence" }, (list || []).map(function (e) {
      return el("li", { text: "\u201c" + (e.excerpt || "") + "\u201d \u2014 " + (e.sourceKind || "source") +
                        (e.trustClass ? ", " + e.trustClass : "") });
    }));
  }
  function assertionCell(a) {
    if (!a) return el("td", { className: "muted", text: "(not visible)" });
    return el("td", {}, [el("div", { text: a.text }), evidence(a.evidence)]);
  }
  function act(url, body, done) {
    I.status(statusEl, "Saving\u2026");
    return I.post(url, body).then(function (result) {
      I.status(statusEl, done + ": " + result.decided.length + " decided" +
               (result.unchanged.length ? ", " + result.unchanged.length + " unchanged" : "") +
               (result.refused.length ? ", " + result.refused.length + " refused" : "") + ".");
      return load();
    }).catch(function (err) { I.status(statusEl, err.message, true); });
  }
  function button(text, cls, onclick) { return el("button", { type: "button", className: "small " + (cls || ""), text: text, onclick: onclick }); }
  function render() {
    var head = document.getElementById("queue-head"), body = document.querySelector("#queue-table tbody");
    I.clear(head); I.clear(body);
    head.appendChild(el("tr", {}, HEADS[kind].map(function (h) { return el("th", { text: h }); })));
    document.getElementById("queue-empty").hidden = items.length > 0;
    document.getElementById("bulk-label").textContent = kind === "assertion" ? items.length + " listed" : "";
    ["bulk-approve", "bulk-reject"].forEach(function (id) {
      document.getElementById(id).disabled = kind !== "assertion" || !items.length;
    });
    items.forEach(function (it) {
      var tr;
      if (kind === "assertion") {
        tr = el("tr", { "data-id": it.id }, [
          el("td", {}, [el("div", { text: it.text }), evidence(it.evidence)]),
          el("td", { text: it.assertionType }), el("td", {}, [I.pill(it.audience.kind)]),
          el("td", { text: it.origin || "" }), el("td", { className: "num", text: it.confidence.toFixed(2) }),
          el("td", { text: I.when(it.createdAt) }),
          el("td", { className: "actions" }, [
            button("Approve", "", function () { act("/inspector/api/review/assertions/" + it.id, Object.assign({ decision: "approve" }, reason()), "Approved"); }), " ",
            button("Reject", "danger", function () { act("/inspector/api/review/assertions/" + it.id, Object.assign({ decision: "reject" }, reason()), "Rejected"); })])]);
      } else if (kind === "conflict") {
        var keep = function (a) { return a ? button("Keep this", "", function () { act("/inspector/api/review/conflicts/" + it.id, { action: "keep_one", keepId: a.id }, "Resolved"); }) : null; };
        tr = el("tr", { "data-id": it.id }, [assertionCell(it.assertion), assertionCell(it.conflictingAssertion),
          el("td", {}, [I.pill(it.audience.kind)]), el("td", { text: it.reason || it.detectedBy || "" }),
          el("td", { text: I.when(it.createdAt) }),
          el("td", { className: "actions" }, [keep(it.assertion), " ",
            button("Keep both", "", function () { act("/inspector/api/review/conflicts/" + it.id, { action: "keep_both" }, "Resolved"); }), " ",
            button("Reject challenger", "danger", function () { act("/inspector/api/review/conflicts/" + it.id, { action: "reject_challenger" }, "Resolved"); })])]);
      } else {
        tr = el("tr", { "data-id": it.id }, [
          el("td", {}, [el("strong", { text: it.title || it.pageSlug }),
                        el("div", { className: "markdown wiki-body" }, [I.sanitisedHtml(it.bodyHtml)])]),
          el("td", { text: it.rationale || "" }), el("td", {}, [I.pill(it.audience.kind)]),
          el("td", {}, [el("ul", { className: "evidence" }, (it.assertions || []).map(function (a) { return el("li", { text: a.text || a.id }); }))]),
          el("td", { text: I.when(it.createdAt) }),
          el("td", { className: "actions" }, [
            button("Approve", "", function () { act("/inspector/api/review/wiki/" + it.id, { decision: "approve", reason: document.getElementById("note").value.trim() || document.getElementById("reason").value }, "Approved"); }), " ",
            button("Reject", "danger", function () { act("/inspector/api/review/wiki/" + it.id, { decision: "reject", reason: document.getElementById("note").value.trim() || document.getElementById("reason").value }, "Rejected"); })])]);
      }
      body.appendChild(tr);
    });
  }
  function load() {
    document.querySelectorAll("#queue-tabs [data-kind]").forEach(function (t) {
      t.setAttribute("aria-selected", t.dataset.kind === kind ? "true" : "false");
    });
    var f = kind === "assertion" ? filters() : { audience: filters().audience };
    return I.get("/inspector/api/review" + I.query(Object.assign({ kind: kind }, f))).then(function (body) {
      items = body.items; render();
    }).catch(function (err) { I.status(statusEl, err.message, true); });
  }
  function bulk(decision) {
    if (!items.length) return;
    var f = filters();
    var body = Object.assign({ decision: decision, ids: items.map(function (i) { return i.id; }) }, reason());
    if (f.type) body.type = f.type;
    if (f.audience) body.audience = f.audience;
    if (f.origin) body.origin = f.origin;
    if (!window.confirm((decision === "approve" ? "Approve " : "Reject ") + items.length + " listed assertion(s)?")) return;
    act("/inspector/api/review/assertions/bulk", body, decision === "approve" ? "Approved" : "Rejected");
  }
  document.querySelectorAll("#queue-tabs [data-kind]").forEach(function (t) {
    t.addEventListener("click", function () { kind = t.dataset.kind; I.status(statusEl, ""); load(); });
  });
  document.getElementById("filter-form").addEventListener("submit", function (e) { e.preventDefault(); load(); });
  document.getElementById("bulk-approve").addEventListener("click", function () { bulk("approve"); });
  document.getElementById("bulk-reject").addEventListener("click", function () { bulk("reject"); });
  load();
})();
