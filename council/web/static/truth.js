// The thread against ground truth (GET /eval?thread=ID): what `council eval` reports for
// this thread alone — each agent's first and last answer, the majorities, the council's
// decisions under the pinned rules, the oracle gap. Shown once the thread has a resolution
// (`council resolve`, or an imported debate's truth). Stored text is set as text, never markup.
"use strict";

const pct = (x) => (x === null || x === undefined ? "—" : `${(x * 100).toFixed(0)}%`);

async function refreshTruth() {
  const threadId = state.thread;
  const report = await getJSON(`/eval?thread=${encodeURIComponent(threadId)}`);
  if (threadId !== state.thread) return;
  const box = $("truth");
  if (!report.resolved) {
    $("truth-summary").textContent = "";
    box.replaceChildren(el("p", { class: "empty" }, "no resolution recorded: council resolve --node VERSION --outcome true|false"));
    return;
  }
  const rows = Object.entries(report.agents).map(([agent, figures]) => {
    const row = el("tr", { "data-agent": agent });
    const flips = figures.flips;
    row.append(
      el("td", {}, agent),
      el("td", { "data-figure": "first" }, pct(figures.first_accuracy)),
      el("td", { "data-figure": "last" }, pct(figures.last_accuracy)),
      el("td", {}, `${flips.correct_to_wrong} / ${flips.wrong_to_correct} / ${flips.wrong_to_wrong}`),
    );
    return row;
  });
  const table = el("table");
  const head = el("tr");
  for (const title of ["agent", "first turn right", "last turn right", "flips: right→wrong / wrong→right / wrong→wrong"]) {
    head.append(el("th", {}, title));
  }
  table.append(el("thead"), el("tbody"));
  table.tHead.append(head);
  table.tBodies[0].append(...rows);
  const lines = [];
  const majority = report.majority;
  lines.push(`majority right: first round ${pct(majority.first_round.accuracy)}, last round ${pct(majority.last_round.accuracy)}`);
  for (const [ruleSet, council] of Object.entries(report.council)) {
    lines.push(`council under ${ruleSet}: decided ${council.decided}, right ${pct(council.accuracy)}, wrong ${council.wrong}`);
  }
  const gap = report.oracle_gap;
  lines.push(`some turn was right: ${gap.oracle_correct}; the majority missed it ${gap.majority}`);
  box.replaceChildren(table, ...lines.map((line) => el("p", { class: "truth-line" }, line)));
  $("truth-summary").textContent = `${report.resolved} resolved`;
}

panels.push({
  name: "truth",
  refresh: refreshTruth,
  wants: (e) => e.kind === "node.resolved" || e.kind === "claim.added",
});
