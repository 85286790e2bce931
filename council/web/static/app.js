// The live page of a Council thread: JSON from the API, kept current by the
// thread's server-sent event stream (each event refetches what it touched).
// With a token configured on the server, every request carries it in an
// Authorization header (never in a URL): the stream too, so it is read with
// fetch and parsed here, since EventSource cannot send a header.
"use strict";

const TOKEN_KEY = "council-token";
const SVG = "http://www.w3.org/2000/svg";
const MAX_EVENTS_SHOWN = 200;

const state = {
  thread: null,
  stream: null,          // AbortController of the open stream
  needsToken: false,     // the server refused us for want of a (valid) token
  graph: null,
  runs: new Map(),       // run id -> run
  groups: new Map(),     // version id -> groups document
  claimCounts: new Map(), // version id -> claims seen in the graph
  pending: new Map(),    // refresh key -> timer
};

const $ = (id) => document.getElementById(id);

// Further panels (independence.js, governance.js, truth.js) register here: refresh()
// when the thread (re)opens, refresh() again for each event it wants(event), and
// runsChanged(), if it has one, when the thread's runs were read again.
const panels = [];

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

const short = (id) => String(id).slice(0, 8);
// A run as a person can tell it apart: agent, round and the id prefix the CLI accepts.
const runLabel = (run, id) => (run ? `${run.agent} r${run.round} · ${short(id)}` : short(id));
const clip = (text, n) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

const token = () => $("token").value.trim();
const authorization = () => (token() ? { Authorization: `Bearer ${token()}` } : {});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class Unauthorized extends Error {}

async function getJSON(path) {
  const response = await fetch(path, { headers: { Accept: "application/json", ...authorization() } });
  if (response.status === 401) throw new Unauthorized(`${path}: ${response.status}`);
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function askForToken() {
  state.needsToken = true;
  setStreamState("closed");
  $("thread-title").textContent = token() ? "the token was refused" : "this server needs its API token";
  $("thread-objective").textContent = "Enter COUNCIL_API_TOKEN (or the read token) above.";
}

// ------------------------------------------------------------------ threads

async function loadThreads() {
  let items;
  try {
    ({ items } = await getJSON("/threads"));
  } catch (error) {
    if (error instanceof Unauthorized) return askForToken();
    throw error;
  }
  state.needsToken = false;
  const select = $("thread-select");
  select.replaceChildren(...items.map((t) => el("option", { value: t.id }, t.title)));
  const wanted = new URLSearchParams(location.search).get("thread");
  const chosen = items.find((t) => t.id === wanted) || items[items.length - 1];
  if (chosen) {
    select.value = chosen.id;
    openThread(chosen.id);
  }
}

function openThread(threadId) {
  if (state.stream) state.stream.abort();
  Object.assign(state, { thread: threadId, graph: null });
  state.runs.clear();
  state.groups.clear();
  state.claimCounts.clear();
  $("events").replaceChildren();
  $("groups").replaceChildren();
  const url = new URL(location.href);
  url.searchParams.set("thread", threadId);
  history.replaceState(null, "", url);
  state.stream = new AbortController();
  follow(threadId, state.stream.signal);
}

// The stream first: once it is open, whatever the JSON read then misses arrives as
// events. Opened without a Last-Event-ID the stream sends what was not yet visible
// when it opened, and the history read after it holds the rest (events are sent in
// settled order, not id order, so the history's last id names no position to resume
// from); an event in both is shown once. It reconnects after the server's retry delay,
// resuming after the last event the stream sent.
async function follow(threadId, signal) {
  let lastEventId = null;
  let retryMs = 3000;
  const seen = new Set();
  const show = (event, options) => {
    if (seen.has(event.id)) return;
    seen.add(event.id);
    onEvent(event, options);
  };
  while (!signal.aborted) {
    setStreamState("connecting");
    try {
      const headers = { Accept: "text/event-stream", ...authorization() };
      if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
      const response = await fetch(`/threads/${threadId}/stream`, { headers, signal, cache: "no-store" });
      if (response.status === 401) return askForToken();
      if (!response.ok || !response.body) throw new Error(`stream: ${response.status}`);
      if (lastEventId === null) {
        const { items } = await getJSON(`/threads/${threadId}/events`);
        if (signal.aborted) return;
        for (const event of items.slice(-MAX_EVENTS_SHOWN)) show(event, { past: true });
        for (const event of items) seen.add(event.id);
      }
      setStreamState("open");
      refreshAll();
      await readEvents(response.body, {
        event: (id, data) => {
          if (id !== null) lastEventId = id;
          show(JSON.parse(data));
        },
        retry: (ms) => (retryMs = ms),
      });
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof Unauthorized) return askForToken();
      console.warn(error);
    }
    if (signal.aborted) return;
    setStreamState("connecting");
    await sleep(retryMs);
  }
}

