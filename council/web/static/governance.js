// The live page's governance panels (loaded after app.js, whose helpers and state
// it uses): the independence graph of each node version as it formed, why each
// open head is or is not consolidated, retraction proposals with their votes by
// independent group, and the evidence with its validity history.
"use strict";

const PALETTE = ["#2e6fd8", "#2f855a", "#b7791f", "#805ad5", "#c53030", "#319795", "#d53f8c", "#4a5568"];
const LINK_WORDS = {
  exposure: "was shown the stance of",
  parent: "shares lineage with",
  similar_input: "saw input similar to",
  shared_evidence: "cited the same evidence as",
};

// ------------------------------------------------------ independence graph

async function refreshFormation() {
  const threadId = state.thread;
  const { steps } = await getJSON(`/threads/${threadId}/formation`);
  if (threadId !== state.thread) return;
  const byVersion = new Map();
  for (const step of steps) {
    if (!byVersion.has(step.node_version_id)) byVersion.set(step.node_version_id, []);
    byVersion.get(step.node_version_id).push(step);
  }
  const content = new Map();
  if (state.graph) for (const node of state.graph.nodes) for (const v of node.versions) content.set(v.version_id, v.content);
  const sections = [...byVersion.entries()].map(([versionId, versionSteps]) => {
    const last = versionSteps[versionSteps.length - 1];
    const section = el("section", { class: "formation", "data-version-id": versionId });
    section.append(el("h4", {}, clip(content.get(versionId) || versionId, 80)));
    section.append(drawIndependence(versionSteps, last));
    const log = el("ol", { class: "formation-log" });
    for (const step of versionSteps) log.append(stepLine(step));
    section.append(log);
    return section;
  });
  $("formation").replaceChildren(...(sections.length ? sections : [el("p", { class: "empty" }, "no claims yet")]));
}

