// The minikcp dashboard: read-only views of the API, as the signed-in user, kept current by
// the API's watches (list once, then stream changes from that resourceVersion).
"use strict";

const TENANCY = "apis/tenancy.kcp.io/v1alpha1/workspaces";
const COUNTED = [
  ["deployments", "apis/apps/v1/deployments"],
  ["pods", "api/v1/pods"],
  ["configmaps", "api/v1/configmaps"],
  ["services", "api/v1/services"],
  ["secrets", "api/v1/secrets"],
];
// As client-go's reflector: each watch asks to end after 5-10 minutes and is resumed from the
// last resourceVersion seen (`#watch-timeout=<seconds>` in the URL sets it, e.g. for a proxy
// that cuts idle streams sooner).
let watchTimeout = () => 300 + Math.floor(Math.random() * 300);
const SYNCER_FINALIZER = "workload.kcp.io/syncer-";
const REPLICA_SPLIT = "workload.minikcp.io/replica-split";

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : String(child));
    }
  }
  return node;
}

async function getJSON(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  return { ok: response.ok, status: response.status, body };
}

const CLUSTER_ANNOTATION = "kcp.io/cluster";
const clusterOf = (o) => (o.metadata.annotations || {})[CLUSTER_ANNOTATION] || "";
// Wildcard (`/clusters/*/`) collections hold objects of many logical clusters.
const objectKey = (o) => `${clusterOf(o)}/${o.metadata.namespace || ""}/${o.metadata.name}`;

// One collection kept current: list, then watch from the list's resourceVersion; a watch that
// ends resumes from the last version seen, one that is too old (410) lists again.
class Collection {
  constructor(path, onChange) {
    this.path = path;
    this.onChange = onChange;
    this.items = new Map();
    this.error = null;
    this.loaded = false;
    this.version = "";
    this.abort = new AbortController();
    this.run();
  }

  stop() {
    this.abort.abort();
  }

  async run() {
    try {
      while (!this.abort.signal.aborted) {
        if (!this.version && !(await this.list())) return;
        if (!(await this.watch())) return;
      }
    } catch (err) {
      if (!this.abort.signal.aborted) {
        this.error = { status: 0, message: String(err) };
        this.onChange();
      }
    }
  }

  async list() {
    const response = await fetch(this.path, {
      credentials: "same-origin",
      signal: this.abort.signal,
    });
    const body = await response.json();
    if (!response.ok) {
      this.error = { status: response.status, message: body.message || response.statusText };
      this.loaded = true;
      this.onChange();
      if (response.status === 401) sessionEnded();
      return false;
    }
    this.items = new Map(body.items.map((o) => [objectKey(o), o]));
    this.version = body.metadata.resourceVersion;
    this.error = null;
    this.loaded = true;
    this.onChange();
    return true;
  }

  async watch() {
    const query = `watch=true&allowWatchBookmarks=true&timeoutSeconds=${watchTimeout()}`;
    const url = `${this.path}?${query}&resourceVersion=${this.version}`;
    let response;
    try {
      response = await fetch(url, { credentials: "same-origin", signal: this.abort.signal });
    } catch (err) {
      if (this.abort.signal.aborted) return false;
      await sleep(1000);
      return true;
    }
    if (response.status === 401 || response.status === 403) {
      // The session ended or the permission went: show it rather than retry.
      const body = await response.json();
      this.error = { status: response.status, message: body.message || response.statusText };
      this.onChange();
      if (response.status === 401) sessionEnded();
      return false;
    }
    if (!response.ok) {
      await response.body.cancel();
      if (response.status === 410) this.version = "";
      else await sleep(2000);
      return true;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return true;
        buffered += value;
        let newline;
        while ((newline = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line && !this.apply(JSON.parse(line))) return true;
        }
      }
    } catch (err) {
      if (this.abort.signal.aborted) return false;
      await sleep(1000);
    }
    return true;
  }

  apply(event) {
    const obj = event.object;
    if (event.type === "ERROR") {
      if (obj.code === 410) this.version = "";
      return false;
    }
    this.version = obj.metadata.resourceVersion;
    if (event.type === "BOOKMARK") return true;
    if (event.type === "DELETED") this.items.delete(objectKey(obj));
    else this.items.set(objectKey(obj), obj);
    this.onChange();
    return true;
  }
}

// Renders coalesced to one per frame, whatever the number of events.
function scheduler(render) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      render();
    });
  };
}

function denied(error) {
  if (error.status === 403) return el("p", { class: "denied" }, "Not permitted to see this.");
  return el("p", { class: "denied" }, `Unavailable: ${error.message}`);
}