// Server-sent events (the text/event-stream format): fields per line, a blank line
// ends an event, lines starting with ":" are comments (the server's keep-alives).
async function readEvents(body, on) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let data = [];
  let id = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, "");
      buffer = buffer.slice(end + 1);
      if (line === "") {
        if (data.length) on.event(id, data.join("\n"));
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(text);
      else if (field === "id") id = text;
      else if (field === "retry" && /^\d+$/.test(text)) on.retry(Number(text));
    }
  }
}

function setStreamState(value) {
  const badge = $("stream-state");
  badge.dataset.state = value;
  badge.textContent = `stream: ${value}`;
}

function refreshAll() {
  schedule("thread", refreshThread);
  schedule("runs", refreshRuns);
  schedule("graph", refreshGraph);
  schedule("stances", refreshStances);
  for (const panel of panels) schedule(panel.name, panel.refresh);
}

// ------------------------------------------------------------------- events

function onEvent(event, { past = false } = {}) {
  if (event.thread_id !== state.thread) return;
  document.body.dataset.lastEventId = String(event.id);
  const item = el("li", { "data-event-id": event.id, "data-kind": event.kind, "data-past": String(past) });
  item.append(el("code", {}, `#${event.id}`), ` ${event.kind} `, el("span", { class: "actor" }, event.actor));
  const list = $("events");
  list.prepend(item);
  while (list.children.length > MAX_EVENTS_SHOWN) list.lastElementChild.remove();

  const kind = event.kind;
  if (kind.startsWith("run.") || kind.startsWith("dispatch.")) schedule("runs", refreshRuns);
  const version = event.payload?.node_version_id;
  if (kind === "claim.added" && typeof version === "string") {
    schedule(`groups:${version}`, () => refreshGroups(version));
  }
  if (kind === "claim.added" || kind === "run.output_applied") schedule("stances", refreshStances);
  if (/^(node|branch|consolidation|memory|evidence|retraction|claim)\./.test(kind) || kind === "run.output_applied") {
    schedule("graph", refreshGraph);
  }
  for (const panel of panels) if (panel.wants(event)) schedule(panel.name, panel.refresh);
}

// Bursts of events refetch once.
function schedule(key, fn) {
  if (state.pending.has(key)) return;
  state.pending.set(
    key,
    setTimeout(async () => {
      state.pending.delete(key);
      try {
        await fn();
      } catch (error) {
        console.warn(error);
      }
    }, 150),
  );
}

// ------------------------------------------------------------------- thread

async function refreshThread() {
  const thread = await getJSON(`/threads/${state.thread}`);
  $("thread-title").textContent = thread.title;
  $("thread-objective").textContent = thread.objective;
  $("thread-cost").textContent = costLine(thread.cost);
}

// A thread's cost totals as inert text; unpriced runs (a model without a price, named) make the USD a lower bound.
function costLine(cost) {
  if (!cost) return "";
  const usd = Number(cost.usd).toFixed(4);
  const line = `cost: $${usd} over ${cost.runs_priced} priced run(s); ` +
    `${cost.prompt_tokens} prompt + ${cost.completion_tokens} completion tokens`;
  const why = (cost.unpriced_reasons || []).join("; ") || "no price";
  return cost.runs_unpriced ? `${line}; ${cost.runs_unpriced} run(s) unpriced (${why}: cost unknown)` : line;
}

// --------------------------------------------------------------------- runs

// Runs folded by agent (a row) and round (a column), each run a chip whose mark is its
// status; a failed run's reason is listed below the table, as text.
const RUN_MARKS = { succeeded: "✓", failed: "✗", running: "…", queued: "·", created: "·" };

async function refreshRuns() {
  const threadId = state.thread;
  const { items } = await getJSON(`/threads/${threadId}/runs`);
  if (threadId !== state.thread) return;
  state.runs = new Map(items.map((r) => [r.id, r]));
  const rounds = [...new Set(items.map((r) => r.round))].sort((a, b) => a - b);
  const agents = [...new Set(items.map((r) => r.agent))];
  const head = el("tr");
  head.append(el("th", {}, "agent"), ...rounds.map((n) => el("th", { "data-round": n }, `round ${n}`)));
  $("runs-head").replaceChildren(...(items.length ? [head] : []));
  const rows = agents.map((agent) => {
    const mine = items.filter((r) => r.agent === agent);
    const row = el("tr", { "data-agent": agent });
    row.append(el("td", { class: "run-agent", title: agent }, agent + (mine.some((r) => r.simulated) ? " (sim)" : "")));
    for (const round of rounds) {
      const cell = el("td", { "data-round": round });
      for (const r of mine.filter((x) => x.round === round)) cell.append(runChip(r));
      row.append(cell);
    }
    return row;
  });
  $("runs").replaceChildren(...rows);
  // A failed run says why, as text (stored text is data, never markup).
  const failures = items.filter((r) => r.status === "failed").map((r) =>
    el("li", { "data-run-id": r.id }, `${r.agent} round ${r.round} (${short(r.id)}): ${r.error || "no reason recorded"}`),
  );
  $("run-failures").replaceChildren(...failures);
  const done = items.filter((r) => r.status === "succeeded" || r.status === "failed").length;
  const failed = failures.length;
  $("runs-summary").textContent =
    `${done}/${items.length} finished` + (failed ? `, ${failed} failed` : "") +
    (items.length ? ` · ${agents.length} agents × ${rounds.length} round(s)` : "");
  renderGroups(); // group members are shown with their agent and round
  for (const panel of panels) if (panel.runsChanged) panel.runsChanged();
}

