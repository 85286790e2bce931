// The council's answer, first under the thread's head (GET /threads/{id}/answer, as the
// decision record of `council export` leads with it): what the council established, on
// which independent groups, or that it established nothing; then the live alternatives,
// rivals first, with their support. Stored text is set as text, never markup; a long
// proposition opens whole on a click.
"use strict";

const ALTERNATIVES_SHOWN = 5;

// Independent groups, each once, its agents each once: "2 independent group(s): a, b; c".
const heldBy = (groups) =>
  groups.length ? `${groups.length} independent group(s): ${groups.map((g) => g.agents.join(", ")).join("; ")}` : "no independent group";

async function refreshAnswer() {
  const threadId = state.thread;
  const answer = await getJSON(`/threads/${threadId}/answer`);
  if (threadId !== state.thread) return;
  const panel = $("answer-panel");
  const alternatives = answer.alternatives;
  panel.dataset.established = String(answer.established);
  panel.hidden = !answer.established && !alternatives.length;
  const parts = [];
  if (answer.established) {
    const line = el("p", { class: "answer-established", "data-version-id": answer.version_id });
    line.append(el("strong", {}, "Established: "), wholeOnExpand(answer.content, 240));
    parts.push(line);
    const disputed = answer.dispute_groups.length ? `; disputed by ${heldBy(answer.dispute_groups)}` : "";
    const meta = el("p", { class: "meta" });
    meta.append(wholeOnExpand(`on ${heldBy(answer.support_groups)}${disputed}`, 200), ` · version ${short(answer.version_id)}`);
    parts.push(meta);
  } else {
    parts.push(el("p", { class: "answer-none" }, "No established answer" + (alternatives.length ? ": the live alternatives" : "")));
  }
  if (alternatives.length) {
    const list = el("ul", { class: "answer-alternatives" });
    for (const alt of alternatives.slice(0, ALTERNATIVES_SHOWN)) {
      const kind = alt.rival ? "rival" : alt.consolidated ? "also consolidated" : "alternative";
      const item = el("li", { "data-version-id": alt.version_id, "data-kind": kind });
      const disputed = alt.dispute_groups.length ? `; disputed by ${heldBy(alt.dispute_groups)}` : "";
      const support = el("span", { class: "meta" }, " — ");
      support.append(wholeOnExpand(`support ${heldBy(alt.support_groups)}${disputed}`, 200));
      item.append(el("span", { class: "kind" }, `${kind} `), wholeOnExpand(alt.content, 160), support);
      list.append(item);
    }
    if (alternatives.length > ALTERNATIVES_SHOWN) {
      list.append(el("li", { class: "meta" }, `and ${alternatives.length - ALTERNATIVES_SHOWN} more (council export)`));
    }
    parts.push(list);
  }
  $("answer").replaceChildren(...parts);
  $("answer-summary").textContent = answer.established
    ? `established · ${alternatives.length} other live proposition(s)`
    : `nothing established · ${alternatives.length} live alternative(s)`;
}

panels.push({
  name: "answer",
  refresh: refreshAnswer,
  wants: (e) => /^(node|edge|consolidation|retraction|claim)\./.test(e.kind) || e.kind === "run.output_applied",
});
