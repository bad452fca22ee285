// wimro console: reads wimd's JSON API with the operator's API token and
// follows the event streams of the actions in flight. No library: plain
// DOM, HTML built from escaped strings, one table body written at once
// (1,000 links render in one layout).
//
// The token is kept in sessionStorage (this tab only, gone when it
// closes) and sent only as the Authorization header to this origin: never
// in a URL, so it stays out of access logs, history and referrers.
"use strict";

const TOKEN_KEY = "wimro.token";
const TENANT_KEY = "wimro.tenant";
// REFRESH_MS is how often, at most, the open view reads the API again: the event
// streams carry an action's changes at once, but a link that monitoring
// finds DOWN after its action settled, a new instance or an account
// check come only from a new read.
const REFRESH_MS = 5000;
// MAX_STREAMS keeps event streams below the browser's six connections
// per host, so that the API's reads still get through.
const MAX_STREAMS = 4;

const $ = (id) => document.getElementById(id);
const state = {
  tenant: sessionStorage.getItem(TENANT_KEY) || "",
  tenants: [],
  dcs: new Map(),       // uuid → datacenter
  wims: new Map(),      // uuid → wim
  instances: new Map(), // uuid → instance (with nets and wan_links)
  links: new Map(),     // uuid → {link, inst}
  actions: new Map(),   // action uuid → action (with tasks)
  streams: new Map(),   // action uuid → AbortController
  owners: null,         // account uuid → member id, from the last /cluster
  moves: [],
  selected: "",
  filtered: false,      // some rows are hidden by the filter
  timelineOf: "",
  authFailed: false,
  timer: 0,
};

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function badge(s) {
  const v = s || "UNKNOWN";
  return `<span class="st st-${esc(v.replace(/[^A-Za-z_]/g, ""))}">${esc(v)}</span>`;
}
function short(id) { return id ? String(id).slice(0, 8) : ""; }
function when(t) {
  if (!t) return "—";
  const d = new Date(t);
  return isNaN(d) ? esc(t) : `<time datetime="${esc(t)}">${esc(d.toLocaleString())}</time>`;
}
// setHTML replaces el's content only when it changed: a table that
// re-renders on every event would otherwise take the keyboard focus from
// its buttons, and move them under the pointer.
function setHTML(el, html) {
  if (el.wimroHTML !== html) {
    el.innerHTML = html;
    el.wimroHTML = html;
  }
}
function say(text) { $("status").textContent = text; }
function alertMsg(text) {
  const a = $("alert");
  a.textContent = text;
  a.hidden = !text;
}

class AuthError extends Error {}

function headers() {
  const h = { Accept: "application/json" };
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (tok) h.Authorization = "Bearer " + tok;
  return h;
}

// api reads one JSON answer; 401 and 403 become the clear message the
// page shows in place of its views.
async function api(path) {
  const resp = await fetch(path, { headers: headers(), cache: "no-store" });
  if (resp.status === 401 || resp.status === 403) {
    throw new AuthError(resp.status);
  }
  const body = await resp.json().catch(() => null);
  if (!resp.ok) {
    const e = new Error((body && body.error && body.error.description) || `${resp.status} ${resp.statusText}`);
    e.status = resp.status;
    throw e;
  }
  return body;
}

function authFailed(e) {
  state.authFailed = true;
  stopStreams();
  for (const v of document.querySelectorAll("main > section")) v.hidden = true;
  const tok = sessionStorage.getItem(TOKEN_KEY);
  if (e.message === "403") {
    alertMsg("The API token was accepted but lacks the read scope (403 Forbidden): use a token with scopes=read.");
  } else if (!tok) {
    alertMsg("This wimd needs an API token (401 Unauthorized): enter it above and choose \u201cUse token\u201d.");
  } else {
    alertMsg("The API token was refused (401 Unauthorized): check it and enter it again above.");
  }
  say("Not signed in.");
  $("token").focus();
}

// pool runs fn over items, at most n at once (the browser's connections
// per host are few and event streams hold some).
async function pool(items, n, fn) {
  const out = [];
  let i = 0;
  const run = async () => { while (i < items.length) { const k = i++; out[k] = await fn(items[k]); } };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, run));
  return out;
}

