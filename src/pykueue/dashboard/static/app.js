// pykueue dashboard: reads the Kubernetes API of this origin with a bearer token (list, then
// watch: no polling), renders the cohort tree, queues and workloads. Plain DOM, no dependencies.
// Every value from the API is inserted as text (never as HTML).
"use strict";

const TOKEN_KEY = "pykueue.dashboard.token";
const KUEUE = "kueue.x-k8s.io";
const VISIBILITY_VERSIONS = ["v1beta2", "v1beta1"]; // newest first; older Kueue serves only v1beta1

const S = {
  token: null,
  version: "v1beta2",
  store: { cq: new Map(), lq: new Map(), wl: new Map(), cohort: new Map(), ev: new Map() },
  positions: new Map(), // "ns/name" -> {cq, lq, posCQ, posLQ}
  visibility: "unknown", // "ok" | "unavailable"
  live: new Map(), // informer name -> bool (watch open)
  error: null,
  informers: [],
  watcher: null,
};

// ---- small helpers -------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "style") el.style.cssText = v; // CSSOM: allowed by the CSP, unlike a style attribute
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SUFFIX = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

function qty(v) {
  if (v === undefined || v === null) return 0;
  if (typeof v === "number") return v;
  const m = /^([+-]?[0-9]*\.?[0-9]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)$/.exec(String(v).trim());
  if (!m) return 0;
  const mult = SUFFIX[m[3]];
  return parseFloat(m[1]) * (m[2] ? 10 ** parseInt(m[2], 10) : 1) * (mult === undefined ? 1 : mult);
}

function round(x) {
  return Math.abs(x) >= 100 ? Math.round(x).toString() : String(Math.round(x * 100) / 100);
}