function runChip(r) {
  const chip = el(
    "button",
    {
      type: "button",
      class: `run-chip run-${r.status}`,
      "data-run-id": r.id,
      "data-agent": r.agent,
      "data-round": r.round,
      "data-status": r.status,
      "data-mode": r.mode,
      title: `${r.agent} · round ${r.round} · ${r.mode} · ${r.status} · attempt ${r.attempt} · run ${r.id}`,
    },
    `${RUN_MARKS[r.status] || "?"} ${short(r.id)}`,
  );
  chip.addEventListener("click", () => showAnswer(r.id).catch((e) => ($("run-answer").textContent = String(e))));
  return chip;
}

// A stored text shown whole: cut to `n` characters, a click (or Enter) opens it whole.
function wholeOnExpand(text, n, tag = "span") {
  const outer = el(tag, { class: "whole-text" });
  if (text.length <= n) {
    outer.textContent = text;
    return outer;
  }
  const box = el("details");
  box.append(el("summary", {}, clip(text, n)), el("span", { class: "whole" }, text));
  outer.append(box);
  return outer;
}

// A run's kept answer (GET /runs/{id}: `answer`), shown as text: what a model returned is
// data, never markup.
async function showAnswer(runId) {
  const run = await getJSON(`/runs/${runId}`);
  const kept = run.answer;
  const panel = $("run-answer");
  panel.dataset.runId = runId;
  $("run-answer-title").textContent = kept
    ? `${run.agent} round ${run.round}, attempt ${kept.attempt} call ${kept.round}` +
      ` (sha256 ${kept.sha256.slice(0, 12)}${kept.truncated ? `, cut from ${kept.byte_length} bytes` : ""})`
    : `${run.agent} round ${run.round}: no answer kept`;
  panel.textContent = kept ? kept.text : "";
}

// ------------------------------------------------------------------ stances

// Stance changes (GET /threads/{id}/stances): the latest first, the counts in the heading.
async function refreshStances() {
  const threadId = state.thread;
  const { counts, changes } = await getJSON(`/threads/${threadId}/stances`);
  if (threadId !== state.thread) return;
  const rows = changes
    .slice(-50)
    .reverse()
    .map((c) => {
      const row = el("tr", { "data-claim-id": c.claim_id, "data-class": c.change_class });
      row.append(
        el(
          "td",
          {
            class: `stance-${c.change_class}`,
            // dispatch --controls: what the run's control (the same profile, blind) answered
            ...(c.control_run_id ? { title: `its control run ${c.control_run_id.slice(0, 8)}: ${c.control_claim_type}` } : {}),
          },
          c.change_class.replaceAll("_", " "),
        ),
        el("td", {}, c.agent),
        el("td", {}, c.round),
        el("td", {}, c.prior_claim_type || "—"),
        el("td", {}, c.claim_type),
        el("td", { title: c.exposed_claim_types.join(", ") }, c.exposed_stances),
      );
      return row;
    });
  $("stances").replaceChildren(...rows);
  $("stances-count").textContent = changes.length
    ? `the ${rows.length} latest of ${changes.length} change(s), newest first`
    : "no stance yet";
  const moved = Object.entries(counts).filter(([, n]) => n > 0);
  $("stances-summary").textContent = moved.map(([k, n]) => `${k.replaceAll("_", " ")} ${n}`).join(" · ");
}

// ------------------------------------------------------------------- groups

async function refreshGroups(versionId) {
  const threadId = state.thread;
  const doc = await getJSON(`/nodes/${versionId}/groups`);
  if (threadId !== state.thread) return;
  const before = state.groups.get(versionId);
  if (before && mergedSince(before, doc)) {
    document.body.dataset.merges = String(Number(document.body.dataset.merges) + 1);
    $("merges-summary").textContent = `${document.body.dataset.merges} merge(s) seen live`;
  }
  state.groups.set(versionId, doc);
  if (doc.groups.some((g) => g.runs.some((r) => !state.runs.has(r)))) schedule("runs", refreshRuns);
  renderGroups();
}

