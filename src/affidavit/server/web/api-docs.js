// The interactive API page (/docs): Swagger UI on this server's own schema. A file, not an
// inline script, so that the page's Content-Security-Policy (script-src 'self') holds here too.
window.addEventListener("load", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
  });
});