function ago(stamp) {
  if (!stamp) return "never";
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(stamp)) / 1000));
  if (seconds < 90) return `${seconds}s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`;
  return `${Math.round(seconds / 3600)}h ago`;
}

function condition(obj, type) {
  return ((obj.status || {}).conditions || []).find((c) => c.type === type);
}

// A browser keeps at most six HTTP/1.1 connections to a server, and every watch holds one: the
// page watches the tree (one wildcard watch, else the start and the selected workspace) and
// three collections of the selected workspace, and lists the rest when a workspace is selected.

// A workspace of the tree when the user may not watch all: its children come from a watch of
// its logical cluster while it is the start or the selected one, else as last seen.
class TreeNode {
  constructor(path, phase, tree) {
    this.path = path;
    this.phase = phase;
    this.tree = tree;
    this.children = new Map();
    this.collection = null;
  }

  watch() {
    if (!this.collection) {
      this.collection = new Collection(`/clusters/${this.path}/${TENANCY}`, this.tree.refresh);
    }
  }

  unwatch() {
    if (this.collection) this.collection.stop();
    this.collection = null;
  }

  stop() {
    this.unwatch();
    for (const child of this.children.values()) child.stop();
  }

  find(path) {
    if (path === this.path) return this;
    for (const child of this.children.values()) {
      if (path === child.path || path.startsWith(`${child.path}:`)) {
        const found = child.find(path);
        if (found) return found;
      }
    }
    return null;
  }

  sync() {
    if (!this.collection || !this.collection.loaded || this.collection.error) {
      for (const child of this.children.values()) child.sync();
      return;
    }
    const seen = new Set();
    for (const ws of this.collection.items.values()) {
      const path = `${this.path}:${ws.metadata.name}`;
      seen.add(path);
      const phase = (ws.status || {}).phase || "Scheduling";
      const child = this.children.get(path);
      if (child) child.phase = phase;
      else this.children.set(path, new TreeNode(path, phase, this.tree));
    }
    for (const [path, child] of this.children) {
      if (!seen.has(path)) {
        child.stop();
        this.children.delete(path);
      }
    }
    for (const child of this.children.values()) child.sync();
  }

  render(selected, select) {
    const children = [...this.children.values()].sort((a, b) => a.path.localeCompare(b.path));
    const item = treeItem(this.path, this.phase, selected, select, () =>
      children.map((c) => c.render(selected, select)),
    );
    const error = this.collection && this.collection.error;
    if (error && error.status !== 403) {
      item.firstChild.after(el("span", { class: "denied" }, ` (${error.message})`));
    }
    return item;
  }
}

function treeItem(path, phase, selected, select, children) {
  const link = el(
    "a",
    { class: path === selected ? "selected" : "", "data-path": path, onclick: () => select(path) },
    path.split(":").pop(),
  );
  const item = el("li", { "data-workspace": path }, link);
  if (phase) item.append(el("span", { class: `phase ${phase}` }, phase));
  const nested = children();
  if (nested.length) item.append(el("ul", {}, nested));
  return item;
}

// One wildcard watch of every workspace when the user may (system:masters), else one watch per
// shown logical cluster.
class Tree {
  constructor(start, select) {
    this.start = start;
    this.select = select;
    this.selected = start;
    this.refresh = scheduler(() => this.render());
    this.root = null;
    this.all = new Collection(`/clusters/*/${TENANCY}`, () => {
      if (this.all.error && !this.root) {
        this.all.stop();
        this.root = new TreeNode(start, "", this);
        this.root.watch();
        this.focus(this.selected);
      }
      this.refresh();
    });
  }

  focus(path) {
    if (this.root) {
      const previous = this.root.find(this.selected);
      if (previous && previous !== this.root) previous.unwatch();
      const next = this.root.find(path);
      if (next) next.watch();
    }
    this.selected = path;
    this.refresh();
  }

  render() {
    let item;
    if (this.root) {
      this.root.sync();
      item = this.root.render(this.selected, this.select);
    } else if (this.all.loaded) {
      item = this.fromAll();
    } else {
      return;
    }
    $("tree").replaceChildren(item);
  }

  fromAll() {
    const byParent = new Map();
    for (const ws of this.all.items.values()) {
      const parent = clusterOf(ws);
      if (!byParent.has(parent)) byParent.set(parent, []);
      byParent.get(parent).push(ws);
    }
    // The start path's logical cluster, found by walking down from root.
    let cluster = this.start.split(":")[0];
    let phase = "";
    for (const name of this.start.split(":").slice(1)) {
      const ws = (byParent.get(cluster) || []).find((w) => w.metadata.name === name);
      cluster = ws ? (ws.spec || {}).cluster : "";
      phase = ws ? (ws.status || {}).phase || "" : "";
    }
    const build = (path, cluster, phase) =>
      treeItem(path, phase, this.selected, this.select, () =>
        (byParent.get(cluster) || [])
          .slice()
          .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
          .map((w) =>
            build(`${path}:${w.metadata.name}`, (w.spec || {}).cluster, (w.status || {}).phase || "Scheduling"),
          ),
      );
    return build(this.start, cluster, phase);
  }
}