function fmtQty(x, resource) {
  if (/memory|storage/.test(resource || "")) {
    for (const [s, m] of [["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]]) {
      if (Math.abs(x) >= m) return round(x / m) + s;
    }
    return round(x);
  }
  if (resource === "cpu" && x > 0 && x < 1) return Math.round(x * 1000) + "m";
  return round(x);
}

function age(ts) {
  if (!ts) return "";
  const s = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 86400) return Math.floor(s / 3600) + "h" + (s < 36000 ? Math.floor((s % 3600) / 60) + "m" : "");
  return Math.floor(s / 86400) + "d";
}

function cond(obj, type) {
  return ((obj && obj.status && obj.status.conditions) || []).find((c) => c.type === type);
}
const isTrue = (obj, type) => (cond(obj, type) || {}).status === "True";
const key = (o) => (o.metadata.namespace ? o.metadata.namespace + "/" : "") + o.metadata.name;

function wlState(wl) {
  const fin = cond(wl, "Finished");
  if (fin && fin.status === "True") return { label: fin.reason === "Failed" ? "Failed" : "Finished", cls: fin.reason === "Failed" ? "bad" : "done" };
  if (wl.spec && wl.spec.active === false) return { label: "Deactivated", cls: "bad" };
  const ev = cond(wl, "Evicted");
  if (ev && ev.status === "True" && isTrue(wl, "QuotaReserved")) return { label: ev.reason === "Preempted" ? "Preempted" : "Evicting", cls: "warn" };
  if (isTrue(wl, "Admitted")) return { label: "Admitted", cls: "ok" };
  if (isTrue(wl, "QuotaReserved")) return { label: "QuotaReserved", cls: "info" };
  if (isTrue(wl, "Evicted")) return { label: "Evicted", cls: "warn" };
  return { label: "Pending", cls: "pending" };
}
const isPending = (wl) => wlState(wl).label === "Pending";

// ---- API access ----------------------------------------------------------------------------

class APIError extends Error {
  constructor(code, message) { super(message); this.code = code; }
}

function headers() {
  const hd = { Accept: "application/json" };
  if (S.token) hd.Authorization = "Bearer " + S.token;
  return hd;
}

async function apiGet(path, signal) {
  let res;
  try {
    res = await fetch(path, { headers: headers(), signal, cache: "no-store", credentials: "omit" });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new APIError(0, "cannot reach the server");
  }
  if (!res.ok) throw await statusError(res);
  return res.json();
}

async function statusError(res) {
  let message = res.status + " " + res.statusText;
  try {
    const st = await res.json();
    if (st && st.message) message = st.message;
  } catch (e) { /* not a Status */ }
  if (res.status === 401) needLogin("The token was not accepted (401 Unauthorized).");
  return new APIError(res.status, message);
}

// Informers: each kind is listed, then all are watched from their lists' resourceVersions on ONE
// request (/dashboard/watch, see dashboard/mux.py): a browser opens at most six connections to a
// host, so a watch per kind would starve other requests and other tabs. When a watch ends the
// stream is opened again from the last versions seen; on 410 Gone that kind is listed again
// (client-go's reflector).
class Informer {
  constructor(name, path, map, optional) {
    this.name = name; this.path = path; this.map = map; this.optional = optional;
    this.rv = ""; this.gone = false; this.state = "new";
  }
  async list() {
    this.state = "listing";
    try {
      const list = await apiGet(this.path);
      this.map.clear();
      for (const o of list.items || []) this.map.set(key(o), o);
      this.rv = list.metadata.resourceVersion || "";
      this.state = "listed";
      changed(this.name);
    } catch (e) {
      // An optional kind this server does not serve, or this user may not read, is left out.
      if ((e.code === 404 || e.code === 403) && this.optional) { this.gone = true; this.state = "not served"; S.live.delete(this.name); return; }
      throw e;
    }
  }
  event(ev) {
    const o = ev.object || {};
    if (ev.type === "ERROR") {
      if (o.code === 410) { this.rv = ""; throw new Restart(this.name + ": resourceVersion expired, listing again"); }
      throw new APIError(o.code || 500, o.message || "watch error");
    }
    if (o.metadata && o.metadata.resourceVersion) this.rv = o.metadata.resourceVersion;
    if (ev.type === "BOOKMARK") return;
    if (ev.type === "DELETED") this.map.delete(key(o));
    else this.map.set(key(o), o);
    changed(this.name);
  }
}

class Restart extends Error {}

class Watcher {
  constructor(informers) { this.informers = informers; this.ctrl = null; this.stopped = false; }
  stop() { this.stopped = true; if (this.ctrl) this.ctrl.abort(); }
  setLive(on) {
    for (const inf of this.informers) if (!inf.gone) S.live.set(inf.name, on);
    schedule();
  }
  async run() {
    let backoff = 500;
    while (!this.stopped) {
      try {
        for (const inf of this.informers) if (!inf.gone && !inf.rv) await inf.list();
        await this.stream();
        backoff = 500;
      } catch (e) {
        if (this.stopped) return;
        this.setLive(false);
        if (e.code === 401) return;
        if (e instanceof Restart) continue;
        S.error = e.message;
        schedule();
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 10000);
      }
    }
  }
  async stream() {
    const active = this.informers.filter((i) => !i.gone);
    const byName = new Map(active.map((i) => [i.name, i]));
    const qs = active.map((i) => "w=" + encodeURIComponent(i.name + ":" + i.rv + ":" + i.path)).join("&");
    this.ctrl = new AbortController();
    let res;
    try {
      res = await fetch("/dashboard/watch?" + qs, { headers: headers(), signal: this.ctrl.signal, cache: "no-store", credentials: "omit" });
    } catch (e) {
      throw new APIError(0, "watch interrupted; reconnecting");
    }
    if (!res.ok) throw await statusError(res);
    for (const i of active) i.state = "watching";
    this.setLive(true);
    if (S.error) { S.error = null; schedule(); }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        let chunk;
        try { chunk = await reader.read(); } catch (e) { throw new APIError(0, "watch interrupted; reconnecting"); }
        if (chunk.done) throw new Restart("stream ended");
        buf += dec.decode(chunk.value, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          const msg = JSON.parse(line);
          const inf = byName.get(msg.s);
          if (!inf) continue;
          if (msg.e) inf.event(msg.e);
          else if (msg.end) throw new Restart(inf.name + " ended");
          else if (msg.status) {
            const st = msg.status;
            if ((st.code === 404 || st.code === 403) && inf.optional) { inf.gone = true; S.live.delete(inf.name); throw new Restart(inf.name + " not served"); }
            if (st.code === 410) { inf.rv = ""; throw new Restart(inf.name + " expired"); }
            throw new APIError(st.code || 500, st.message || "watch refused");
          }
        }
      }
    } finally {
      this.ctrl.abort();
    }
  }
}

function changed(name) {
  if (name === "workloads" || name === "clusterqueues" || name === "localqueues") refreshPositionsSoon();
  if (name === "events" && S.store.ev.size > 3000) {
    const sorted = [...S.store.ev.entries()].sort((a, b) => evTime(a[1]) < evTime(b[1]) ? -1 : 1);
    for (const [k] of sorted.slice(0, S.store.ev.size - 2000)) S.store.ev.delete(k);
  }
  schedule();
}

// Positions come from the visibility API, asked again whenever a workload or ClusterQueue changed.
let posTimer = null;
let posRunning = false;
function refreshPositionsSoon() {
  if (posTimer) return;
  posTimer = setTimeout(async () => {
    posTimer = null;
    if (posRunning) { refreshPositionsSoon(); return; }
    posRunning = true;
    try { await refreshPositions(); } finally { posRunning = false; }
  }, 150);
}

// The visibility API in the first version the server serves (remembered once one answers).
async function visibilityGet(path) {
  const versions = S.visibilityVersion ? [S.visibilityVersion] : VISIBILITY_VERSIONS;
  let last;
  for (const v of versions) {
    try {
      const out = await apiGet("/apis/visibility.kueue.x-k8s.io/" + v + path);
      S.visibilityVersion = v;
      return out;
    } catch (e) {
      last = e;
      const unserved = e.code === 404 && /the server could not find the requested resource/.test(e.message);
      if (!unserved || S.visibilityVersion) throw e;
    }
  }
  throw last;
}

