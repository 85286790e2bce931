// The live page's governance panels (loaded after app.js, whose helpers and state
// it uses): why each open head is or is not consolidated, retraction proposals with
// their votes by independent group, and the evidence with its validity history. The
// independence graph of each node version is independence.js.
"use strict";

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
    const title = el("h4");
    title.append(wholeOnExpand(d.content, 70), ` — ${verdict}`);
    section.append(title);
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
    const title = el("h4");
    title.append(wholeOnExpand(p.content, 70), ` — ${p.status}`);
    section.append(
      title,
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

panels.push({
  name: "governance",
  refresh: refreshGovernance,
  wants: (e) => /^(claim|node|evidence|consolidation|memory|retraction|thread|pending_action|branch)\./.test(e.kind),
});