const base = () => "/openmano/" + encodeURIComponent(state.tenant);

// ---- data ----

async function loadTenants() {
  state.tenants = (await api("/openmano/tenants")).tenants || [];
  if (!state.tenants.some((t) => t.uuid === state.tenant || t.name === state.tenant)) {
    state.tenant = state.tenants.length ? state.tenants[0].uuid : "";
  }
  const sel = $("tenant");
  sel.innerHTML = state.tenants.map((t) => `<option value="${esc(t.uuid)}"${t.uuid === state.tenant ? " selected" : ""}>${esc(t.name)}</option>`).join("");
}

async function loadTopology() {
  if (!state.tenant) return;
  const [dcs, wims, insts] = await Promise.all([api(base() + "/datacenters"), api(base() + "/wims"), api(base() + "/instances")]);
  state.dcs = new Map((dcs.datacenters || []).map((d) => [d.uuid, d]));
  state.wims = new Map((wims.wims || []).map((w) => [w.uuid, w]));
  const list = insts.instances || [];
  const full = await pool(list, 3, (i) => api(base() + "/instances/" + encodeURIComponent(i.uuid)).catch((e) => {
    if (e instanceof AuthError) throw e;
    return null; // deleted meanwhile
  }));
  state.instances = new Map(full.filter(Boolean).map((i) => [i.uuid, i]));
  state.links = new Map();
  for (const inst of state.instances.values()) {
    // The datacenters a link joins are those of its VLD's networks:
    // grouped once per instance, not searched per link.
    const byVLD = new Map();
    for (const n of inst.nets || inst.networks || []) {
      if (!byVLD.has(n.sce_net_id)) byVLD.set(n.sce_net_id, new Set());
      byVLD.get(n.sce_net_id).add(dcName(n.datacenter_id));
    }
    for (const l of inst.wan_links || []) {
      state.links.set(l.uuid, { link: l, inst, ends: [...(byVLD.get(l.sce_net_id) || [])].sort() });
    }
  }
}

async function loadActions() {
  const list = await pool([...state.instances.values()], 3, (inst) =>
    api(base() + "/instances/" + encodeURIComponent(inst.uuid) + "/action").then((r) => r.actions || [], (e) => {
      if (e instanceof AuthError) throw e;
      return [];
    }));
  const all = list.flat();
  const open = all.filter(inFlight);
  const detail = await pool(open, 3, (a) => api(actionPath(a)).then((r) => r.actions[0], () => a));
  const byID = new Map(detail.map((a) => [a.uuid, a]));
  state.actions = new Map(all.map((a) => [a.uuid, byID.get(a.uuid) || a]));
}

const inFlight = (a) => a.number_done + a.number_failed < a.number_tasks;
const actionPath = (a) => base() + "/instances/" + encodeURIComponent(a.instance_id) + "/action/" + encodeURIComponent(a.uuid);

// ---- event streams ----

// follow reads an action's event stream with fetch, so that the token
// travels in the Authorization header (EventSource cannot set one), and
// resumes after the last event id if the connection drops.
async function follow(a, onEvent, ctl) {
  let last = "";
  for (let tries = 0; tries < 5 && !ctl.signal.aborted; tries++) {
    try {
      const h = headers();
      h.Accept = "text/event-stream";
      if (last) h["Last-Event-ID"] = last;
      const resp = await fetch(actionPath(a) + "/events", { headers: h, signal: ctl.signal, cache: "no-store" });
      if (resp.status === 401 || resp.status === 403) throw new AuthError(resp.status);
      if (!resp.ok) return;
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const ev = { name: "message", id: "", data: "" };
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const i = line.indexOf(":");
            const k = i < 0 ? line : line.slice(0, i);
            const v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
            if (k === "event") ev.name = v;
            else if (k === "id") ev.id = v;
            else if (k === "data") ev.data += v;
          }
          if (ev.id) last = ev.id;
          if (!ev.data) continue;
          let data = null;
          try { data = JSON.parse(ev.data); } catch { continue; }
          onEvent(ev.name, data);
          if (ev.name === "done") return;
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      if (e instanceof AuthError) { authFailed(e); return; }
      await new Promise((r) => setTimeout(r, 1000 * (tries + 1)));
    }
  }
}