async function refreshPositions() {
  if (S.visibility === "unavailable") return;
  const next = new Map();
  // Only ClusterQueues that may have pending workloads: those a pending workload's LocalQueue
  // points at, and those whose status counts some.
  const names = new Set();
  for (const cq of S.store.cq.values()) if ((cq.status || {}).pendingWorkloads > 0) names.add(cq.metadata.name);
  for (const wl of S.store.wl.values()) {
    if (!isPending(wl)) continue;
    const lq = S.store.lq.get(wl.metadata.namespace + "/" + ((wl.spec && wl.spec.queueName) || ""));
    if (lq && lq.spec && lq.spec.clusterQueue) names.add(lq.spec.clusterQueue);
  }
  for (const name of [...names].sort()) {
    if (!S.store.cq.has(name)) continue;
    try {
      const path = "/clusterqueues/" + encodeURIComponent(name) + "/pendingworkloads";
      const sum = await visibilityGet(path);
      for (const it of sum.items || []) {
        next.set(it.metadata.namespace + "/" + it.metadata.name,
          { cq: name, lq: it.localQueueName, posCQ: it.positionInClusterQueue, posLQ: it.positionInLocalQueue });
      }
      S.visibility = "ok";
    } catch (e) {
      if (e.code === 404 && /the server could not find the requested resource/.test(e.message)) {
        S.visibility = "unavailable";
        break;
      }
      if (e.code === 403) { S.visibility = "unavailable"; break; } // this user may not read it
    }
  }
  S.positions = next;
  schedule();
}

// ---- rendering -----------------------------------------------------------------------------

let renderQueued = false;
function schedule() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => { renderQueued = false; render(); });
}

function render() {
  const main = document.getElementById("main");
  let view;
  try {
    view = route();
  } catch (e) {
    view = h("div", { class: "banner bad" }, "This view could not be drawn: " + (e && e.message ? e.message : String(e)));
  }
  main.replaceChildren(...[S.error ? h("div", { class: "banner warn" }, S.error) : null, view].filter(Boolean));
  renderTopbar();
}

function renderTopbar() {
  const conn = document.getElementById("conn");
  const states = [...S.live.values()];
  const live = states.length > 0 && states.every(Boolean);
  conn.textContent = live ? "live" : states.length ? "reconnecting…" : "connecting…";
  conn.className = "conn " + (live ? "conn-on" : "conn-off");
  const wls = [...S.store.wl.values()];
  const pending = wls.filter(isPending).length;
  const admitted = wls.filter((w) => isTrue(w, "Admitted") && !isTrue(w, "Finished")).length;
  document.getElementById("summary").replaceChildren(
    h("span", {}, h("b", {}, S.store.cq.size), " ClusterQueues"),
    h("span", {}, h("b", {}, admitted), " admitted"),
    h("span", {}, h("b", {}, pending), " pending"),
  );
  document.getElementById("logout").hidden = !S.token;
}

function route() {
  const m = /^#\/workload\/([^/]+)\/([^/]+)$/.exec(location.hash);
  if (m) return workloadPage(decodeURIComponent(m[1]), decodeURIComponent(m[2]));
  return overview();
}

// -- overview --

function overview() {
  S.lent = lentEstimates();
  return h("div", { class: "grid" },
    h("section", { class: "col-main" },
      h("h2", {}, "Cohorts and ClusterQueues"),
      cohortTree()),
    h("section", { class: "col-side" },
      h("h2", {}, "Pending workloads"), pendingTable(),
      h("h2", {}, "LocalQueues"), localQueueTable(),
      h("h2", {}, "Recent workloads"), workloadTable()));
}

function cohortOf(cq) { return (cq.spec && (cq.spec.cohortName || cq.spec.cohort)) || ""; }
function parentOf(co) { return (co.spec && (co.spec.parentName || co.spec.parent)) || ""; }

