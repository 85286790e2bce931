// The independence graph of each node version (GET /threads/{id}/formation), readable
// at 60 runs and more: one box per independence group (a connected component of the
// runs that claimed on the version), labelled with its size and its agents; inside a
// box a row per round, each run a cell labelled with its agent and round and filled by
// its stance; the links that joined the runs (exposure, parent, similar input, shared
// evidence) drawn inside their box. A click on a run, or Enter / Space on it, shows its
// claims and an excerpt of its kept answer (GET /runs/{id}). Loaded after app.js, whose
// state and helpers it uses. Agent names, rationales and answers are data: set as text,
// never markup.
"use strict";

const LINK_WORDS = {
  exposure: "was shown the stance of",
  parent: "shares lineage with",
  similar_input: "saw input similar to",
  shared_evidence: "cited the same evidence as",
};
const STANCE_MARK = { originate: "+", endorse: "+", dispute: "−", abstain: "·" };
const CELL = { w: 124, h: 24, gap: 8, line: 6, round: 30 };
const BOX = { pad: 10, head: 40, gap: 14 };
const ANSWER_EXCERPT = 1500;
const LOG_OPEN_UP_TO = 12; // the step list starts folded when it is longer

const formation = {
  byVersion: new Map(), // version id -> its steps, in claim order
  details: new Map(), // version id -> its run detail box (kept across redraws)
  clusters: new Map(), // version id -> Map(run id -> { index, size, count })
  selected: new Map(), // version id -> selected run id
  skipped: [], // malformed claim events the formation left out (each named, with the reason)
  width: 0,
};

async function refreshFormation() {
  const threadId = state.thread;
  const { steps, skipped = [] } = await getJSON(`/threads/${threadId}/formation`);
  if (threadId !== state.thread) return;
  formation.skipped = skipped;
  formation.byVersion = new Map();
  for (const step of steps) {
    if (!formation.byVersion.has(step.node_version_id)) formation.byVersion.set(step.node_version_id, []);
    formation.byVersion.get(step.node_version_id).push(step);
  }
  renderFormation();
}

function formationWidth() {
  return Math.max(300, Math.floor($("formation").clientWidth) - 4);
}

function renderFormation() {
  if (state.thread === null) return;
  formation.width = formationWidth();
  const content = new Map();
  if (state.graph) for (const node of state.graph.nodes) for (const v of node.versions) content.set(v.version_id, v.content);
  const sections = [...formation.byVersion.entries()].map(([versionId, steps]) => {
    const section = el("section", { class: "formation", "data-version-id": versionId });
    const drawn = drawIndependence(versionId, steps, formation.width);
    section.append(
      el("h4", {}, clip(content.get(versionId) || versionId, 100)),
      el("p", { class: "meta formation-summary" }, drawn.summary),
      drawn.svg,
      detailBox(versionId),
      formationLog(steps),
    );
    return section;
  });
  // a redraw (a claim arrived) keeps the run that had the keyboard focus focused
  const focused = document.activeElement?.closest?.(".formation .run-vertex");
  const refocus = focused && [focused.closest(".formation").dataset.versionId, focused.dataset.runId];
  const skipped = formation.skipped.map((e) =>
    el("p", { class: "meta formation-skipped" }, `#${e.event_id} skipped: a malformed ${e.kind} event (${e.reason})`),
  );
  $("formation").replaceChildren(
    ...(sections.length ? sections : [el("p", { class: "empty" }, "no claims yet")]),
    ...skipped,
  );
  fitLabels($("formation"));
  for (const [versionId, runId] of formation.selected) highlight(versionId, runId);
  if (refocus) vertexOf(...refocus)?.focus();
}

function graphOf(versionId) {
  return [...document.querySelectorAll(".formation svg.indep-graph")].find((g) => g.dataset.versionId === versionId);
}

function vertexOf(versionId, runId) {
  const graph = graphOf(versionId);
  return graph ? [...graph.querySelectorAll(".run-vertex")].find((v) => v.dataset.runId === runId) : undefined;
}