function startStreams() {
  for (const [id, ctl] of state.streams) {
    const a = state.actions.get(id);
    if (!a || !inFlight(a)) { ctl.abort(); state.streams.delete(id); }
  }
  for (const a of state.actions.values()) {
    if (state.streams.size >= MAX_STREAMS) break;
    if (!inFlight(a) || state.streams.has(a.uuid)) continue;
    const ctl = new AbortController();
    state.streams.set(a.uuid, ctl);
    follow(a, (name, data) => liveEvent(a, name, data), ctl).finally(() => {
      if (state.streams.get(a.uuid) === ctl) state.streams.delete(a.uuid);
    });
  }
}

function stopStreams() {
  for (const ctl of state.streams.values()) ctl.abort();
  state.streams.clear();
}

// liveEvent applies one event of a followed action to what is on screen.
function liveEvent(a, name, data) {
  if (name === "change" && data.wan_link_id && data.link_status) {
    const e = state.links.get(data.wan_link_id);
    if (e) {
      e.link.status = data.link_status;
      e.link.error_msg = data.error_msg;
      const cell = document.querySelector(`tr[data-link="${CSS.escape(data.wan_link_id)}"] td.status`);
      if (cell) cell.innerHTML = badge(data.link_status);
      if (state.selected === data.wan_link_id) showLink(data.wan_link_id, false);
    }
  }
  const act = state.actions.get(a.uuid) || a;
  const task = (act.vim_wim_actions || []).find((t) => t.task_index === data.task_index);
  if (task && (name === "change" || name === "retry")) {
    if (data.status) task.status = data.status;
    task.error_msg = data.error_msg;
    if (name === "retry") { task.attempts = data.attempt; task.run_after = data.next_try_at; }
  }
  if (name === "done") {
    act.number_done = data.number_done ?? act.number_done;
    act.number_failed = data.number_failed ?? act.number_failed;
    act.number_tasks = data.number_tasks ?? act.number_tasks;
  }
  if (currentView() === "actions") renderActions();
  if (name === "done") schedule(0);
}

// ---- views ----

function dcName(id) { const d = state.dcs.get(id); return d ? d.name : short(id); }

function linkEnds(e) { return e.ends; }

function service(l) {
  const info = l.wim_info || {};
  return info.service_type || (l.multipoint ? "ELAN" : "ELINE");
}

function qos(l) {
  const q = [];
  if (l.bandwidth) q.push(`${l.bandwidth} Mbps`);
  if (l.latency) q.push(`${l.latency} ms`);
  return q.join(", ") || "—";
}

function linkRow(e) {
  const l = e.link;
  const ends = linkEnds(e).join(" ⇄ ");
  const wim = state.wims.get(l.wim_id);
  return `<tr data-link="${esc(l.uuid)}" data-status="${esc(l.status)}" data-text="${esc((l.status + " " + ends + " " + e.inst.name + " " + (wim ? wim.name : "")).toLowerCase())}">` +
    `<td><button type="button" class="linkbtn" data-open="${esc(l.uuid)}" aria-label="Link ${esc(short(l.uuid))} details">${esc(short(l.uuid))}</button></td>` +
    `<td>${esc(e.inst.name)}</td><td>${esc(ends)}</td><td>${esc(wim ? wim.name : short(l.wim_id))}</td>` +
    `<td class="status">${badge(l.status)}</td><td>${esc(service(l))}</td><td>${esc(qos(l))}</td></tr>`;
}

// SEVERITY orders link statuses for the graph's edges: an edge takes the
// colour of its worst link.
const SEVERITY = { ERROR: 5, WIM_ERROR: 5, DOWN: 4, BUILD: 3, SCHEDULED: 3, ACTIVE: 1 };