function cohortTree() {
  const cqs = [...S.store.cq.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  if (!cqs.length) return h("div", { class: "empty" }, "No ClusterQueues yet. Create one with kubectl apply.");
  const names = new Set(S.store.cohort.keys());
  for (const cq of cqs) if (cohortOf(cq)) names.add(cohortOf(cq));
  const children = new Map(); // cohort -> child cohort names
  const roots = [];
  for (const n of [...names].sort()) {
    const co = S.store.cohort.get(n);
    const p = co ? parentOf(co) : "";
    if (p) { if (!children.has(p)) children.set(p, []); children.get(p).push(n); if (!names.has(p)) { names.add(p); roots.push(p); } }
    else roots.push(n);
  }
  const out = [...new Set(roots)].map((n) => cohortNode(n, children, cqs, 0));
  const lone = cqs.filter((cq) => !cohortOf(cq));
  if (lone.length) out.push(h("div", { class: "cohort standalone" }, h("div", { class: "cohort-head" }, h("span", { class: "muted" }, "Without a cohort")), lone.map(cqCard)));
  return out;
}

function cohortNode(name, children, cqs, depth) {
  const mine = cqs.filter((cq) => cohortOf(cq) === name);
  const subs = (children.get(name) || []).map((c) => cohortNode(c, children, cqs, depth + 1));
  const totals = cohortTotals(name, children, cqs);
  return h("div", { class: "cohort" },
    h("div", { class: "cohort-head" },
      h("span", { class: "tag cohort-tag" }, "cohort"), h("b", {}, name),
      h("span", { class: "muted" }, " · " + mine.length + " ClusterQueue" + (mine.length === 1 ? "" : "s")),
      h("span", { class: "cohort-sum" }, totals)),
    subs, mine.map(cqCard));
}

function cohortTotals(name, children, cqs) {
  const all = [];
  const walk = (n) => { for (const cq of cqs) if (cohortOf(cq) === n) all.push(cq); for (const c of children.get(n) || []) walk(c); };
  walk(name);
  const sum = new Map();
  for (const cq of all) {
    for (const r of quotaRows(cq)) {
      const k = r.flavor + "\u0000" + r.resource;
      const t = sum.get(k) || { flavor: r.flavor, resource: r.resource, nominal: 0, used: 0, borrowed: 0 };
      t.nominal += r.nominal; t.used += r.used; t.borrowed += Math.max(r.borrowed, r.used - r.nominal, 0); sum.set(k, t);
    }
  }
  return [...sum.values()].map((t) => h("span", { class: "chip" + (t.borrowed > 0 ? " borrowed-soft" : ""), title: t.flavor + ": used / nominal quota of the cohort" + (t.borrowed > 0 ? ", " + fmtQty(t.borrowed, t.resource) + " of it borrowed" : "") },
    t.resource + " " + fmtQty(t.used, t.resource) + " / " + fmtQty(t.nominal, t.resource)));
}

function usageOf(cq) {
  const used = new Map();
  for (const fu of (cq.status && cq.status.flavorsReservation) || []) {
    for (const r of fu.resources || []) used.set(fu.name + "\u0000" + r.name, { total: qty(r.total), borrowed: qty(r.borrowed) });
  }
  return used;
}

function quotaRows(cq) {
  const used = usageOf(cq);
  const rows = [];
  for (const rg of (cq.spec && cq.spec.resourceGroups) || []) {
    for (const fl of rg.flavors || []) {
      for (const r of fl.resources || []) {
        const u = used.get(fl.name + "\u0000" + r.name) || { total: 0, borrowed: 0 };
        rows.push({
          flavor: fl.name, resource: r.name, nominal: qty(r.nominalQuota), used: u.total, borrowed: u.borrowed,
          borrowingLimit: r.borrowingLimit === undefined ? null : qty(r.borrowingLimit),
          lendingLimit: r.lendingLimit === undefined ? null : qty(r.lendingLimit),
        });
      }
    }
  }
  return rows;
}

// What each ClusterQueue lends: the borrowing inside its cohort tree, spread over the members'
// idle lendable quota in proportion to it (exact when one member lends; an estimate otherwise,
// as the API does not record who lent to whom).
function lentEstimates() {
  const cqs = [...S.store.cq.values()];
  const root = (name) => {
    const seen = new Set();
    let n = name;
    for (;;) {
      const co = S.store.cohort.get(n);
      const p = co ? parentOf(co) : "";
      if (!p || seen.has(p)) return n;
      seen.add(n); n = p;
    }
  };
  const groups = new Map(); // root cohort + flavor + resource -> {borrowed, lenders: [[cq, idle]]}
  for (const cq of cqs) {
    if (!cohortOf(cq)) continue;
    for (const r of quotaRows(cq)) {
      const k = root(cohortOf(cq)) + "\u0000" + r.flavor + "\u0000" + r.resource;
      const g = groups.get(k) || { borrowed: 0, lenders: [] };
      g.borrowed += Math.max(r.borrowed, r.used - r.nominal, 0);
      const lendable = r.lendingLimit === null ? r.nominal : Math.min(r.lendingLimit, r.nominal);
      const idle = Math.max(0, Math.min(lendable, r.nominal - r.used));
      if (idle > 0) g.lenders.push([cq.metadata.name + "\u0000" + r.flavor + "\u0000" + r.resource, idle]);
      groups.set(k, g);
    }
  }
  const lent = new Map();
  for (const g of groups.values()) {
    const idle = g.lenders.reduce((a, [, i]) => a + i, 0);
    if (!idle || !g.borrowed) continue;
    for (const [k, i] of g.lenders) lent.set(k, Math.min(i, g.borrowed * i / idle));
  }
  return lent;
}

function cqCard(cq) {
  const st = cq.status || {};
  const active = cond(cq, "Active");
  const stop = cq.spec && cq.spec.stopPolicy && cq.spec.stopPolicy !== "None" ? cq.spec.stopPolicy : null;
  const rows = quotaRows(cq);
  const hasCohort = !!cohortOf(cq);
  const lent = S.lent || new Map();
  for (const r of rows) r.lent = lent.get(cq.metadata.name + "\u0000" + r.flavor + "\u0000" + r.resource) || 0;
  return h("div", { class: "card cq", "data-cq": cq.metadata.name },
    h("div", { class: "cq-head" },
      h("span", { class: "cq-name" }, cq.metadata.name),
      active && active.status !== "True" ? h("span", { class: "state bad", title: active.message || "" }, active.reason || "Inactive") : null,
      stop ? h("span", { class: "state warn" }, stop) : null,
      h("span", { class: "spacer" }),
      h("span", { class: "counts" },
        h("span", { class: "count ok" }, h("b", {}, st.admittedWorkloads || 0), " admitted"),
        h("span", { class: "count info" }, h("b", {}, Math.max(0, (st.reservingWorkloads || 0) - (st.admittedWorkloads || 0))), " reserving"),
        h("span", { class: "count pending" }, h("b", {}, st.pendingWorkloads || 0), " pending"))),
    rows.length ? h("table", { class: "quota" },
      h("tbody", {}, rows.map((r) => quotaRow(r, hasCohort)))) : h("div", { class: "muted" }, "No resource groups."));
}

function quotaRow(r, hasCohort) {
  let scale = Math.max(r.nominal, r.used);
  if (r.borrowingLimit !== null && hasCohort) scale = Math.max(scale, r.nominal + r.borrowingLimit);
  if (scale <= 0) scale = 1;
  const within = Math.min(r.used, r.nominal);
  const borrowed = Math.max(r.borrowed, r.used - r.nominal, 0);
  const pct = (x) => (100 * x / scale).toFixed(2) + "%";
  const full = r.nominal > 0 && r.used >= r.nominal;
  const bar = h("div", { class: "bar", title: `${r.flavor} ${r.resource}: ${fmtQty(r.used, r.resource)} used of ${fmtQty(r.nominal, r.resource)} nominal` },
    h("div", { class: "seg used" + (full ? " full" : ""), style: `width:${pct(within)}` }),
    r.lent > 0 ? h("div", { class: "seg lent", style: `left:${pct(r.used)};width:${pct(r.lent)}`, title: "lent to the cohort" }) : null,
    borrowed > 0 ? h("div", { class: "seg borrowed", style: `left:${pct(r.nominal)};width:${pct(borrowed)}` }) : null,
    r.nominal < scale ? h("div", { class: "mark nominal", style: `left:${pct(r.nominal)}`, title: "nominal quota" }) : null,
    r.lendingLimit !== null && r.lendingLimit < r.nominal ? h("div", { class: "mark lend", style: `left:${pct(r.nominal - r.lendingLimit)}`, title: "lending limit: quota above this line may be lent" }) : null);
  const chips = [];
  if (borrowed > 0) chips.push(h("span", { class: "chip borrowed" }, "+" + fmtQty(borrowed, r.resource) + " borrowed"));
  if (hasCohort && r.borrowingLimit !== null) chips.push(h("span", { class: "chip" }, "borrow ≤ " + fmtQty(r.borrowingLimit, r.resource)));
  if (r.lent > 0) chips.push(h("span", { class: "chip lent", title: "in use by other ClusterQueues of the cohort" }, fmtQty(r.lent, r.resource) + " lent"));
  if (hasCohort) {
    const lendable = r.lendingLimit === null ? r.nominal : Math.min(r.lendingLimit, r.nominal);
    const idle = Math.max(0, Math.min(lendable, r.nominal - r.used) - r.lent);
    if (idle > 0 || r.lendingLimit !== null) {
      chips.push(h("span", { class: "chip lend", title: "unused quota the cohort may still borrow" },
        fmtQty(idle, r.resource) + " lendable" + (r.lendingLimit !== null ? " (limit " + fmtQty(r.lendingLimit, r.resource) + ")" : "")));
    }
  }
  return h("tr", {},
    h("td", { class: "res" }, h("span", { class: "flavor" }, r.flavor), h("span", { class: "resname" }, r.resource)),
    h("td", { class: "barcell" }, bar),
    h("td", { class: "num" }, h("b", { class: borrowed > 0 ? "txt-borrowed" : "" }, fmtQty(r.used, r.resource)), " / " + fmtQty(r.nominal, r.resource)),
    h("td", { class: "chips" }, chips));
}

function wlLink(ns, name, text) {
  return h("a", { href: "#/workload/" + encodeURIComponent(ns) + "/" + encodeURIComponent(name), class: "wl" }, text || name);
}

function pendingTable() {
  const rows = [...S.store.wl.values()].filter(isPending).map((wl) => ({ wl, pos: S.positions.get(key(wl)) }));
  if (!rows.length) return h("div", { class: "empty" }, "Nothing is pending.");
  rows.sort((a, b) => {
    const ca = a.pos ? a.pos.cq : "~", cb = b.pos ? b.pos.cq : "~";
    if (ca !== cb) return ca.localeCompare(cb);
    const pa = a.pos ? a.pos.posCQ : 1e9, pb = b.pos ? b.pos.posCQ : 1e9;
    return pa - pb || key(a.wl).localeCompare(key(b.wl));
  });
  return h("table", { class: "list", id: "pending" },
    h("thead", {}, h("tr", {}, h("th", { title: "place in line in the ClusterQueue (1 = next), and in the LocalQueue (visibility API)" }, "#"), h("th", {}, "Workload"), h("th", {}, "Queue"), h("th", {}, "Why pending"))),
    h("tbody", {}, rows.map(({ wl, pos }) => {
      const qr = cond(wl, "QuotaReserved");
      return h("tr", { "data-workload": key(wl) },
        h("td", { class: "pos" }, pos ? h("span", { class: "position", title: "positionInClusterQueue " + pos.posCQ + " (0 = next) in " + pos.cq }, String(pos.posCQ + 1)) : h("span", { class: "muted", title: S.visibility === "unavailable" ? "the visibility API is not served" : "not queued (yet)" }, "–"),
          pos ? h("div", { class: "muted small", title: "positionInLocalQueue " + pos.posLQ + " (0 = next) in " + pos.lq }, "LQ " + (pos.posLQ + 1)) : null),
        h("td", {}, wlLink(wl.metadata.namespace, wl.metadata.name), h("div", { class: "muted small" }, wl.metadata.namespace + " · prio " + ((wl.spec && wl.spec.priority) || 0) + " · waiting " + age(wl.metadata.creationTimestamp))),
        h("td", { class: "nowrap" }, (wl.spec && wl.spec.queueName) || "", pos ? h("div", { class: "muted small" }, pos.cq) : null),
        h("td", { class: "why" }, qr ? [h("span", { class: "reason" }, qr.reason || ""), " ", h("span", { class: "msg" }, qr.message || "")] : h("span", { class: "muted" }, "not yet considered")));
    })));
}

function localQueueTable() {
  const lqs = [...S.store.lq.values()].sort((a, b) => key(a).localeCompare(key(b)));
  if (!lqs.length) return h("div", { class: "empty" }, "No LocalQueues.");
  return h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "LocalQueue"), h("th", {}, "ClusterQueue"), h("th", { class: "num" }, "Pending"), h("th", { class: "num" }, "Reserving"), h("th", { class: "num" }, "Admitted"))),
    h("tbody", {}, lqs.map((lq) => {
      const st = lq.status || {};
      const active = cond(lq, "Active");
      return h("tr", {},
        h("td", {}, lq.metadata.name, h("div", { class: "muted small" }, lq.metadata.namespace),
          active && active.status !== "True" ? h("span", { class: "state bad", title: active.message || "" }, active.reason || "Inactive") : null),
        h("td", {}, (lq.spec && lq.spec.clusterQueue) || ""),
        h("td", { class: "num" }, st.pendingWorkloads || 0),
        h("td", { class: "num" }, st.reservingWorkloads || 0),
        h("td", { class: "num" }, st.admittedWorkloads || 0));
    })));
}