// The selected workspace: its namespaces, counts, APIs, sync targets, deployments and events.
class Detail {
  constructor(path) {
    this.path = path;
    this.stopped = false;
    const base = `/clusters/${path}`;
    const refresh = scheduler(() => this.render());
    this.watched = {
      synctargets: new Collection(`${base}/apis/workload.kcp.io/v1alpha1/synctargets`, refresh),
      deployments: new Collection(`${base}/apis/apps/v1/deployments`, refresh),
      events: new Collection(`${base}/api/v1/events`, refresh),
    };
    this.counts = new Map();
    this.namespaces = null;
    this.apis = null;
    this.load(base, refresh);
    // Heartbeat ages move with the clock, not with events.
    this.ticker = setInterval(refresh, 5000);
  }

  async load(base, refresh) {
    const [namespaces, bindings, crds, ...counted] = await Promise.all([
      getJSON(`${base}/api/v1/namespaces`),
      getJSON(`${base}/apis/apis.kcp.io/v1alpha1/apibindings`),
      getJSON(`${base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`),
      ...COUNTED.filter(([kind]) => kind !== "deployments").map(([, p]) => getJSON(`${base}/${p}`)),
    ]);
    this.namespaces = namespaces;
    this.apis = { bindings, crds };
    COUNTED.filter(([kind]) => kind !== "deployments").forEach(([kind], i) => {
      const r = counted[i];
      this.counts.set(kind, r.ok ? r.body.items.length : r.status === 403 ? "—" : "?");
    });
    refresh();
  }

  stop() {
    this.stopped = true;  // a list still under way must not draw over the next selection
    clearInterval(this.ticker);
    for (const c of Object.values(this.watched)) c.stop();
  }

  section(title, collection, body) {
    const parts = [el("h3", {}, title)];
    if (collection.error) parts.push(denied(collection.error));
    else if (!collection.loaded) parts.push(el("p", { class: "muted" }, "Loading…"));
    else parts.push(body([...collection.items.values()]));
    return el("div", { "data-section": title.toLowerCase() }, parts);
  }

  render() {
    if (this.stopped) return;
    const w = this.watched;
    const deploymentCount = w.deployments.error ? "—" : w.deployments.items.size;
    const counts = el(
      "div",
      { class: "counts", "data-section": "counts" },
      COUNTED.map(([kind]) =>
        el("div", { class: "count", "data-kind": kind },
          el("b", {}, kind === "deployments" ? deploymentCount : this.counts.get(kind) ?? "…"),
          kind),
      ),
    );
    $("detail").replaceChildren(
      el("h2", {}, this.path),
      counts,
      this.namespaceSection(),
      this.apiSection(),
      this.section("SyncTargets", w.synctargets, (items) => this.targets(items)),
      this.section("Deployments", w.deployments, (items) => this.deployments(items)),
      this.section("Events", w.events, (items) => this.events(items)),
    );
  }

  namespaceSection() {
    const parts = [el("h3", {}, "Namespaces")];
    const listed = this.namespaces;
    if (!listed) parts.push(el("p", { class: "muted" }, "Loading…"));
    else if (!listed.ok) parts.push(denied({ status: listed.status, message: (listed.body || {}).message }));
    else parts.push(el("p", {}, listed.body.items.map((n) => n.metadata.name).sort().join(", ") || "none"));
    return el("div", { "data-section": "namespaces" }, parts);
  }

  apiSection() {
    const parts = [el("h3", {}, "APIs")];
    if (!this.apis) {
      parts.push(el("p", { class: "muted" }, "Loading…"));
    } else {
      const { bindings, crds } = this.apis;
      const bound = bindings.ok
        ? bindings.body.items.map((b) => {
            const ref = (b.spec.reference || {}).export || {};
            return `${b.metadata.name} (${ref.path || ""}${ref.path ? ":" : ""}${ref.name || ""})`;
          })
        : null;
      const own = crds.ok ? crds.body.items.map((c) => c.metadata.name) : null;
      parts.push(
        el("p", {}, "Bound: ", bound === null ? "not permitted" : bound.join(", ") || "none"),
        el("p", {}, "Own (CRDs): ", own === null ? "not permitted" : own.join(", ") || "none"),
      );
    }
    return el("div", { "data-section": "apis" }, parts);
  }

