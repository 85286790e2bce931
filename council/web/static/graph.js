// The thread's graph panel and its stable memory (GET /threads/{id}/graph), drawn as
// SVG by dependence. Loaded before app.js, whose state, el and svg it uses when called.

async function refreshGraph() {
  const threadId = state.thread;
  const graph = await getJSON(`/threads/${threadId}/graph`);
  if (threadId !== state.thread) return;
  state.graph = graph;
  for (const node of graph.nodes) {
    for (const version of node.versions) {
      const before = state.claimCounts.get(version.version_id) || 0;
      state.claimCounts.set(version.version_id, version.claims);
      if (version.claims > 0 && version.claims !== before) {
        schedule(`groups:${version.version_id}`, () => refreshGroups(version.version_id));
      }
    }
  }
  renderGraph(graph);
  renderMemory(graph);
}

function headOf(node) {
  return node.versions.find((v) => v.version_id === node.head_version_id) || node.versions[node.versions.length - 1];
}

// Columns by dependence: a node sits right of every node its head points to.
function layout(graph) {
  const nodeOfVersion = new Map();
  for (const node of graph.nodes) for (const v of node.versions) nodeOfVersion.set(v.version_id, node.logical_node_id);
  const targets = new Map(graph.nodes.map((n) => [n.logical_node_id, new Set()]));
  for (const edge of graph.edges) {
    const from = nodeOfVersion.get(edge.from_version_id);
    const to = nodeOfVersion.get(edge.to_version_id);
    if (from && to && from !== to) targets.get(from).add(to);
  }
  const level = new Map();
  const depth = (id, seen) => {
    if (level.has(id)) return level.get(id);
    if (seen.has(id)) return 0; // the ledger keeps a DAG; this only guards the page
    seen.add(id);
    let d = 0;
    for (const t of targets.get(id)) d = Math.max(d, depth(t, seen) + 1);
    level.set(id, d);
    return d;
  };
  const columns = [];
  for (const node of graph.nodes) {
    const d = depth(node.logical_node_id, new Set());
    (columns[d] = columns[d] || []).push(node);
  }
  const position = new Map();
  columns.forEach((column, x) =>
    (column || []).forEach((node, y) => position.set(node.logical_node_id, { x: 20 + x * 250, y: 20 + y * 90 })),
  );
  return { position, nodeOfVersion, width: 40 + columns.length * 250, height: 40 + Math.max(1, ...columns.map((c) => (c || []).length)) * 90 };
}

function renderGraph(graph) {
  const { position, nodeOfVersion, width, height } = layout(graph);
  const box = $("graph");
  box.setAttribute("viewBox", `0 0 ${Math.max(width, 300)} ${Math.max(height, 120)}`);
  box.setAttribute("height", String(Math.min(Math.max(height, 120), 640)));
  const live = new Map(graph.consolidations.filter((c) => c.status === "live").map((c) => [c.logical_node_id, c]));
  const memory = new Map(graph.memory.map((m) => [m.logical_node_id, m]));
  const W = 210;
  const H = 62;

  const edges = graph.edges.map((edge) => {
    const a = position.get(nodeOfVersion.get(edge.from_version_id));
    const b = position.get(nodeOfVersion.get(edge.to_version_id));
    if (!a || !b) return null;
    const [x1, y1, x2, y2] = [a.x, a.y + H / 2, b.x + W, b.y + H / 2];
    const bend = Math.max(30, Math.abs(x1 - x2) / 2);
    const path = svg("path", {
      d: `M ${x1} ${y1} C ${x1 - bend} ${y1}, ${x2 + bend} ${y2}, ${x2} ${y2}`,
      class: `edge edge-${edge.kind}`,
      "marker-end": "url(#arrow)",
      "data-edge-id": edge.id,
      "data-kind": edge.kind,
    });
    path.append(svg("title", {}, edge.kind));
    return path;
  });
  $("graph-edges").replaceChildren(...edges.filter(Boolean));

  const nodes = graph.nodes.map((node) => {
    const head = headOf(node);
    const at = position.get(node.logical_node_id);
    const consolidation = live.get(node.logical_node_id);
    const item = memory.get(node.logical_node_id);
    const group = svg("g", {
      class: `node status-${head.status}`,
      transform: `translate(${at.x} ${at.y})`,
      "data-logical-node-id": node.logical_node_id,
      "data-version-id": head.version_id,
      "data-status": head.status,
      "data-consolidated": consolidation ? "true" : "false",
      "data-memory-status": item ? item.status : "",
      tabindex: "0",
      role: "button",
      "aria-label": `node: ${head.content}`,
    });
    // The box holds the start of the text; a click (or Enter) shows it whole below the graph.
    const show = () => showNodeText(head);
    group.addEventListener("click", show);
    group.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        show();
      }
    });
    group.append(
      svg("title", {}, `${head.content}\n(v${head.version_no}, ${head.status}, ${head.claims} claims)`),
      svg("rect", { width: W, height: H, rx: 8 }),
      svg("text", { x: 10, y: 20, class: "content" }, clip(head.content, 30)),
      svg("text", { x: 10, y: 38, class: "meta" }, `v${head.version_no} · ${head.status} · ${head.claims} claims`),
    );
    if (item) group.append(svg("text", { x: 10, y: 54, class: `meta memory-${item.status}` }, `memory: ${item.status}`));
    return group;
  });
  $("graph-nodes").replaceChildren(...nodes);
  $("graph-summary").textContent = `${graph.nodes.length} nodes · ${graph.edges.length} edges · ${live.size} consolidated`;
}

function showNodeText(head) {
  const shown = $("node-text");
  shown.dataset.versionId = head.version_id;
  shown.textContent = `${head.content} (v${head.version_no}, ${head.status}, ${head.claims} claims; version ${short(head.version_id)})`;
}

function renderMemory(graph) {
  const content = new Map();
  for (const node of graph.nodes) for (const v of node.versions) content.set(v.version_id, v.content);
  const items = graph.consolidations.map((c) => {
    const item = graph.memory.find((m) => m.consolidation_id === c.id);
    const li = el("li", {
      "data-consolidation-id": c.id,
      "data-consolidation-status": c.status,
      "data-memory-status": item ? item.status : "",
    });
    li.append(
      el("span", { class: `badge memory-${item ? item.status : "none"}` }, item ? item.status : c.status),
      " ",
      wholeOnExpand(content.get(c.node_version_id) || c.node_version_id, 90),
      " ",
      el("small", {}, `consolidation ${short(c.id)} (${c.status})`),
    );
    return li;
  });
  $("memory").replaceChildren(...(items.length ? items : [el("li", { class: "empty" }, "nothing consolidated yet")]));
}