// graph draws the datacenters on a circle and one edge per pair of
// datacenters that WAN links join through a WIM, coloured (by class: the page's CSP
// refuses inline styles) by its worst link and labelled with the counts,
// so the colour is never the only signal.
function graph(edges) {
  const dcs = [...state.dcs.values()].map((d) => d.name).sort();
  if (!dcs.length) return "";
  const W = 720, H = dcs.length > 2 ? 300 : 130, R = Math.min(W, H) / 2 - 40;
  const pos = new Map(dcs.map((n, i) => {
    if (dcs.length <= 2) return [n, [W / 2 + (i === 0 ? -1 : 1) * (dcs.length === 1 ? 0 : 220), H / 2]];
    const a = (2 * Math.PI * i) / dcs.length - Math.PI / 2;
    return [n, [W / 2 + R * 1.8 * Math.cos(a), H / 2 + R * Math.sin(a)]];
  }));
  let out = "";
  for (const [key, c] of edges) {
    const [x, y, wim] = key.split("\u0000");
    const p = pos.get(x), q = pos.get(y);
    if (!p || !q) continue;
    const worst = Object.keys(c).sort((s, t) => (SEVERITY[t] || 2) - (SEVERITY[s] || 2))[0];
    const label = Object.entries(c).map(([st, n]) => `${n} ${st}`).join(", ") + " via " + wim;
    out += `<g class="edge e-${esc(worst.replace(/[^A-Za-z_]/g, ""))}"><title>${esc(x)} to ${esc(y)}: ${esc(label)}</title>` +
      `<line x1="${p[0]}" y1="${p[1]}" x2="${q[0]}" y2="${q[1]}"></line>` +
      `<text x="${(p[0] + q[0]) / 2}" y="${(p[1] + q[1]) / 2 - 8}" text-anchor="middle">${esc(label)}</text></g>`;
  }
  for (const [n, [x, y]] of pos) {
    out += `<g class="dc"><circle cx="${x}" cy="${y}" r="26"></circle><text x="${x}" y="${y + 4}" text-anchor="middle">${esc(n)}</text></g>`;
  }
  return `<svg class="graph" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-labelledby="graph-title">` +
    `<title id="graph-title">Datacenters and the WAN links between them</title>${out}</svg>`;
}

function renderTopology() {
  const counts = {};
  const pairs = new Map();
  const edges = new Map();
  for (const e of state.links.values()) {
    counts[e.link.status] = (counts[e.link.status] || 0) + 1;
    const key = linkEnds(e).join(" ⇄ ") + " via " + ((state.wims.get(e.link.wim_id) || {}).name || "?");
    const p = pairs.get(key) || {};
    p[e.link.status] = (p[e.link.status] || 0) + 1;
    pairs.set(key, p);
    const ends = linkEnds(e);
    for (let i = 0; i < ends.length; i++) {
      for (let j = i + 1; j < ends.length; j++) {
        const k = ends[i] + "\u0000" + ends[j] + "\u0000" + ((state.wims.get(e.link.wim_id) || {}).name || "?");
        const c = edges.get(k) || {};
        c[e.link.status] = (c[e.link.status] || 0) + 1;
        edges.set(k, c);
      }
    }
  }
  const summary = (c) => Object.entries(c).map(([s, n]) => `${badge(s)} ${n}`).join(" ");
  $("map").innerHTML = graph(edges) + `<div class="nodes">` +
    [...state.dcs.values()].map((d) => `<div class="node"><h4>Datacenter ${esc(d.name)}</h4><span class="mono">${esc(d.vim_url || "")}</span></div>`).join("") +
    [...state.wims.values()].map((w) => `<div class="node wim"><h4>WIM ${esc(w.name)}</h4><span class="mono">${esc(w.type)} ${esc(w.wim_url || "")}</span></div>`).join("") +
    `<div class="node"><h4>WAN links between datacenters</h4>${[...pairs].map(([k, c]) => `<div class="pair">${esc(k)}: ${summary(c)}</div>`).join("") || "none"}</div></div>`;
  const rows = [...state.links.values()];
  setHTML($("links").tBodies[0], rows.map(linkRow).join(""));
  $("links-caption").textContent = `WAN links: ${rows.length}` + (rows.length ? " (" + Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ") + ")" : "");
  applyFilter();
  if (state.selected) showLink(state.selected, false);
}