function workloadTable() {
  const wls = [...S.store.wl.values()].filter((w) => !isPending(w))
    .sort((a, b) => (b.metadata.creationTimestamp || "").localeCompare(a.metadata.creationTimestamp || "") || key(a).localeCompare(key(b)))
    .slice(0, 50);
  if (!wls.length) return h("div", { class: "empty" }, "No admitted or finished workloads.");
  return h("table", { class: "list", id: "workloads" },
    h("thead", {}, h("tr", {}, h("th", {}, "Workload"), h("th", {}, "State"), h("th", {}, "ClusterQueue"), h("th", { class: "num" }, "Age"))),
    h("tbody", {}, wls.map((wl) => {
      const s = wlState(wl);
      const adm = wl.status && wl.status.admission;
      return h("tr", { "data-workload": key(wl) },
        h("td", {}, wlLink(wl.metadata.namespace, wl.metadata.name), h("div", { class: "muted small" }, wl.metadata.namespace)),
        h("td", {}, h("span", { class: "state " + s.cls }, s.label)),
        h("td", {}, adm ? adm.clusterQueue : ""),
        h("td", { class: "num" }, age(wl.metadata.creationTimestamp)));
    })));
}

// -- workload page --

// An events.k8s.io/v1 Event (Kueue's) keeps its repeats in series, a core/v1 one in count and
// lastTimestamp: both as kubectl describe reads them.
function evTime(e) { return (e.series && e.series.lastObservedTime) || e.lastTimestamp || e.eventTime || e.firstTimestamp || (e.metadata && e.metadata.creationTimestamp) || ""; }
function evCount(e) { return (e.series && e.series.count) || e.count || 1; }