// The components of the version's runs as the last claim left them (each group's
// component_runs); a run in no group (an abstention alone) is a component of its own.
function clustersOf(steps) {
  const last = steps[steps.length - 1];
  const runs = [...new Set(steps.map((s) => s.run_id))];
  const order = new Map(runs.map((r, i) => [r, i]));
  const byKey = new Map();
  for (const group of last.groups) {
    const key = group.component_runs.join();
    if (!byKey.has(key)) byKey.set(key, { runs: [...group.component_runs], groups: [] });
    byKey.get(key).groups.push(group);
  }
  const placed = new Set([...byKey.values()].flatMap((c) => c.runs));
  for (const r of runs) if (!placed.has(r)) byKey.set(r, { runs: [r], groups: [] });
  const first = (c) => Math.min(...c.runs.map((r) => (order.has(r) ? order.get(r) : Infinity)));
  return [...byKey.values()].sort((a, b) => b.runs.length - a.runs.length || first(a) - first(b));
}

function roundOf(runId) {
  const run = state.runs.get(runId);
  return run ? run.round : null;
}

// Cells in rows by round inside each box; boxes packed left to right in shelves no wider
// than the panel. Returns each box's place and size and each run's cell.
function place(clusters, width) {
  const maxCols = Math.max(1, Math.floor((width - 2 * BOX.pad + CELL.gap) / (CELL.w + CELL.gap)));
  const at = new Map();
  for (const cluster of clusters) {
    const rounds = new Map();
    for (const r of cluster.runs) {
      const key = roundOf(r) ?? Infinity;
      if (!rounds.has(key)) rounds.set(key, []);
      rounds.get(key).push(r);
    }
    const keys = [...rounds.keys()].sort((a, b) => a - b);
    const cols = Math.min(maxCols, Math.max(...keys.map((k) => rounds.get(k).length)));
    let y = BOX.head;
    keys.forEach((key, i) => {
      if (i) y += CELL.round - CELL.line;
      const row = rounds.get(key).sort((a, b) => cluster.agent(a).localeCompare(cluster.agent(b)) || a.localeCompare(b));
      row.forEach((r, j) => {
        if (j && j % cols === 0) y += CELL.h + CELL.line;
        at.set(r, { cluster, dx: BOX.pad + (j % cols) * (CELL.w + CELL.gap), dy: y });
      });
      y += CELL.h + CELL.line;
    });
    cluster.w = 2 * BOX.pad + cols * CELL.w + (cols - 1) * CELL.gap;
    cluster.h = y - CELL.line + BOX.pad;
  }
  let x = 0;
  let y = 0;
  let shelf = 0;
  for (const cluster of clusters) {
    if (x > 0 && x + cluster.w > width) {
      x = 0;
      y += shelf + BOX.gap;
      shelf = 0;
    }
    Object.assign(cluster, { x, y });
    x += cluster.w + BOX.gap;
    shelf = Math.max(shelf, cluster.h);
  }
  for (const cell of at.values()) Object.assign(cell, { x: cell.cluster.x + cell.dx, y: cell.cluster.y + cell.dy });
  return { at, width: Math.max(...clusters.map((c) => c.x + c.w)), height: y + shelf };
}