function applyFilter() {
  const f = $("filter").value.trim().toLowerCase();
  if (f === "" && !state.filtered) return;
  state.filtered = f !== "";
  for (const tr of $("links").tBodies[0].rows) tr.hidden = f !== "" && !tr.dataset.text.includes(f);
}

async function showLink(id, focus) {
  const e = state.links.get(id);
  const box = $("link-detail");
  if (!e) { box.hidden = true; return; }
  state.selected = id;
  const l = e.link;
  const acts = await api(base() + "/instances/" + encodeURIComponent(e.inst.uuid) + "/action").then((r) => r.actions || [], () => []);
  const detail = await pool(acts, 3, (a) => api(actionPath(a)).then((r) => r.actions[0], () => a));
  const tasks = [];
  for (const a of detail) {
    for (const t of a.vim_wim_actions || []) if (t.item_id === id) tasks.push({ a, t });
  }
  $("h-link").textContent = `Link ${l.uuid}`;
  setHTML($("link-body"),
    `<p>Status ${badge(l.status)} since ${when(l.status_since)}; instance <strong>${esc(e.inst.name)}</strong> <span class="mono">${esc(e.inst.uuid)}</span>; ` +
    `datacenters ${esc(linkEnds(e).join(" ⇄ "))}; service ${esc(service(l))}; QoS ${esc(qos(l))}.</p>` +
    (l.error_msg ? `<p>Error: <span class="mono">${esc(l.error_msg)}</span></p>` : "") +
    `<h4>Actions on this link</h4><table><thead><tr><th scope="col">Action</th><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Next try</th><th scope="col">Timeline</th></tr></thead><tbody>` +
    tasks.map(({ a, t }) => `<tr><td>${esc(t.action)} <span class="mono">${esc(short(a.uuid))}</span></td><td>${esc(t.task_index)}</td><td>${badge(t.status)}</td><td>${esc(t.attempts)}</td>` +
      `<td class="err">${esc(t.error_msg || "")}</td><td>${t.status === "DONE" || t.status === "FAILED" ? "—" : when(t.run_after)}</td>` +
      `<td><button type="button" data-timeline="${esc(a.uuid)}" data-instance="${esc(a.instance_id)}">Timeline</button></td></tr>`).join("") +
    `</tbody></table><h4>The controller's last answer</h4><pre>${esc(JSON.stringify(l.wim_info, null, 2))}</pre>`);
  box.hidden = false;
  if (focus) box.focus();
}

function renderActions() {
  const rows = [];
  for (const a of state.actions.values()) {
    if (!inFlight(a)) continue;
    const inst = state.instances.get(a.instance_id);
    for (const t of a.vim_wim_actions || []) {
      if (t.status === "DONE" || t.status === "FAILED" || t.status === "SUPERSEDED") continue;
      rows.push(`<tr data-action="${esc(a.uuid)}" data-task="${esc(t.task_index)}"><td>${esc(inst ? inst.name : short(a.instance_id))}</td>` +
        `<td>${esc(t.action || a.description)} <span class="mono">${esc(short(a.uuid))}</span></td><td>${esc(t.task_index)}</td>` +
        `<td class="mono">${esc(short(t.item_id))}</td><td>${badge(t.status)}</td><td class="attempt">${esc(t.attempts)}</td>` +
        `<td class="err">${esc(t.error_msg || "")}</td><td>${when(t.run_after)}</td></tr>`);
    }
  }
  setHTML($("inflight").tBodies[0], rows.join("") || `<tr><td colspan="8">No action in flight.</td></tr>`);
  const hist = [...state.actions.values()].sort((x, y) => (y.created_at || "").localeCompare(x.created_at || "")).slice(0, 200);
  setHTML($("history").tBodies[0], hist.map((a) => {
    const inst = state.instances.get(a.instance_id);
    return `<tr><td>${esc(inst ? inst.name : short(a.instance_id))}</td><td>${esc(a.description)} <span class="mono">${esc(short(a.uuid))}</span></td>` +
      `<td>${esc(a.number_tasks)}</td><td>${esc(a.number_done)}</td><td>${esc(a.number_failed)}</td><td>${when(a.created_at)}</td>` +
      `<td><button type="button" data-timeline="${esc(a.uuid)}" data-instance="${esc(a.instance_id)}">Timeline</button></td></tr>`;
  }).join("") || `<tr><td colspan="7">No action.</td></tr>`);
}