  targets(items) {
    if (!items.length) return el("p", { class: "muted" }, "none");
    return el("table", {},
      el("tr", {}, ["Name", "Ready", "Heartbeat", "Synced resources"].map((h) => el("th", {}, h))),
      items.map((t) => {
        const ready = condition(t, "Ready");
        const isReady = ready && ready.status === "True";
        const synced = ((t.status || {}).syncedResources || [])
          .map((s) => `${s.resource}${s.group ? "." + s.group : ""}${s.state === "Accepted" ? "" : ` (${s.state})`}`);
        return el("tr", { class: isReady ? "ready" : "not-ready", "data-target": t.metadata.name },
          el("td", {}, t.metadata.name),
          el("td", { class: "state", title: ready ? ready.message || "" : "" },
            isReady ? "Ready" : `Not ready${ready && ready.reason ? ` (${ready.reason})` : ""}`),
          el("td", {}, ago((t.status || {}).lastSyncerHeartbeatTime)),
          el("td", {}, synced.join(", ") || "—"));
      }));
  }

  deployments(items) {
    if (!items.length) return el("p", { class: "muted" }, "none");
    return el("table", {},
      el("tr", {}, ["Namespace", "Name", "Ready", "Placement"].map((h) => el("th", {}, h))),
      items.map((d) => {
        const status = d.status || {};
        const targets = (d.metadata.finalizers || [])
          .filter((f) => f.startsWith(SYNCER_FINALIZER))
          .map((f) => f.slice(SYNCER_FINALIZER.length));
        const split = replicaSplit((d.metadata.annotations || {})[REPLICA_SPLIT]);
        return el("tr", {},
          el("td", {}, d.metadata.namespace),
          el("td", {}, d.metadata.name),
          el("td", {}, `${status.readyReplicas || 0}/${(d.spec || {}).replicas ?? 1}`),
          el("td", {}, split || targets.join(", ") || "—"));
      }));
  }

  events(items) {
    const stamp = (e) => e.lastTimestamp || e.eventTime || e.metadata.creationTimestamp || "";
    const recent = items.sort((a, b) => stamp(b).localeCompare(stamp(a))).slice(0, 20);
    if (!recent.length) return el("p", { class: "muted" }, "none");
    return el("table", {},
      el("tr", {}, ["When", "Type", "Object", "Reason", "Message"].map((h) => el("th", {}, h))),
      recent.map((e) => el("tr", {},
        el("td", {}, ago(stamp(e))),
        el("td", {}, e.type || ""),
        el("td", {}, `${(e.involvedObject || {}).kind || ""}/${(e.involvedObject || {}).name || ""}`),
        el("td", {}, e.reason || ""),
        el("td", {}, e.message || ""))));
  }
}

// The syncer's per-target replica counts (`{"east": 2, "west": 1}`), as `east: 2, west: 1`.
function replicaSplit(annotation) {
  if (!annotation) return "";
  try {
    return Object.entries(JSON.parse(annotation)).map(([t, n]) => `${t}: ${n}`).join(", ");
  } catch (_) {
    return annotation;
  }
}

function sessionEnded() {
  $("banner").textContent = "The session has ended: run `minikcp dashboard` for a new login link.";
  $("banner").hidden = false;
}

async function signIn(params) {
  const token = params.get("login");
  if (token) {
    params.delete("login");
    history.replaceState(null, "", `${location.pathname}#${params}`);
    const response = await fetch("/dashboard/login", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token }),
    });
    if (response.ok) return response.json();
  }
  const session = await getJSON("/dashboard/session");
  return session.ok ? session.body : null;
}

async function main() {
  const params = new URLSearchParams(location.hash.slice(1));
  const start = params.get("cluster") || "root";
  const timeout = Number(params.get("watch-timeout"));
  if (timeout > 0) watchTimeout = () => timeout;
  const session = await signIn(params);
  if (!session) {
    $("banner").textContent =
      "Not signed in (the login link is used up or has expired): run `minikcp dashboard` for a new one.";
    $("banner").hidden = false;
    return;
  }
  $("who").textContent = `signed in as ${session.user}`;
  $("logout").hidden = false;
  $("logout").addEventListener("click", async () => {
    await fetch("/dashboard/logout", { method: "POST", credentials: "same-origin" });
    location.replace(location.pathname);
  });
  let detail = null;
  const select = (path) => {
    if (detail) detail.stop();
    tree.focus(path);
    detail = new Detail(path);
    document.body.dataset.selected = path;
  };
  const tree = new Tree(start, select);
  select(start);
}

main();