function countsOf(values) {
  const counts = new Map();
  for (const v of values) counts.set(v, (counts.get(v) || 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

function drawIndependence(versionId, steps, width) {
  const last = steps[steps.length - 1];
  const stepOf = new Map(steps.map((s) => [s.run_id, s])); // a run's latest claim on the version
  const agentOf = new Map(Object.entries(last.run_agents || {}));
  for (const s of steps) agentOf.set(s.run_id, s.agent);
  const agent = (r) => state.runs.get(r)?.agent ?? agentOf.get(r) ?? "?";
  const clusters = clustersOf(steps);
  for (const c of clusters) c.agent = agent;
  const { at, width: used, height } = place(clusters, width);
  const memberOf = new Map();
  clusters.forEach((c, i) => c.runs.forEach((r) => memberOf.set(r, { index: i, size: c.runs.length, count: clusters.length })));
  formation.clusters.set(versionId, memberOf);

  const drawn = Math.max(300, Math.ceil(used) + 2); // as wide as its boxes, at most the panel
  const box = svg("svg", {
    class: "indep-graph",
    viewBox: `0 0 ${drawn} ${height + 2}`,
    width: String(drawn),
    height: String(height + 2),
    "data-version-id": versionId,
    "data-runs": String(stepOf.size),
    "data-components": String(clusters.length),
    "data-support-groups": String(last.groups.filter((g) => g.kind === "support").length),
  });
  const boxes = svg("g", { class: "clusters" });
  const links = svg("g", { class: "links" });
  const vertices = svg("g", { class: "vertices" });

  clusters.forEach((c, i) => {
    const agents = countsOf(c.runs.map(agent)).map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(", ");
    const support = c.groups.filter((g) => g.kind === "support").reduce((n, g) => n + g.runs.length, 0);
    const dispute = c.groups.filter((g) => g.kind === "dispute").reduce((n, g) => n + g.runs.length, 0);
    const size = `${c.runs.length} run${c.runs.length === 1 ? "" : "s"}`;
    // a lone run's stance is its cell's: the head of its box gives only the size
    const sides = c.runs.length === 1 ? "" : [support ? `${support} support` : "", dispute ? `${dispute} dispute` : ""].filter(Boolean).join(", ");
    const g = svg("g", {
      class: "indep-cluster",
      "data-component": String(i),
      "data-size": String(c.runs.length),
      "data-runs": c.runs.join(" "),
      transform: `translate(${c.x} ${c.y})`,
    });
    g.append(
      svg("title", {}, `group ${i + 1}: ${size}${sides ? ` (${sides})` : ""}; agents: ${agents}`),
      svg("rect", { class: "cluster-box", width: c.w, height: c.h, rx: 8 }),
      svg("text", { x: BOX.pad, y: 16, class: "head", "data-fit": c.w - 2 * BOX.pad }, `group ${i + 1} · ${size}${sides ? ` · ${sides}` : ""}`),
      svg("text", { x: BOX.pad, y: 31, class: "agents", "data-fit": c.w - 2 * BOX.pad }, agents),
    );
    boxes.append(g);
  });

  const center = (p) => ({ x: p.x + CELL.w / 2, top: p.y, bottom: p.y + CELL.h });
  let linkCount = 0;
  for (const step of steps) {
    for (const link of step.links) {
      const a = at.get(step.run_id);
      const b = at.get(link.run_id);
      if (!a || !b) continue;
      linkCount += 1;
      const [upper, lower] = a.y <= b.y ? [center(a), center(b)] : [center(b), center(a)];
      let d;
      if (upper.top === lower.top) {
        const lift = 10 + Math.abs(upper.x - lower.x) / 10;
        d = `M ${upper.x} ${upper.top} C ${upper.x} ${upper.top - lift}, ${lower.x} ${lower.top - lift}, ${lower.x} ${lower.top}`;
      } else {
        const mid = (upper.bottom + lower.top) / 2;
        d = `M ${lower.x} ${lower.top} C ${lower.x} ${mid}, ${upper.x} ${mid}, ${upper.x} ${upper.bottom}`;
      }
      const path = svg("path", {
        class: `link link-${link.kind}`,
        d,
        "data-kind": link.kind,
        "data-from": step.run_id,
        "data-to": link.run_id,
      });
      path.append(svg("title", {}, `${agent(step.run_id)} ${LINK_WORDS[link.kind] || link.kind} ${agent(link.run_id)}`));
      links.append(path);
    }
  }

  // Two runs of one agent and round in one box are told apart by their order, not their ids.
  const seen = new Map();
  for (const c of clusters) {
    for (const runId of c.runs) {
      const p = at.get(runId);
      const step = stepOf.get(runId);
      const round = roundOf(runId);
      const base = `${agent(runId)} r${round ?? "?"}`;
      const key = `${clusters.indexOf(c)}:${base}`;
      seen.set(key, (seen.get(key) || 0) + 1);
      const label = seen.get(key) > 1 ? `${base} (${seen.get(key)})` : base;
      const stance = step ? step.stance : "abstain";
      const vertex = svg("g", {
        class: `run-vertex stance-${stance}`,
        "data-run-id": runId,
        "data-component": String(clusters.indexOf(c)),
        "data-stance": stance,
        transform: `translate(${p.x} ${p.y})`,
        tabindex: "0",
        role: "button",
        "aria-pressed": "false",
        "aria-label": `${agent(runId)}, round ${round ?? "unknown"}, ${stance}: show its claims and answer`,
      });
      const confidence = step ? ` (${Number(step.confidence).toFixed(2)})` : "";
      vertex.append(
        svg("title", {}, `${agent(runId)} · round ${round ?? "?"} · ${stance}${confidence} · run ${runId}`),
        svg("rect", { width: CELL.w, height: CELL.h, rx: 5 }),
        svg("text", { x: 7, y: 16, class: "label", "data-fit": CELL.w - 22 }, clip(label, 40)),
        svg("text", { x: CELL.w - 8, y: 16, class: "mark", "text-anchor": "middle" }, STANCE_MARK[stance] || "?"),
      );
      const open = () => showRunDetail(versionId, runId).catch((e) => (detailBox(versionId).textContent = String(e)));
      vertex.addEventListener("click", open);
      vertex.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          open();
        }
      });
      vertices.append(vertex);
    }
  }
  box.append(boxes, links, vertices);
  const support = last.groups.filter((g) => g.kind === "support").length;
  const summary =
    `${stepOf.size} runs in ${clusters.length} independence group${clusters.length === 1 ? "" : "s"}` +
    ` (${support} support group${support === 1 ? "" : "s"}) · ${linkCount} link${linkCount === 1 ? "" : "s"}` +
    " · click a run for its claims and answer";
  return { svg: box, summary };
}

