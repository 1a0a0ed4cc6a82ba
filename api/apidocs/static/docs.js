// Starts Swagger UI on the API's own OpenAPI document (a file, not an inline script: the
// page's Content-Security-Policy allows same-origin scripts only).
"use strict";

(function () {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: new URL(root.dataset.openapiUrl, document.baseURI).href,
    domNode: root,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // No badge from the public validator: the page talks to this origin only.
    validatorUrl: null,
    // The document is always this API's: no ?url= or ?configUrl= from a link.
    queryConfigEnabled: false,
    // A key typed into "Authorize" stays in this tab's memory, never in localStorage.
    persistAuthorization: false,
    displayRequestDuration: true,
    filter: true,
    tryItOutEnabled: false,
  });
})();