const UID_RE = /UID: ([0-9a-fA-F-]{8,})/;

function byUID(uid) {
  for (const w of S.store.wl.values()) if (w.metadata.uid === uid) return w;
  return null;
}

function workloadPage(ns, name) {
  const wl = S.store.wl.get(ns + "/" + name);
  const back = h("a", { href: "#/", class: "back" }, "← overview");
  if (!wl) return h("div", {}, back, h("div", { class: "empty" }, "Workload " + ns + "/" + name + " does not exist (or not yet)."));
  const s = wlState(wl);
  const spec = wl.spec || {};
  const st = wl.status || {};
  const pos = S.positions.get(ns + "/" + name);
  const owner = (wl.metadata.ownerReferences || [])[0];
  const qr = cond(wl, "QuotaReserved");
  const evs = [...S.store.ev.values()].filter((e) => {
    const io = e.involvedObject || {};
    if (io.namespace !== ns) return false;
    if (io.kind === "Workload" && io.name === name) return true;
    return owner && io.kind === owner.kind && io.name === owner.name;
  }).sort((a, b) => evTime(b).localeCompare(evTime(a)));
  return h("div", { class: "page" }, back,
    h("div", { class: "page-head" },
      h("h1", {}, name), h("span", { class: "state big " + s.cls }, s.label),
      h("span", { class: "muted" }, "namespace " + ns)),
    h("div", { class: "facts card" },
      fact("LocalQueue", spec.queueName || "—"),
      fact("ClusterQueue", (st.admission && st.admission.clusterQueue) || (pos && pos.cq) || "—"),
      fact("Priority", String(spec.priority || 0) + (spec.priorityClassName ? " (" + spec.priorityClassName + ")" : "")),
      fact("Position (1 = next)", pos ? (pos.posCQ + 1) + " in ClusterQueue, " + (pos.posLQ + 1) + " in LocalQueue" : "—"),
      fact("Owner", owner ? owner.kind + " " + owner.name : "—"),
      fact("Created", h("span", { title: wl.metadata.creationTimestamp || "" }, age(wl.metadata.creationTimestamp) + " ago"))),
    s.label === "Pending" && qr ? h("div", { class: "banner pending-why" }, h("b", {}, "Why pending: "), qr.reason + " — " + (qr.message || "")) : null,
    h("h2", {}, "Admission"), admissionTable(wl),
    h("h2", {}, "Pod sets"), podSetTable(wl),
    h("h2", {}, "Preemptions"), preemptions(wl),
    h("h2", {}, "Conditions"), conditionTable(wl),
    h("h2", {}, "Events"), eventTable(evs));
}