// Runs on a circle; a line for each link that joined groups, by kind; each
// component in its own colour; each vertex outlined by its stance.
function drawIndependence(steps, last) {
  const runs = [...new Set(steps.map((s) => s.run_id))];
  const stance = new Map(steps.map((s) => [s.run_id, s.stance]));
  const component = new Map();
  const components = [];
  for (const group of last.groups) {
    const key = group.component_runs.join();
    if (!components.includes(key)) components.push(key);
    for (const r of group.component_runs) component.set(r, components.indexOf(key));
  }
  const W = 320;
  const H = 220;
  const R = Math.min(W, H) / 2 - 34;
  const at = new Map(
    runs.map((r, i) => {
      const angle = (2 * Math.PI * i) / Math.max(runs.length, 1) - Math.PI / 2;
      return [r, { x: W / 2 + R * Math.cos(angle), y: H / 2 + R * Math.sin(angle) }];
    }),
  );
  const box = svg("svg", {
    class: "indep-graph",
    viewBox: `0 0 ${W} ${H}`,
    width: String(W),
    height: String(H),
    "data-runs": String(runs.length),
    "data-components": String(components.length),
    "data-support-groups": String(last.groups.filter((g) => g.kind === "support").length),
  });
  for (const step of steps) {
    for (const link of step.links) {
      const a = at.get(step.run_id);
      const b = at.get(link.run_id);
      if (!a || !b) continue;
      const line = svg("line", {
        class: `link link-${link.kind}`,
        x1: a.x, y1: a.y, x2: b.x, y2: b.y,
        "data-kind": link.kind,
        "data-from": step.run_id,
        "data-to": link.run_id,
      });
      line.append(svg("title", {}, `${step.agent} ${LINK_WORDS[link.kind] || link.kind} ${link.agent}`));
      box.append(line);
    }
  }
  for (const runId of runs) {
    const p = at.get(runId);
    const index = component.has(runId) ? component.get(runId) : -1;
    const vertex = svg("g", {
      class: `run-vertex stance-${stance.get(runId)}`,
      "data-run-id": runId,
      "data-component": String(index),
      transform: `translate(${p.x} ${p.y})`,
    });
    vertex.append(
      svg("circle", { r: 11, fill: index >= 0 ? PALETTE[index % PALETTE.length] : "#aaa" }),
      svg("text", { y: 24, "text-anchor": "middle", class: "meta" }, runLabel(state.runs.get(runId), runId)),
      svg("title", {}, `${runId} (${stance.get(runId)})`),
    );
    box.append(vertex);
  }
  return box;
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

// ------------------------------------------------------------- governance

async function refreshGovernance() {
  const threadId = state.thread;
  const doc = await getJSON(`/threads/${threadId}/governance`);
  if (threadId !== state.thread) return;
  $("review-setting").textContent = `· proposals: ${doc.review.description}`;
  renderDecisions(doc.decisions);
  renderProposals(doc.proposals);
  renderEvidence(doc.evidence);
}

function renderDecisions(decisions) {
  const sections = decisions.map((d) => {
    const section = el("section", {
      class: "decision",
      "data-version-id": d.node_version_id,
      "data-outcome": d.outcome,
      "data-consolidated": String(d.consolidated),
    });
    const verdict = d.consolidated ? "consolidated" : d.outcome === "consolidate" ? "ready to consolidate" : "not consolidated";
    section.append(el("h4", {}, `${clip(d.content, 70)} — ${verdict}`));
    const list = el("ul", { class: "reasons" });
    for (const r of d.reasons) {
      const li = el("li", { class: `reason reason-${r.ok ? "ok" : "failed"}`, "data-rule": r.rule, "data-ok": String(r.ok) });
      li.append(el("span", { class: "mark" }, r.ok ? "✓" : "✗"), ` ${r.rule}: ${r.detail}`);
      list.append(li);
    }
    section.append(list);
    return section;
  });
  $("decisions").replaceChildren(...(sections.length ? sections : [el("p", { class: "empty" }, "no claims yet")]));
}

function renderProposals(proposals) {
  const sections = proposals.map((p) => {
    const section = el("section", { class: "proposal", "data-proposal-id": p.id, "data-status": p.status });
    section.append(
      el("h4", {}, `${clip(p.content, 70)} — ${p.status}`),
      el("p", { class: "meta" }, `proposal ${short(p.id)} by ${p.opened_by}: ${p.reason}`),
    );
    const voteOf = new Map(p.votes.map((v) => [v.run_id, v]));
    const groups = el("div", { class: "vote-groups" });
    for (const g of p.groups) {
      const side = g.kind === "support" ? "retract" : "keep";
      const box = el("div", { class: `vote-group vote-${side}`, "data-side": side, "data-size": String(g.runs.length) });
      box.append(el("span", { class: "kind" }, side));
      for (const runId of g.runs) {
        const v = voteOf.get(runId);
        box.append(el("span", { class: "chip", "data-run-id": runId }, v ? `${v.agent} · ${short(runId)} (${v.confidence.toFixed(2)})` : short(runId)));
      }
      groups.append(box);
    }
    const abstained = p.votes.filter((v) => v.vote === "abstain").length;
    if (abstained) groups.append(el("span", { class: "meta" }, `${abstained} abstained`));
    section.append(groups);
    const history = el("ul", { class: "adjudication" });
    for (const h of p.history) {
      history.append(el("li", { "data-to": h.to_status }, `${h.created_at.slice(0, 19).replace("T", " ")} ${h.from_status} → ${h.to_status} by ${h.actor}: ${h.reason}`));
    }
    if (!p.history.length) history.append(el("li", { class: "empty" }, `not adjudicated yet (${p.votes.length} vote(s))`));
    section.append(history);
    return section;
  });
  $("proposals").replaceChildren(...(sections.length ? sections : [el("p", { class: "empty" }, "no retraction proposals")]));
}

function renderEvidence(items) {
  const rows = items.map((e) => {
    const li = el("li", { class: "evidence", "data-evidence-id": e.id, "data-validity": e.validity });
    li.append(el("span", { class: `badge validity-${e.validity}` }, e.validity), ` ${clip(e.title, 70)} `, el("small", {}, short(e.id)));
    const history = el("ul", { class: "validity-history" });
    for (const h of e.validity_history) {
      history.append(el("li", {}, `${h.created_at.slice(0, 19).replace("T", " ")} ${h.from_status} → ${h.to_status} by ${h.actor}: ${h.reason}`));
    }
    li.append(history);
    return li;
  });
  $("evidence").replaceChildren(...(rows.length ? rows : [el("li", { class: "empty" }, "no evidence")]));
}

panels.push(
  {
    name: "formation",
    refresh: refreshFormation,
    wants: (e) => e.kind === "claim.added" || e.kind.startsWith("run."),
  },
  {
    name: "governance",
    refresh: refreshGovernance,
    wants: (e) => /^(claim|node|evidence|consolidation|memory|retraction|thread|pending_action|branch)\./.test(e.kind),
  },
);
