/* Shared helpers of the inspector's pages: element building (textContent only, never
 * innerHTML with data) and same-origin JSON calls carrying the session's CSRF token. */
(function () {
  "use strict";
  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) return;
      if (name === "text") node.textContent = String(value);
      else if (name === "className") node.className = value;
      else if (name.slice(0, 2) === "on") node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  // HTML the server sanitised (api/inspector/markdown.py: rendered Markdown of stored text),
  // parsed in an inert document (no script runs, nothing loads) and moved into a fragment.
  // The only way a page inserts markup; everything else is textContent.
  function sanitisedHtml(html) {
    var doc = new DOMParser().parseFromString(String(html || ""), "text/html");
    var fragment = document.createDocumentFragment();
    while (doc.body.firstChild) fragment.appendChild(document.adoptNode(doc.body.firstChild));
    return fragment;
  }
  function request(method, url, body) {
    var options = { method: method, credentials: "same-origin",
                    headers: { "Accept": "application/json" } };
    if (method !== "GET") {
      options.headers["X-CSRF-Token"] = csrf();
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body || {});
    }
    return fetch(url, options).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        if (response.status === 401) { window.location.assign("/inspector/login"); }
        if (!response.ok) {
          var message = data && data.error ? data.error.message : ("HTTP " + response.status);
          var error = new Error(message);
          error.status = response.status;
          throw error;
        }
        return data;
      });
    });
  }
  function query(params) {
    var parts = [];
    Object.keys(params).forEach(function (k) {
      if (params[k] !== null && params[k] !== undefined && params[k] !== "") {
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(params[k]));
      }
    });
    return parts.length ? "?" + parts.join("&") : "";
  }
  function pill(text, kind) { return el("span", { className: "pill " + (kind || text), text: text }); }
  function when(iso) {
    if (!iso) return "";
    var d = new Date(iso);
    return isNaN(d) ? iso : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
  }
  function status(node, text, isError) {
    node.textContent = text || "";
    node.className = "status" + (isError ? " error" : "");
  }
  window.Inspector = { el: el, clear: clear, get: function (u) { return request("GET", u); },
                       post: function (u, b) { return request("POST", u, b); },
                       query: query, pill: pill, when: when, status: status,
                       sanitisedHtml: sanitisedHtml };
})();