function fact(label, value) {
  return h("div", { class: "fact" }, h("div", { class: "muted small" }, label), h("div", {}, value));
}

function admissionTable(wl) {
  const adm = wl.status && wl.status.admission;
  if (!adm) return h("div", { class: "empty" }, "Not admitted.");
  return h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "Pod set"), h("th", { class: "num" }, "Count"), h("th", {}, "Flavors"), h("th", {}, "Resource usage"))),
    h("tbody", {}, (adm.podSetAssignments || []).map((a) => h("tr", {},
      h("td", {}, a.name), h("td", { class: "num" }, a.count === undefined ? "" : a.count),
      h("td", {}, Object.entries(a.flavors || {}).map(([r, f]) => h("span", { class: "chip" }, r + ": " + f))),
      h("td", {}, Object.entries(a.resourceUsage || {}).map(([r, q]) => h("span", { class: "chip" }, r + " " + fmtQty(qty(q), r))))))));
}

function podSetTable(wl) {
  const sets = (wl.spec && wl.spec.podSets) || [];
  return h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "Pod set"), h("th", { class: "num" }, "Count"), h("th", {}, "Requests per pod"))),
    h("tbody", {}, sets.map((ps) => {
      const req = new Map();
      for (const c of (ps.template && ps.template.spec && ps.template.spec.containers) || []) {
        for (const [r, q] of Object.entries((c.resources && c.resources.requests) || {})) req.set(r, (req.get(r) || 0) + qty(q));
      }
      return h("tr", {}, h("td", {}, ps.name), h("td", { class: "num" }, ps.count),
        h("td", {}, [...req.entries()].map(([r, q]) => h("span", { class: "chip" }, r + " " + fmtQty(q, r)))));
    })));
}

function preemptions(wl) {
  const items = [];
  for (const type of ["Preempted", "Evicted"]) {
    const c = cond(wl, type);
    if (!c || (type === "Evicted" && c.reason !== "Preempted")) continue;
    if (type === "Evicted" && cond(wl, "Preempted")) continue; // the Preempted condition says more
    const m = UID_RE.exec(c.message || "");
    const by = m ? byUID(m[1]) : null;
    items.push(h("li", {}, h("span", { class: "state warn" }, "preempted"), " ",
      by ? ["by ", wlLink(by.metadata.namespace, by.metadata.name, by.metadata.namespace + "/" + by.metadata.name), " "] : null,
      h("span", { class: "reason" }, c.reason), " — ", c.message || "", h("span", { class: "muted small" }, " (" + age(c.lastTransitionTime) + " ago" + (c.status === "True" ? "" : ", since cleared") + ")")));
  }
  const uid = wl.metadata.uid;
  if (uid) {
    for (const e of S.store.ev.values()) {
      const io = e.involvedObject || {};
      if (e.reason !== "Preempted" || io.kind !== "Workload" || !(e.message || "").includes(uid)) continue;
      items.push(h("li", {}, h("span", { class: "state info" }, "preemptor"), " preempted ",
        wlLink(io.namespace, io.name, io.namespace + "/" + io.name), " — ", e.message || "", h("span", { class: "muted small" }, " (" + age(evTime(e)) + " ago)")));
    }
  }
  return items.length ? h("ul", { class: "preemptions" }, items) : h("div", { class: "empty" }, "No preemption involves this workload.");
}