// Shorten each label marked data-fit until it fits its width (measured as rendered).
function fitLabels(root) {
  for (const text of root.querySelectorAll("text[data-fit]")) {
    const max = Number(text.getAttribute("data-fit"));
    const full = text.textContent;
    if (!(text.getComputedTextLength() > max)) continue;
    let lo = 0;
    let hi = full.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      text.textContent = full.slice(0, mid) + "…";
      if (text.getComputedTextLength() <= max) lo = mid;
      else hi = mid - 1;
    }
    text.textContent = full.slice(0, lo) + "…";
  }
}

function highlight(versionId, runId) {
  const graph = graphOf(versionId);
  if (!graph) return;
  graph.dataset.selected = runId;
  for (const v of graph.querySelectorAll(".run-vertex")) {
    const on = v.dataset.runId === runId;
    v.classList.toggle("selected", on);
    v.setAttribute("aria-pressed", String(on));
  }
  for (const link of graph.querySelectorAll(".link")) {
    link.classList.toggle("hot", link.dataset.from === runId || link.dataset.to === runId);
  }
}

function detailBox(versionId) {
  if (!formation.details.has(versionId)) {
    const box = el("div", { class: "run-detail", "data-version-id": versionId, "aria-live": "polite" });
    box.append(el("p", { class: "empty" }, "click a run (or focus it and press Enter) to read its claims and answer"));
    formation.details.set(versionId, box);
  }
  return formation.details.get(versionId);
}