function appendTimeline(name, d) {
  const li = document.createElement("li");
  if (name === "done") {
    li.textContent = `done: ${d.number_done} done, ${d.number_failed} failed of ${d.number_tasks}`;
  } else {
    const at = d.at ? new Date(d.at).toLocaleTimeString() : "";
    let text = `${at} task ${d.task_index} ${d.action || ""} ${name === "retry" ? "RETRY attempt " + d.attempt : d.status || ""}`;
    if (d.wan_link_id) text += ` link ${short(d.wan_link_id)} ${d.link_status || ""}`;
    if (name === "retry" && d.next_try_at) text += ` next try ${new Date(d.next_try_at).toLocaleTimeString()}`;
    if (d.error_msg) text += `: ${d.error_msg}`;
    li.textContent = text;
  }
  li.dataset.event = name;
  $("timeline-list").appendChild(li);
}

let timelineCtl = null;
function showTimeline(actionID, instanceID) {
  if (timelineCtl) timelineCtl.abort();
  timelineCtl = new AbortController();
  state.timelineOf = actionID;
  $("timeline-list").textContent = "";
  $("h-timeline").textContent = `Timeline of action ${actionID}`;
  location.hash = "actions";
  $("timeline").hidden = false;
  $("timeline").focus();
  // The stream replays every event of the action, then follows it until
  // it settles: the history and the live tail are one read.
  const a = state.actions.get(actionID) || { uuid: actionID, instance_id: instanceID };
  follow(a, appendTimeline, timelineCtl);
}

function renderAccounts(rows) {
  $("accounts").tBodies[0].innerHTML = rows.map((r) => {
    const acc = r.account;
    const owner = state.owners ? state.owners.get(acc.uuid) || "none" : "unknown (no /cluster)";
    return `<tr data-account="${esc(acc.uuid)}"><td>${esc(acc.name || "")} <span class="mono">${esc(short(acc.uuid))}</span></td><td>${esc(r.tenant.name)}</td><td>${esc(r.wim.name)}</td>` +
      `<td class="health">${badge(acc.status || "UNKNOWN")}</td><td class="err">${esc(acc.status_msg || "")}</td><td>${when(acc.checked_at)}</td><td>${esc(owner)}</td></tr>`;
  }).join("") || `<tr><td colspan="7">No account.</td></tr>`;
}

async function loadAccounts() {
  await loadCluster(false);
  const wims = (await api("/openmano/any/wims")).wims || [];
  const pairs = state.tenants.flatMap((t) => wims.map((w) => ({ tenant: t, wim: w })));
  const got = await pool(pairs, 3, (p) => api("/openmano/" + encodeURIComponent(p.tenant.uuid) + "/wims/" + encodeURIComponent(p.wim.uuid)).then(
    (r) => (r.wim && r.wim.wim_account ? { ...p, account: r.wim.wim_account } : null), (e) => {
      if (e instanceof AuthError) throw e;
      return null; // this tenant has no account on this WIM
    }));
  renderAccounts(got.filter(Boolean));
}