function conditionTable(wl) {
  const cs = (wl.status && wl.status.conditions) || [];
  if (!cs.length) return h("div", { class: "empty" }, "No conditions.");
  return h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "Type"), h("th", {}, "Status"), h("th", {}, "Reason"), h("th", {}, "Message"), h("th", { class: "num" }, "Since"))),
    h("tbody", {}, cs.map((c) => h("tr", {},
      h("td", {}, c.type), h("td", {}, h("span", { class: "state " + (c.status === "True" ? "ok" : "muted-state") }, c.status)),
      h("td", {}, c.reason || ""), h("td", { class: "msg" }, c.message || ""), h("td", { class: "num" }, age(c.lastTransitionTime))))));
}

function eventTable(evs) {
  if (!evs.length) return h("div", { class: "empty" }, "No events.");
  return h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "Type"), h("th", {}, "Reason"), h("th", {}, "Object"), h("th", {}, "Message"), h("th", { class: "num" }, "Age"))),
    h("tbody", {}, evs.map((e) => h("tr", {},
      h("td", {}, h("span", { class: "state " + (e.type === "Warning" ? "warn" : "muted-state") }, e.type || "")),
      h("td", {}, e.reason || ""), h("td", { class: "small" }, ((e.involvedObject || {}).kind || "") + "/" + ((e.involvedObject || {}).name || "")),
      h("td", { class: "msg" }, e.message || "", evCount(e) > 1 ? h("span", { class: "muted small" }, " ×" + evCount(e)) : null),
      h("td", { class: "num" }, age(evTime(e)))))));
}

// ---- credential and start ------------------------------------------------------------------

// The token arrives once in the URL fragment (never sent to a server, stripped at once) or is
// pasted; it is kept in sessionStorage (this tab only) and sent only to this origin.
function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search + "#/");
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

let loginShown = false;
function needLogin(why) {
  if (loginShown) return;
  loginShown = true;
  if (S.watcher) S.watcher.stop();
  S.watcher = null;
  sessionStorage.removeItem(TOKEN_KEY);
  S.token = null;
  const input = h("input", { type: "password", id: "token", autocomplete: "off", placeholder: "bearer token", spellcheck: "false" });
  const form = h("form", { class: "card login", onsubmit: (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) return;
    sessionStorage.setItem(TOKEN_KEY, t);
    location.reload();
  } },
  h("h2", {}, "Sign in"),
  h("p", {}, why),
  h("p", { class: "muted" }, "Paste the read-only token: the contents of DATA_DIR/token-readonly of pykueue serve (or the user token of DATA_DIR/kubeconfig-readonly). ",
    "pykueue serve and pykueue dashboard also print a URL that carries it. The token stays in this browser tab only."),
  input, h("button", { type: "submit" }, "Open dashboard"));
  document.getElementById("main").replaceChildren(form);
  document.getElementById("conn").textContent = "signed out";
  input.focus();
}

async function start() {
  S.token = takeToken();
  document.getElementById("server").textContent = location.host;
  document.getElementById("logout").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); location.replace(location.pathname); });
  window.addEventListener("hashchange", schedule);
  window.addEventListener("unhandledrejection", (ev) => { ev.preventDefault(); S.error = (ev.reason && ev.reason.message) || "unexpected error"; schedule(); });
  window.addEventListener("error", (ev) => { ev.preventDefault(); S.error = ev.message || "unexpected error"; schedule(); });
  let group;
  try {
    group = await apiGet("/apis/" + KUEUE);
  } catch (e) {
    if (e.code === 401) { needLogin(S.token ? "The token was not accepted (401 Unauthorized)." : "This server requires a bearer token."); return; }
    document.getElementById("main").replaceChildren(h("div", { class: "banner bad" }, "Cannot read Kueue's API: " + e.message));
    return;
  }
  const versions = (group.versions || []).map((v) => v.version);
  S.version = versions.includes("v1beta2") ? "v1beta2" : (group.preferredVersion || {}).version || "v1beta1";
  const base = "/apis/" + KUEUE + "/" + S.version + "/";
  const defs = [
    ["clusterqueues", base + "clusterqueues", S.store.cq, false],
    ["localqueues", base + "localqueues", S.store.lq, false],
    ["workloads", base + "workloads", S.store.wl, false],
    ["cohorts", base + "cohorts", S.store.cohort, true],
    ["events", "/api/v1/events", S.store.ev, true],
  ];
  S.informers = defs.map(([name, path, map, optional]) => new Informer(name, path, map, optional));
  for (const inf of S.informers) S.live.set(inf.name, false);
  S.watcher = new Watcher(S.informers);
  S.watcher.run();
  setInterval(schedule, 5000); // ages ("3m") move on; a re-render only, no request
  schedule();
}

document.addEventListener("DOMContentLoaded", start);