// Two runs that stood in different components now stand in one.
function mergedSince(before, after) {
  const componentOf = new Map();
  before.groups.forEach((g) => g.component_runs.forEach((r) => componentOf.set(r, g.component_runs.join())));
  return after.groups.some((g) => {
    const earlier = new Set(g.component_runs.filter((r) => componentOf.has(r)).map((r) => componentOf.get(r)));
    return earlier.size > 1;
  });
}

function renderGroups() {
  const content = new Map();
  if (state.graph) for (const node of state.graph.nodes) for (const v of node.versions) content.set(v.version_id, v.content);
  const sections = [...state.groups.entries()].map(([versionId, doc]) => {
    const section = el("section", {
      class: "node-groups",
      "data-version-id": versionId,
      "data-support-groups": doc.support_groups,
      "data-dispute-groups": doc.dispute_groups,
      "data-n-eff": doc.n_eff === null || doc.n_eff === undefined ? "" : String(doc.n_eff),
    });
    section.append(wholeOnExpand(content.get(versionId) || versionId, 80, "h4"));
    // n_eff: effective independent support votes, when the rule set measures a correlation table
    const nEff = doc.n_eff === null || doc.n_eff === undefined ? "" : ` · n_eff ${Number(doc.n_eff).toFixed(2)}`;
    section.append(el("p", { class: "meta" }, `${doc.support_groups} support · ${doc.dispute_groups} dispute${nEff}`));
    const list = el("div", { class: "group-list" });
    for (const group of doc.groups) {
      const rounds = [...new Set(group.runs.map((r) => state.runs.get(r)?.round).filter((x) => x !== undefined))].sort((a, b) => a - b);
      const box = el("div", {
        class: `group group-${group.kind}`,
        "data-group-id": group.id,
        "data-kind": group.kind,
        "data-size": group.runs.length,
        "data-rounds": rounds.join(","),
        "data-merged": group.runs.length > 1 ? "true" : "false",
      });
      box.append(el("span", { class: "kind" }, group.kind));
      for (const runId of group.runs) {
        const run = state.runs.get(runId);
        box.append(
          // agent and round; the run's id in its title (the runs table shows it beside the run)
          el("span", { class: "chip", "data-run-id": runId, title: runLabel(run, runId) }, run ? `${run.agent} r${run.round}` : short(runId)),
        );
      }
      list.append(box);
    }
    section.append(list);
    return section;
  });
  $("groups").replaceChildren(...sections);
}

// ----------------------------------------------------------------- dispatch

const updateDispatch = () => ($("dispatch").disabled = !token() || state.needsToken);

function setupToken() {
  const input = $("token");
  input.value = sessionStorage.getItem(TOKEN_KEY) || "";
  let retry = null;
  input.addEventListener("input", () => {
    if (token()) sessionStorage.setItem(TOKEN_KEY, token());
    else sessionStorage.removeItem(TOKEN_KEY);
    updateDispatch();
    // Refused for want of a token: try again once typing pauses.
    clearTimeout(retry);
    if (state.needsToken) retry = setTimeout(() => loadThreads().then(updateDispatch).catch(console.warn), 300);
  });
  updateDispatch();
}

async function dispatch() {
  const result = $("dispatch-result");
  const body = {
    agents: $("agents").value.split(",").map((a) => a.trim()).filter(Boolean),
    mode: $("mode").value,
    rounds: Number($("rounds").value),
  };
  result.textContent = "dispatching…";
  const response = await fetch(`/threads/${state.thread}/dispatch`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...authorization() },
    body: JSON.stringify(body),
  });
  const doc = await response.json().catch(() => ({}));
  if (response.ok) {
    result.dataset.outcome = "ok";
    result.textContent = `dispatch ${short(doc.dispatch_id)}: ${doc.run_ids.length} run(s) queued` +
      (doc.simulated.length ? ` (simulated: ${doc.simulated.join(", ")})` : "");
  } else {
    result.dataset.outcome = "error";
    const detail = Array.isArray(doc.detail) ? doc.detail.map((d) => d.msg).join("; ") : doc.detail;
    result.textContent = `refused (${response.status}): ${detail || response.statusText}`;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  setupToken();
  $("dispatch").addEventListener("click", () => dispatch().catch((e) => ($("dispatch-result").textContent = String(e))));
  $("thread-select").addEventListener("change", (e) => openThread(e.target.value));
  loadThreads()
    .then(updateDispatch)
    .catch((e) => ($("thread-title").textContent = `cannot load threads: ${e.message}`));
});