// A run's claims and the start of its kept answer, as text.
async function showRunDetail(versionId, runId) {
  formation.selected.set(versionId, runId);
  highlight(versionId, runId);
  const box = detailBox(versionId);
  box.dataset.runId = runId;
  const run = await getJSON(`/runs/${runId}`);
  if (box.dataset.runId !== runId) return;
  const content = new Map();
  if (state.graph) for (const node of state.graph.nodes) for (const v of node.versions) content.set(v.version_id, v.content);
  const member = formation.clusters.get(versionId)?.get(runId);
  const usage = run.usage || {};
  const cost = run.cost_usd === null || run.cost_usd === undefined ? "cost unknown" : `$${Number(run.cost_usd).toFixed(4)}`;
  const parts = [
    el("h5", {}, `${run.agent} · round ${run.round} · ${run.mode} · ${run.status}`),
    el(
      "p",
      { class: "meta" },
      (member ? `group ${member.index + 1} of ${member.count} (${member.size} run${member.size === 1 ? "" : "s"}) · ` : "") +
        `run ${short(run.id)} · ${run.model}` +
        (run.usage ? ` · ${usage.prompt_tokens ?? 0} + ${usage.completion_tokens ?? 0} tokens, ${cost}` : ""),
    ),
  ];
  if (run.error) parts.push(el("p", { class: "run-reason" }, `failed: ${run.error}`));
  const claims = [...run.claims].sort((a, b) => (b.node_version_id === versionId) - (a.node_version_id === versionId));
  const list = el("ul", { class: "detail-claims" });
  for (const c of claims) {
    const li = el("li", { "data-claim-id": c.id, "data-version-id": c.node_version_id, "data-claim-type": c.claim_type });
    li.append(
      el("span", { class: `claim-type stance-${c.claim_type}` }, `${c.claim_type} (${Number(c.confidence).toFixed(2)})`),
      ` on ${clip(content.get(c.node_version_id) || short(c.node_version_id), 80)}`,
    );
    if (c.rationale) li.append(el("q", { class: "rationale" }, c.rationale));
    list.append(li);
  }
  if (!claims.length) list.append(el("li", { class: "empty" }, "no claims"));
  parts.push(el("h6", {}, `claims (${claims.length})`), list);
  const kept = run.answer;
  parts.push(
    el("h6", {}, kept ? `answer${kept.text.length > ANSWER_EXCERPT ? ` (first ${ANSWER_EXCERPT} of ${kept.text.length} characters)` : ""}` : "answer"),
    el("pre", { class: "run-answer answer-excerpt" }, kept ? clip(kept.text, ANSWER_EXCERPT) : "no answer kept"),
  );
  box.replaceChildren(...parts);
  if (box.isConnected) box.scrollIntoView({ block: "nearest" });
}

function formationLog(steps) {
  const details = el("details", { class: "formation-steps" });
  if (steps.length <= LOG_OPEN_UP_TO) details.open = true;
  details.append(el("summary", {}, `how the groups formed: ${steps.length} claim${steps.length === 1 ? "" : "s"} in order`));
  const log = el("ol", { class: "formation-log" });
  for (const step of steps) log.append(stepLine(step));
  details.append(log);
  return details;
}

function stepLine(step) {
  const run = state.runs.get(step.run_id);
  const how = step.links.length
    ? step.links.map((l) => `${LINK_WORDS[l.kind] || l.kind} ${runLabel(state.runs.get(l.run_id), l.run_id)}`).join("; ")
    : "independent of every earlier claimant";
  const li = el("li", { "data-event-id": step.event_id, "data-joined": String(step.links.length) });
  li.append(
    el("strong", {}, runLabel(run, step.run_id)),
    ` ${step.stance} (${step.confidence.toFixed(2)}) — ${how}; groups then: ${step.groups.length}`,
  );
  return li;
}

let resizing = null;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => {
    if (formation.byVersion.size && formationWidth() !== formation.width) renderFormation();
  }, 120);
});

panels.push({
  name: "formation",
  refresh: refreshFormation,
  wants: (e) => e.kind === "claim.added" || e.kind.startsWith("run."),
  // the runs' agents and rounds place and label the cells
  runsChanged: () => {
    if (formation.byVersion.size) renderFormation();
  },
});
