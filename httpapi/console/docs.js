// /docs: renders wimd's OpenAPI document (/openapi.json, read with the
// console's token from sessionStorage, as an Authorization header) into
// one expandable entry per operation and per schema. A small viewer of
// our own in place of Swagger UI or Redoc (over 1 MB each, and they need
// inline styles a strict Content-Security-Policy refuses).
"use strict";

const TOKEN_KEY = "wimro.token";
const $ = (id) => document.getElementById(id);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
let doc = null;

function refName(ref) { return String(ref).replace("#/components/schemas/", ""); }

// shape is a one-line summary of a schema: its type, or the schema it
// refers to as a link to its entry below.
function shape(s) {
  if (!s) return "";
  if (s.$ref) { const n = refName(s.$ref); return `<a href="#schema-${esc(n)}">${esc(n)}</a>`; }
  if (s.type === "array") return `array of ${shape(s.items)}`;
  if (s.oneOf || s.anyOf) return (s.oneOf || s.anyOf).map(shape).join(" | ");
  if (s.type === "object" && s.additionalProperties && typeof s.additionalProperties === "object") return `map of ${shape(s.additionalProperties)}`;
  let t = esc(Array.isArray(s.type) ? s.type.join("|") : s.type || "any");
  if (s.enum) t += ` (${s.enum.map(esc).join(", ")})`;
  if (s.format) t += ` <span class="note">${esc(s.format)}</span>`;
  return t;
}

function props(s) {
  if (!s || !s.properties) return "";
  const req = new Set(s.required || []);
  return `<table><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead><tbody>` +
    Object.entries(s.properties).map(([k, v]) => `<tr><td class="mono">${esc(k)}${req.has(k) ? " <span class=\"note\">required</span>" : ""}</td><td>${shape(v)}</td><td>${esc(v.description || "")}</td></tr>`).join("") +
    `</tbody></table>`;
}

function content(c) {
  if (!c) return "";
  return Object.entries(c).map(([type, m]) => `<div><span class="mono">${esc(type)}</span>: ${shape(m.schema)}</div>`).join("");
}

function response(code, r) {
  if (r.$ref) r = doc.components.responses[r.$ref.replace("#/components/responses/", "")] || {};
  return `<tr><td>${esc(code)}</td><td>${esc(r.description || "")}${content(r.content)}</td></tr>`;
}

function operation(path, method, op) {
  const params = op.parameters || [];
  return `<details class="op" data-text="${esc((method + " " + path + " " + (op.summary || "")).toLowerCase())}"><summary><span class="method m-${esc(method)}">${esc(method.toUpperCase())}</span> <span class="path">${esc(path)}</span> — ${esc(op.summary || "")}</summary><div class="body">` +
    `<p>${esc(op.description || "")}</p>` +
    (params.length ? `<h4>Parameters</h4><table><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead><tbody>` +
      params.map((p) => `<tr><td class="mono">${esc(p.name)}${p.required ? " <span class=\"note\">required</span>" : ""}</td><td>${esc(p.in)}</td><td>${shape(p.schema)}</td><td>${esc(p.description || "")}</td></tr>`).join("") + `</tbody></table>` : "") +
    (op.requestBody ? `<h4>Request body</h4>${content(op.requestBody.content)}` : "") +
    `<h4>Responses</h4><table><tbody>${Object.entries(op.responses || {}).map(([c, r]) => response(c, r)).join("")}</tbody></table></div></details>`;
}

function render() {
  $("intro").textContent = `${doc.info.title} ${doc.info.version}: ${doc.info.description} The raw document is /openapi.json (OpenAPI ${doc.openapi}).`;
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags || ["other"])[0];
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(operation(path, method, op));
    }
  }
  $("ops").innerHTML = [...byTag].map(([tag, ops]) => `<h3>${esc(tag)}</h3>${ops.join("")}`).join("");
  const schemas = (doc.components && doc.components.schemas) || {};
  $("schemas").innerHTML = Object.keys(schemas).sort().map((n) => `<details class="op" id="schema-${esc(n)}"><summary class="mono">${esc(n)}</summary><div class="body"><p>${esc(schemas[n].description || "")}</p>${shape(schemas[n].properties ? { type: "object" } : schemas[n])}${props(schemas[n])}</div></details>`).join("");
  const n = Object.values(doc.paths).reduce((k, item) => k + Object.keys(item).length, 0);
  $("status").textContent = `${n} operations, ${Object.keys(schemas).length} schemas.`;
  document.body.dataset.ready = "1";
}

async function load() {
  const h = { Accept: "application/json" };
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) h.Authorization = "Bearer " + tok;
  const a = $("alert");
  const config = await fetch("/ui/config.json", { headers: { Accept: "application/json" } }).then((r) => r.json());
  // Without a token where one is needed, say so and ask nothing.
  const resp = config.auth && !tok ? { status: 401 } : await fetch("/openapi.json", { headers: h, cache: "no-store" });
  if (resp.status === 401 || resp.status === 403) {
    a.textContent = tok ? "The API token was refused (" + resp.status + "): enter a valid one above." : "This wimd needs an API token (401 Unauthorized): enter it above.";
    a.hidden = false;
    $("status").textContent = "Not signed in.";
    return;
  }
  if (!resp.ok) { a.textContent = "Could not read /openapi.json: " + resp.status; a.hidden = false; return; }
  a.hidden = true;
  doc = await resp.json();
  render();
}

$("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = $("token").value.trim();
  if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
  $("token").value = "";
  load();
});
$("filter").addEventListener("input", () => {
  const f = $("filter").value.trim().toLowerCase();
  for (const d of document.querySelectorAll("#ops details")) d.hidden = f !== "" && !d.dataset.text.includes(f);
});
load();