async function loadCluster(render) {
  let c;
  try {
    c = await api("/cluster");
  } catch (e) {
    if (e instanceof AuthError) throw e;
    state.owners = null;
    if (render) $("cluster-summary").textContent = "No cluster status: " + e.message;
    return;
  }
  const owners = new Map();
  for (const [m, accs] of Object.entries(c.assignments || {})) for (const acc of accs) owners.set(acc, m);
  if (state.owners) {
    for (const [acc, m] of owners) {
      const was = state.owners.get(acc);
      if (was && was !== m) state.moves.unshift({ at: new Date(), acc, from: was, to: m });
    }
    state.moves = state.moves.slice(0, 50);
  }
  state.owners = owners;
  if (!render) return;
  $("cluster-summary").textContent = `Coordinator ${c.coordinator}; leader ${c.leader || "none"}; this page's wimd is ${c.instance_id}; ${(c.members || []).length} member(s); ${owners.size} account(s) assigned.`;
  $("members").tBodies[0].innerHTML = (c.members || []).map((m) => {
    const accs = (c.assignments || {})[m.id] || [];
    return `<tr data-member="${esc(m.id)}"><td class="mono">${esc(m.id)}</td><td>${m.id === c.leader ? "leader" : "member"}</td><td>${m.health ? badge(m.health) : esc("no check (coordinator " + c.coordinator + ")")}</td>` +
      `<td class="mono">${esc(m.address)}</td><td>${esc(m.version || "")}</td><td>${when(m.started_at)}</td>` +
      `<td>${accs.length}: <span class="mono">${accs.map(short).map(esc).join(", ")}</span></td></tr>`;
  }).join("");
  $("moves").innerHTML = state.moves.map((mv) => `<li>${esc(mv.at.toLocaleTimeString())} account <span class="mono">${esc(short(mv.acc))}</span> moved from ${esc(mv.from)} to ${esc(mv.to)}</li>`).join("") || "<li>No move seen yet.</li>";
}

// ---- navigation and refresh ----

function currentView() {
  const v = location.hash.replace(/^#/, "");
  return ["topology", "actions", "accounts", "cluster"].includes(v) ? v : "topology";
}

// needsToken is whether this wimd wants a token (/ui/config.json), read
// once: without a token the page says so and asks nothing of the API.
let config = null;
async function needsToken() {
  if (!config) config = await fetch("/ui/config.json", { headers: { Accept: "application/json" } }).then((r) => r.json());
  return config.auth && !sessionStorage.getItem(TOKEN_KEY);
}

let running = false;
async function refresh() {
  if (running) return schedule(500);
  running = true;
  const started = performance.now();
  const view = currentView();
  try {
    if (await needsToken()) throw new AuthError(401);
    await loadTenants();
    if (view === "topology" || view === "actions") {
      await loadTopology();
      performance.mark("wimro-topology-read");
      // The links first: what an operator opened the page for.
      if (view === "topology") renderTopology();
      performance.mark("wimro-topology-shown");
      await loadActions();
      startStreams();
    }
    if (view === "actions") renderActions();
    if (view === "accounts") await loadAccounts();
    if (view === "cluster") await loadCluster(true);
    state.authFailed = false;
    alertMsg("");
    for (const v of ["topology", "actions", "accounts", "cluster"]) {
      $("view-" + v).hidden = v !== view;
      const a = $("nav-" + v);
      if (v === view) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    const n = state.streams.size;
    say(`Up to date at ${new Date().toLocaleTimeString()}; following ${n} action stream${n === 1 ? "" : "s"}.`);
    document.body.dataset.ready = "1";
  } catch (e) {
    if (e instanceof AuthError) { authFailed(e); running = false; return; }
    alertMsg("Could not read the API: " + e.message);
  } finally {
    running = false;
  }
  // A large tenant's reads take long: spend at most a tenth of the time
  // reading (the event streams still bring an action's changes at once).
  schedule(Math.max(REFRESH_MS, 10 * (performance.now() - started)));
}

function schedule(ms) {
  clearTimeout(state.timer);
  if (!state.authFailed || ms === 0) state.timer = setTimeout(refresh, ms);
}

function init() {
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = $("token").value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
    $("token").value = "";
    state.authFailed = false;
    say("Signing in…");
    schedule(0);
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    stopStreams();
    schedule(0);
  });
  $("tenant").addEventListener("change", (ev) => {
    state.tenant = ev.target.value;
    sessionStorage.setItem(TENANT_KEY, state.tenant);
    state.selected = "";
    $("link-detail").hidden = true;
    stopStreams();
    schedule(0);
  });
  $("filter").addEventListener("input", applyFilter);
  document.addEventListener("click", (ev) => {
    const t = ev.target.closest("button");
    if (!t) return;
    if (t.dataset.open) showLink(t.dataset.open, true).catch((e) => { if (e instanceof AuthError) authFailed(e); });
    if (t.dataset.timeline) showTimeline(t.dataset.timeline, t.dataset.instance);
  });
  window.addEventListener("hashchange", () => schedule(0));
  schedule(0);
}

init();
