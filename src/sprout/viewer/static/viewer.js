// The episode viewer: one script for `sprout view` (reads the JSON API) and for
// report.html (reads the JSON embedded in the page). Plain DOM, no build step.
(function () {
  "use strict";

  const TIP = {
    task: "A task of this run: choose it to draw its search tree. The marks say, per method, whether it was resolved.",
    line: "An attempt: one horizontal line of turns. A root starts from the untouched task (checkpoint 0); a branch starts from its parent's checkpoint at its boundary and reuses the parent's turns up to there.",
    dot: "A turn: the model's reply and the shell calls it made. Its layer holds only the files this turn changed, which is why most layers are small. Click (or Enter) to open it.",
    starting: "The reviewer's starting turn: the first turn of a guided branch, written by the reviewer (not the actor) to set the branch on a new course.",
    restarts: "A root started again from checkpoint 0 in place of one whose checkpoint died with its cluster node and could not be rebuilt by running its recorded calls again.",
    branchPoint: "A branch point: the boundary (the checkpoint after turn k: files and messages exactly as they were then) that one or more branches left from. Their turns 1..k are reused, never replayed.",
    path: "The first passing path of this method: from the root's first turn to the last turn of the first attempt that passed.",
    prefix: "Tokens with prefixes counted once: a branch shares its parent's turns up to its boundary; counting that shared prefix once is what a prefix cache (or a tree-aware learner) pays.",
    spent: "Tokens spent: every prompt and completion token of every model call, shared prefixes counted again each time.",
    reused: "Turns reused: turns a branch inherited from its parent (its boundary) instead of running them again.",
    rate: "Resolve rate: tasks where at least one attempt of the method passed the verifier, over tasks run.",
    judge: "Never part of the learner's input: written by the verifier, the analyst or the reviewer about an attempt, not seen by the actor as it played.",
    cut: "Output cut here: the stored output is longer; the count says how many characters are left out of this view.",
    timeline: "Every turn of this task in the order it was committed (its created time).",
    plot: "Cumulative tokens spent (x) against tasks solved (y) per method, tasks in the order they finished: further up and to the left is cheaper.",
  };
  const COLORS = ["#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e"];
  const ROW = 34, DX = 30, LEFT = 190, TOP = 26;

  const embeddedNode = document.getElementById("sprout-data");
  const embedded = embeddedNode ? JSON.parse(embeddedNode.textContent) : null;
  const $ = (id) => document.getElementById(id);
  const state = {
    summary: null, status: null, task: null, tree: null, rows: {}, events: [], pos: -1,
    selected: null, timer: null, turns: {}, trees: {}, polling: null,
  };

  // data: the API, or the JSON embedded in report.html

  async function get(path) {
    if (embedded) {
      const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
      let found;
      if (parts[1] === "summary") found = embedded.summary;
      else if (parts[1] === "status") found = embedded.status;
      else if (parts[1] === "tasks") found = embedded.trees[parts[2]];
      else if (parts[1] === "turns") found = embedded.turns[parts[2] + "/" + parts[3]];
      if (found === undefined) throw new Error(path + ": not in this report");
      return found;
    }
    const response = await fetch(path, { cache: "no-store" });
    let body;
    try { body = await response.json(); } catch (e) { throw new Error(path + ": the server sent no JSON (" + response.status + ")"); }
    if (!response.ok) throw new Error(body.error || path + ": " + response.status);
    return body;
  }

  function esc(value) {
    return String(value === null || value === undefined ? "" : value)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "-");

  function showMessage(text) {
    const box = $("message");
    box.textContent = text || "";
    box.hidden = !text;
  }

  function statusOf(attempt) {
    if (attempt.passed) return "pass";
    if (attempt.status === "running") return "running";
    if (attempt.status === "stopped") return "stopped";
    if (attempt.status === "error") return "error";
    return "fail";
  }
  const STATUS_TIP = {
    pass: "passed: the verifier's tests all pass",
    fail: "failed: finished, and the verifier's tests do not all pass",
    running: "running: still being played",
    stopped: "stopped: its schedule needed no more turns (another attempt had passed)",
    error: "error: the attempt ended on an error",
  };

  // the summary and the task list

  function renderSummary() {
    const s = state.summary;
    $("run-path").textContent = s.run;
    const names = Object.keys(s.methods);
    let html = '<h2 title="Each method of the run side by side; the same figures as results.json">Methods</h2><div class="summary-row"><div>';
    html += '<table data-testid="methods-table"><thead><tr>' +
      '<th title="The search method">method</th>' +
      '<th title="' + esc(TIP.rate) + '">resolved</th>' +
      '<th title="' + esc(TIP.rate) + '">rate</th>' +
      '<th title="' + esc(TIP.spent) + '">tokens spent</th>' +
      '<th title="' + esc(TIP.prefix) + '">prefix counted once</th>' +
      '<th title="Attempts that played at least one turn">attempts</th>' +
      '<th title="Turns the actor (or reviewer) actually ran">turns run</th>' +
      '<th title="' + esc(TIP.reused) + '">turns reused</th></tr></thead><tbody>';
    names.forEach((name, i) => {
      const m = s.methods[name];
      const mark = m.tokens.estimated ? "~" : "";
      html += '<tr data-testid="method-row" data-method="' + esc(name) + '" title="' + esc(name) + ': ' + m.resolved + " of " + m.tasks + ' tasks resolved">' +
        '<td><span class="swatch" style="background:' + COLORS[i % COLORS.length] + '"></span>' + esc(name) + "</td>" +
        "<td>" + m.resolved + "/" + m.tasks + "</td><td>" + (100 * m.resolve_rate).toFixed(1) + "%</td>" +
        "<td>" + mark + fmt(m.tokens.spent) + "</td><td>" + mark + fmt(m.tokens.prefix_once) + "</td>" +
        "<td>" + m.attempts + "</td><td>" + m.turns_executed + "</td><td>" + m.turns_reused + "</td></tr>";
    });
    html += "</tbody></table>";
    if (names.some((n) => s.methods[n].tokens.estimated)) {
      html += '<p class="muted" title="The oracle models report no token usage">~ estimated from text length</p>';
    }
    html += "</div>" + plot(s, names) + "</div>";
    $("summary").innerHTML = html;
    renderTaskList();
  }

  function plot(s, names) {
    const W = 380, H = 170, L = 40, B = 30, T = 14, R = 12;
    let maxX = 1;
    names.forEach((n) => (s.curves[n] ? s.curves[n].points : []).forEach((p) => { maxX = Math.max(maxX, p.tokens); }));
    const maxY = Math.max(1, s.tasks.length);
    const x = (v) => L + (v / maxX) * (W - L - R);
    const y = (v) => H - B - (v / maxY) * (H - B - T);
    let svg = '<figure data-testid="plot" title="' + esc(TIP.plot) + '"><svg class="plot" width="' + W + '" height="' + H + '" role="img" aria-label="Cumulative tokens against tasks solved per method">';
    svg += '<line x1="' + L + '" y1="' + y(0) + '" x2="' + (W - R) + '" y2="' + y(0) + '" stroke="#8c959f"/>';
    svg += '<line x1="' + L + '" y1="' + y(0) + '" x2="' + L + '" y2="' + T + '" stroke="#8c959f"/>';
    svg += '<text x="' + (W - R) + '" y="' + (H - 6) + '" text-anchor="end">tokens spent (cumulative) — max ' + fmt(maxX) + "</text>";
    svg += '<text x="' + (L - 6) + '" y="' + (T + 4) + '" text-anchor="end">' + maxY + '</text><text x="' + (L - 6) + '" y="' + y(0) + '" text-anchor="end">0</text>';
    svg += '<text x="12" y="' + ((H - B + T) / 2) + '" transform="rotate(-90 12 ' + ((H - B + T) / 2) + ')" text-anchor="middle">tasks solved</text>';
    names.forEach((name, i) => {
      const curve = s.curves[name];
      if (!curve) return;
      const color = COLORS[i % COLORS.length];
      let points = [[x(0), y(0)]];
      let last = 0;
      curve.points.forEach((p) => { points.push([x(p.tokens), y(last)]); points.push([x(p.tokens), y(p.solved)]); last = p.solved; });
      svg += '<polyline data-testid="plot-line" data-method="' + esc(name) + '" fill="none" stroke-width="2" stroke="' + color + '" points="' + points.map((q) => q.join(",")).join(" ") + '"><title>' + esc(name + ": tasks solved against tokens spent (" + curve.order + " order)") + "</title></polyline>";
      curve.points.forEach((p) => {
        svg += '<circle r="3.5" fill="' + color + '" cx="' + x(p.tokens) + '" cy="' + y(p.solved) + '" data-tip="' + esc(name + " after " + p.task_id + ": " + fmt(p.tokens) + " tokens, " + p.solved + " solved") + '"><title>' + esc(name + " after " + p.task_id) + "</title></circle>";
      });
    });
    return svg + "</svg></figure>";
  }

  function renderTaskList() {
    const list = $("task-list");
    list.innerHTML = state.summary.tasks.map((t) => {
      const marks = Object.entries(t.methods).map(([m, r]) => m + (r.error ? " error" : r.resolved ? " ✓" : " ✗")).join(", ");
      return '<li><button type="button" data-testid="task-item" data-task="' + esc(t.id) + '" aria-current="' + (t.id === state.task) + '" title="' + esc(TIP.task + " " + (marks || "not started")) + '">' +
        esc(t.id) + '<br><small class="muted">' + esc(marks || "not started") + "</small></button></li>";
    }).join("");
  }

  // one task's tree, drawn as a subway map

  async function openTask(taskId, keep) {
    try {
      const tree = state.trees[taskId] && !keep ? state.trees[taskId] : await get("/api/tasks/" + encodeURIComponent(taskId) + "/tree");
      state.trees[taskId] = tree;
      if (state.task !== taskId) { state.selected = null; pause(); }
      state.task = taskId;
      state.tree = tree;
      showMessage("");
      renderTaskList();
      renderTree();
    } catch (error) { showMessage(error.message); }
  }

  function layout(tree) {
    const byId = {};
    tree.attempts.forEach((a) => { byId[a.id] = a; });
    const children = {};
    tree.attempts.forEach((a) => { if (a.parent !== null && byId[a.parent]) (children[a.parent] = children[a.parent] || []).push(a); });
    const order = [];
    const visit = (a) => { order.push(a); (children[a.id] || []).forEach(visit); };
    const methods = Object.keys(state.summary.methods);
    tree.attempts.forEach((a) => { if (!methods.includes(a.method)) methods.push(a.method); });
    methods.forEach((m) => tree.attempts.filter((a) => a.method === m && (a.parent === null || !byId[a.parent])).forEach(visit));
    const rows = {};
    order.forEach((a, i) => { rows[a.id] = i; });
    return { order, rows, byId };
  }

  function renderTree() {
    const tree = state.tree;
    $("task-view").hidden = false;
    $("task-title").textContent = tree.task_id;
    $("task-title").title = "Task " + tree.task_id + ": " + tree.attempts.length + " attempts, " + tree.branch_points.length + " branch points";
    const { order, rows, byId } = layout(tree);
    state.rows = rows;
    const xOf = (i) => LEFT + 16 + i * DX;
    const yOf = (id) => TOP + rows[id] * ROW;
    const maxIndex = Math.max(1, ...tree.attempts.map((a) => a.last_index));
    const width = xOf(maxIndex) + 40, height = TOP + order.length * ROW + 8;
    const onPath = new Set();
    let svg = '<svg width="' + width + '" height="' + height + '" role="group" aria-label="Search tree of ' + esc(tree.task_id) + '">';
    // turn index ruler
    for (let i = 0; i <= maxIndex; i++) {
      svg += '<text x="' + xOf(i) + '" y="12" text-anchor="middle" data-tip="' + esc(i === 0 ? "Checkpoint 0: the untouched task" : "Boundary " + i + ": the checkpoint after turn " + i) + '">' + i + "</text>";
    }
    // round bands: alternate rows of the same round share a background
    order.forEach((a) => {
      if (a.round % 2 === 1) svg += '<rect class="round-band" x="0" y="' + (yOf(a.id) - ROW / 2) + '" width="' + width + '" height="' + ROW + '" data-tip="Round ' + a.round + ': branches the reviewer planned together"/>';
    });
    // first passing paths
    Object.entries(tree.passing_paths).forEach(([method, path]) => {
      if (!path.length) return;
      // it starts where its first attempt starts: checkpoint 0 of the root, or the
      // branch point of a branch from boundary 0
      const first = byId[path[0][0]];
      const from = first && first.parent !== null && byId[first.parent] ? first.parent : path[0][0];
      const pts = [[xOf(first && from !== first.id ? first.boundary : 0), yOf(from)]];
      path.forEach(([aid, idx]) => { onPath.add(aid + "/" + idx); if (rows[aid] !== undefined) pts.push([xOf(idx), yOf(aid)]); });
      svg += '<polyline class="pathline" data-testid="passing-path" data-method="' + esc(method) + '" points="' + pts.map((p) => p.join(",")).join(" ") + '" data-tip="' + esc(TIP.path + " (" + method + ")") + '"><title>' + esc("First passing path of " + method) + "</title></polyline>";
    });
    // attempt lines
    order.forEach((a) => {
      const st = statusOf(a);
      const y = yOf(a.id);
      const hasParent = a.parent !== null && byId[a.parent];
      const x0 = xOf(hasParent ? a.boundary : 0), x1 = xOf(a.last_index);
      let d;
      if (hasParent) {
        const yp = yOf(a.parent);
        d = "M" + x0 + "," + yp + " C" + (x0 + DX / 2) + "," + yp + " " + x0 + "," + y + " " + (x0 + DX / 2) + "," + y + " L" + Math.max(x1, x0 + DX / 2) + "," + y;
      } else {
        d = "M" + x0 + "," + y + " L" + x1 + "," + y;
      }
      const label = a.method + " #" + a.id + " " + a.kind + (a.round ? " r" + a.round : "");
      const tip = "Attempt " + a.id + " (" + a.kind + " of " + a.method + (a.round ? ", round " + a.round : "") +
        (hasParent ? ", from attempt " + a.parent + " at boundary " + a.boundary : "") + "): " + STATUS_TIP[st] +
        (a.end_reason ? "; ended: " + a.end_reason : "") + ". " + TIP.line;
      svg += '<g data-testid="attempt-line" data-attempt="' + a.id + '" data-status="' + st + '" data-kind="' + a.kind + '" data-round="' + a.round + '" data-tip="' + esc(tip) + '">' +
        "<title>" + esc("Attempt " + a.id + ": " + st) + "</title>" +
        '<text class="attempt-label" x="6" y="' + (y + 4) + '" tabindex="0" role="button" data-testid="attempt-label" data-attempt="' + a.id + '" aria-label="' + esc(label + ": open its first turn") + '">' + esc(label) + "</text>" +
        '<path class="line st-' + st + '" d="' + d + '"/>' +
        '<path class="hit" data-testid="attempt-hit" d="' + d + '"/>';
      if (!hasParent) svg += '<circle class="branch-point" r="4" cx="' + x0 + '" cy="' + y + '" data-tip="Checkpoint 0: the untouched task this root starts from"/>';
      a.turns.forEach((t) => {
        const starting = t.author === "reviewer";
        const key = a.id + "/" + t.index;
        const tTip = (starting ? TIP.starting : TIP.dot) + " Attempt " + a.id + ", turn " + t.index + ": " + (t.first_line || "(no text)") +
          " — " + t.calls + " call(s), " + fmt(t.tokens.prompt + t.tokens.completion) + " tokens" + (onPath.has(key) ? "; on the first passing path" : "");
        svg += '<circle class="turn-dot st-' + st + (starting ? " starting" : "") + (onPath.has(key) ? " on-path" : "") + '" r="' + (starting ? 8 : 7) + '" cx="' + xOf(t.index) + '" cy="' + y +
          '" tabindex="0" role="button" aria-label="' + esc("Attempt " + a.id + " turn " + t.index + (starting ? ", the reviewer's starting turn" : "")) +
          '" data-testid="turn-dot" data-attempt="' + a.id + '" data-index="' + t.index + '" data-author="' + esc(t.author) + '" data-starting="' + starting + '" data-tip="' + esc(tTip) + '">' +
          "<title>" + esc("Attempt " + a.id + " turn " + t.index) + "</title></circle>";
      });
      svg += "</g>";
    });
    // branch points on top of the lines
    tree.branch_points.forEach((p) => {
      if (rows[p.attempt] === undefined) return;
      svg += '<circle class="branch-point" data-testid="branch-point" r="5" cx="' + xOf(p.boundary) + '" cy="' + yOf(p.attempt) + '" tabindex="0" role="button" data-attempt="' + p.attempt +
        '" data-boundary="' + p.boundary + '" data-branches="' + p.branches.join(",") + '" aria-label="' + esc("Branch point: attempt " + p.attempt + " at boundary " + p.boundary) +
        '" data-tip="' + esc(TIP.branchPoint + " Attempt " + p.attempt + ", boundary " + p.boundary + ": branches " + p.branches.join(", ") + ".") + '"><title>Branch point</title></circle>';
    });
    svg += "</svg>";
    $("tree").innerHTML = svg;
    $("legend").innerHTML = ["pass", "fail", "running", "stopped", "error"].map((s) =>
      '<span data-testid="legend-item" title="' + esc(STATUS_TIP[s]) + '"><span class="swatch st-' + s + '"></span>' + s + "</span>").join("") +
      '<span title="' + esc(TIP.starting) + '"><span class="swatch st-fail" style="border:2px solid #1b1f24"></span>reviewer\'s starting turn</span>' +
      '<span title="' + esc(TIP.branchPoint) + '">○ branch point</span>' +
      '<span title="' + esc(TIP.path) + '"><span class="swatch" style="background:#bf8700;opacity:.5"></span>first passing path</span>';
    buildEvents();
    if (state.selected) select(state.selected.attempt, state.selected.index, { keepPanel: true });
    else updatePosition();
  }

  // the timeline: the whole search (every own turn, in the order it was committed), or
  // one attempt's path (the turns it inherited from its parents, then its own)
  function buildEvents() {
    const tree = state.tree;
    state.events = [];
    if (!tree) return;
    const scoped = $("scope").value === "attempt" && state.selected;
    if (scoped) {
      const byId = new Map(tree.attempts.map((a) => [a.id, a]));
      const path = (a, upto) => {
        const parent = a.parent != null ? byId.get(a.parent) : null;
        const inherited = parent ? path(parent, Math.min(upto, a.boundary)) : [];
        return inherited.concat(a.turns.filter((t) => t.index <= upto).map((t) => ({ attempt: a.id, index: t.index })));
      };
      const chosen = byId.get(state.selected.attempt);
      if (chosen) state.events = path(chosen, Infinity);
    } else {
      tree.attempts.forEach((a) => a.turns.forEach((t) => state.events.push({ attempt: a.id, index: t.index, created: t.created })));
      state.events.sort((p, q) => ((p.created ?? Infinity) - (q.created ?? Infinity)) || (p.attempt - q.attempt) || (p.index - q.index));
    }
    $("timeline").max = String(Math.max(0, state.events.length - 1));
  }

  // selection, the player and the URL

  function updatePosition() {
    const n = state.events.length;
    const sel = state.selected;
    $("position").textContent = sel ? "turn " + (state.pos + 1) + " of " + n + " · attempt " + sel.attempt + " turn " + sel.index : n + " turns; none selected";
    $("timeline").value = String(Math.max(0, state.pos));
  }

  function select(attemptId, index, options) {
    options = options || {};
    attemptId = Number(attemptId); index = Number(index);
    state.selected = { attempt: attemptId, index: index };
    const onTimeline = (e) => e.attempt === attemptId && e.index === index;
    if ($("scope").value === "attempt" && !state.events.some(onTimeline)) buildEvents();
    state.pos = state.events.findIndex((e) => e.attempt === attemptId && e.index === index);
    document.querySelectorAll(".turn-dot.selected").forEach((d) => d.classList.remove("selected"));
    const dot = document.querySelector('.turn-dot[data-attempt="' + attemptId + '"][data-index="' + index + '"]');
    if (dot) { dot.classList.add("selected"); if (options.focus) dot.focus(); }
    updatePosition();
    const hash = "#task=" + encodeURIComponent(state.task) + "&attempt=" + attemptId + "&turn=" + index;
    if (location.hash !== hash) history.replaceState(null, "", hash);
    renderAttempt(attemptId);
    // a committed turn never changes: a refresh while the run is live keeps the panel
    // (and its scroll position) as it is
    if (!(options.keepPanel && state.panelKey === attemptId + "/" + index)) loadTurn(attemptId, index);
  }

  function step(delta) {
    if (!state.events.length) return;
    const next = Math.min(state.events.length - 1, Math.max(0, state.pos + delta));
    const e = state.events[next];
    select(e.attempt, e.index);
    return next;
  }

  function play() {
    if (!state.events.length) return;
    if (state.pos >= state.events.length - 1) state.pos = -1;
    $("play").textContent = "Pause";
    $("play").setAttribute("aria-pressed", "true");
    $("play").title = "Pause the player (space)";
    state.timer = setInterval(() => {
      if (state.pos >= state.events.length - 1) { pause(); return; }
      step(1);
    }, 800);
    step(1);
  }

  function pause() {
    if (state.timer) clearInterval(state.timer);
    state.timer = null;
    $("play").textContent = "Play";
    $("play").setAttribute("aria-pressed", "false");
    $("play").title = "Play the search in the order things happened (space)";
  }
  const togglePlay = () => (state.timer ? pause() : play());

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    return { task: params.get("task"), attempt: params.get("attempt"), turn: params.get("turn") };
  }

  async function applyHash() {
    const h = readHash();
    if (!h.task) return;
    if (h.task !== state.task) await openTask(h.task);
    if (h.attempt && h.turn && state.tree) select(h.attempt, h.turn);
  }

  // an attempt's verdicts, and one turn in full

  function renderAttempt(attemptId) {
    const a = state.tree.attempts.find((x) => x.id === attemptId);
    if (!a) { $("attempt-info").innerHTML = ""; return; }
    const st = statusOf(a);
    let html = '<h3 title="' + esc(TIP.line) + '">Attempt ' + a.id + " · " + esc(a.kind) + " of " + esc(a.method) + (a.round ? " · round " + a.round : "") + "</h3>";
    html += '<div class="kv"><span title="' + esc(STATUS_TIP[st]) + '">status</span><span data-testid="attempt-status">' + esc(st) + (a.end_reason ? " (" + esc(a.end_reason) + ")" : "") + "</span>";
    if (a.restarts != null) html += '<span title="' + esc(TIP.restarts) + '">restarts</span><span data-testid="attempt-restarts">attempt ' + a.restarts + " (its checkpoint was lost with its node), from the untouched task</span>";
    if (a.parent !== null) html += '<span title="' + esc(TIP.branchPoint) + '">from</span><span>attempt ' + a.parent + " at boundary " + a.boundary + (a.boundary ? " (turns 1.." + a.boundary + " reused)" : " (the untouched task: no turns reused)") + "</span>";
    html += '<span title="' + esc(TIP.spent) + '">tokens</span><span>' + fmt(a.tokens.spent) + " spent, " + fmt(a.tokens.prefix_once) + " with prefix counted once</span></div>";
    const d = a.diagnostics;
    if (d) {
      const n = (d.passed || 0) + (d.failed || 0) + (d.errored || 0);
      html += '<div class="judge diag" data-testid="diagnostics" title="' + esc(TIP.judge) + '"><div class="never">Verifier — never part of the learner\'s input</div>' +
        (n ? '<strong data-testid="tests-passed">' + (d.passed || 0) + " of " + n + " tests passed</strong> " : "") + (d.summary ? '<span class="muted">' + esc(d.summary) + "</span>" : "");
      if (d.required_missing.length) html += "<div>required but not run: " + esc(d.required_missing.join(", ")) + "</div>";
      if (d.failing.length) html += "<ul>" + d.failing.map((t) => '<li data-testid="failing-test"><code>' + esc(t.name) + "</code> " + esc(t.outcome) + (t.message ? "<pre>" + esc(t.message) + "</pre>" : "") + "</li>").join("") + "</ul>";
      html += "</div>";
    }
    if (a.analysis) {
      html += '<div class="judge" data-testid="analysis" title="' + esc(TIP.judge) + '"><div class="never">Analyst\'s reading — never part of the learner\'s input</div>' + kv(a.analysis) + "</div>";
    }
    if (a.review) {
      const plan = a.review.plan || {};
      html += '<div class="judge" data-testid="review" title="' + esc(TIP.judge) + '"><div class="never">Reviewer\'s choice — never part of the learner\'s input</div>' +
        "<div>branch from attempt " + esc(plan.parent_id) + " at boundary " + esc(plan.boundary) + (a.review.source ? " · " + esc(a.review.source) : "") + "</div>" +
        (plan.reason ? "<div><strong>reason:</strong> " + esc(plan.reason) + "</div>" : "") +
        (a.review.fallback_reason ? '<div class="muted">fallback: ' + esc(a.review.fallback_reason) + "</div>" : "") +
        (plan.starting_turn ? '<div title="' + esc(TIP.starting) + '"><strong>starting turn:</strong><pre>' + esc(typeof plan.starting_turn === "string" ? plan.starting_turn : JSON.stringify(plan.starting_turn, null, 2)) + "</pre></div>" : "") + "</div>";
    }
    $("attempt-info").innerHTML = html;
  }

  function kv(obj) {
    if (typeof obj !== "object" || obj === null) return "<pre>" + esc(obj) + "</pre>";
    return '<div class="kv">' + Object.entries(obj).map(([k, v]) => "<span>" + esc(k) + "</span><span>" +
      (typeof v === "string" ? esc(v) : "<code>" + esc(JSON.stringify(v)) + "</code>") + "</span>").join("") + "</div>";
  }

  async function loadTurn(attemptId, index) {
    const key = attemptId + "/" + index;
    const panel = $("turn-panel");
    panel.hidden = false;
    if (!state.turns[key]) panel.innerHTML = '<p class="muted">loading turn ' + index + "…</p>";
    try {
      const detail = state.turns[key] || (await get("/api/turns/" + attemptId + "/" + index));
      state.turns[key] = detail;
      const sel = state.selected;
      if (sel && sel.attempt === attemptId && sel.index === index) renderTurn(detail);
    } catch (error) { panel.innerHTML = '<p class="message">' + esc(error.message) + "</p>"; }
  }

  function cutMark(n) {
    return n ? '<span class="cut" data-testid="cut-mark" title="' + esc(TIP.cut) + '">… ' + fmt(n) + " more characters cut here …</span>" : "";
  }

  function diffHtml(text) {
    return text.split("\n").map((line) => {
      const cls = line.startsWith("+") && !line.startsWith("+++") ? "diff-add" : line.startsWith("-") && !line.startsWith("---") ? "diff-del" : "";
      return cls ? '<span class="' + cls + '">' + esc(line) + "</span>" : esc(line);
    }).join("\n");
  }

  function renderTurn(t) {
    const tok = t.tokens;
    const mark = tok.estimated ? "~" : "";
    let html = '<h2 data-testid="turn-title" title="One turn: the model\'s reply, its shell calls and what they changed">Attempt ' + t.attempt_id + " · turn " + t.index + "</h2>";
    if (t.owner !== t.attempt_id) html += '<p class="muted" title="' + esc(TIP.branchPoint) + '">inherited from attempt ' + t.owner + "</p>";
    html += '<div class="kv">' +
      '<span title="Who wrote this turn: the actor, or the reviewer for a branch\'s starting turn">author</span><span data-testid="turn-author">' + esc(t.author) + (t.author === "reviewer" ? " (starting turn)" : "") + "</span>" +
      '<span title="Prompt, completion and cached prompt tokens of this turn\'s model call (~: estimated from text length)">tokens</span><span>' + mark + fmt(tok.prompt) + " prompt, " + mark + fmt(tok.completion) + " completion, " + fmt(tok.cached) + " cached</span>" +
      '<span title="Wall time of the turn: the model call and its shell calls">time</span><span>' + (t.duration_s === null || t.duration_s === undefined ? "-" : t.duration_s.toFixed(2) + " s") + "</span>" +
      '<span title="The checkpoint (layer) holding the files after this turn">checkpoint</span><span><code>' + esc(t.checkpoint) + "</code></span></div>";
    if (t.format_error) html += '<p class="message" title="The reply could not be read as calls">format error: ' + esc(t.format_error) + "</p>";
    html += '<h3 title="The model\'s reply: its reasoning and the calls it wrote">Reasoning</h3><pre data-testid="turn-text">' + esc(t.text) + "</pre>";
    html += '<h3 title="Each shell call of the turn and what it printed">Calls (' + t.calls.length + ")</h3>";
    t.calls.forEach((c, i) => {
      html += '<div class="call" data-testid="call" title="Shell call ' + (i + 1) + ": exit " + esc(c.exit_code) + '"><pre>$ ' + esc(c.command) + "</pre>" +
        '<div class="muted">exit ' + esc(c.exit_code) + (c.timed_out ? " · timed out" : "") + (c.truncated ? " · output truncated when stored" : "") + (c.duration_s ? " · " + c.duration_s.toFixed(2) + " s" : "") + "</div>" +
        '<pre data-testid="call-output">' + (c.output ? esc(c.output) : '<span class="muted">(no output)</span>') + cutMark(c.cut) + "</pre></div>";
    });
    html += '<h3 title="The files this turn\'s layer changed: the difference between the previous checkpoint and this one. A layer holds only these, so it is small.">Files changed (' + t.files.length + ")</h3>";
    if (t.files_error) html += '<p class="message">' + esc(t.files_error) + "</p>";
    html += '<div data-testid="files">' + t.files.map((f) =>
      '<div class="call" data-testid="file" title="' + esc(f.kind + ": " + f.path) + '"><code>' + esc(f.path) + "</code> " + esc(f.kind) + (f.size !== null ? " · " + fmt(f.size) + " bytes" : "") + (f.binary ? " · binary" : "") +
      (f.diff ? '<pre data-testid="diff">' + diffHtml(f.diff) + cutMark(f.diff_cut) + "</pre>" : "") + "</div>").join("") + "</div>";
    if (t.noise.length) html += '<p class="muted" title="Caches and git bookkeeping: changed, but not the agent\'s work">' + t.noise.length + " bookkeeping file(s) also changed</p>";
    state.panelKey = t.owner === t.attempt_id ? t.attempt_id + "/" + t.index : null;
    $("turn-panel").hidden = false;
    $("turn-panel").innerHTML = html;
  }

  // events

  document.addEventListener("click", (event) => {
    const target = event.target;
    const task = target.closest("[data-testid=task-item]");
    if (task) { openTask(task.dataset.task).then(() => history.replaceState(null, "", "#task=" + encodeURIComponent(task.dataset.task))); return; }
    const dot = target.closest(".turn-dot");
    if (dot) { pause(); select(dot.dataset.attempt, dot.dataset.index); return; }
    const point = target.closest("[data-testid=branch-point]");
    if (point) { pause(); openBranch(Number(point.dataset.branches.split(",")[0])); return; }
    const line = target.closest("[data-testid=attempt-line]");
    if (line) { pause(); openBranch(Number(line.dataset.attempt)); }
  });

  function openBranch(attemptId) {
    // an attempt's first own turn: for a branch, the reviewer's starting turn
    const a = state.tree.attempts.find((x) => x.id === attemptId);
    if (a && a.turns.length) select(a.id, a.turns[0].index, { focus: true });
    else if (a) renderAttempt(a.id);
  }

  $("play").addEventListener("click", (e) => { e.stopPropagation(); togglePlay(); });
  $("step-back").addEventListener("click", () => { pause(); step(-1); });
  $("step-forward").addEventListener("click", () => { pause(); step(1); });
  $("scope").addEventListener("change", () => {
    pause();
    const sel = state.selected;
    buildEvents();
    if (sel) select(sel.attempt, sel.index, { keepPanel: true });
    else updatePosition();
  });
  $("timeline").addEventListener("input", (e) => { pause(); const ev = state.events[Number(e.target.value)]; if (ev) select(ev.attempt, ev.index); });
  window.addEventListener("hashchange", applyHash);

  document.addEventListener("keydown", (event) => {
    const t = event.target;
    const tag = t.tagName ? t.tagName.toLowerCase() : "";
    if (tag === "textarea" || tag === "select" || (tag === "input" && t.type !== "range") || t.isContentEditable) return;
    if (event.key === "Enter" && t.classList && (t.classList.contains("turn-dot") || t.classList.contains("attempt-label") || t.classList.contains("branch-point"))) { t.dispatchEvent(new MouseEvent("click", { bubbles: true })); return; }
    if (!state.tree || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === " ") { event.preventDefault(); togglePlay(); }
    else if (tag !== "input" && event.key === "ArrowRight") { event.preventDefault(); pause(); step(1); }
    else if (tag !== "input" && event.key === "ArrowLeft") { event.preventDefault(); pause(); step(-1); }
  });

  // hover (or focus) anything for what it is
  const tooltip = $("tooltip");
  function tipFor(node) {
    const el = node && node.closest ? node.closest("[data-tip],[title]") : null;
    return el ? el.getAttribute("data-tip") || el.getAttribute("title") : null;
  }
  function showTip(text, x, y) {
    if (!text) { tooltip.hidden = true; return; }
    tooltip.textContent = text;
    tooltip.hidden = false;
    tooltip.style.left = Math.min(x + 14, window.innerWidth - 350) + "px";
    tooltip.style.top = Math.min(y + 14, window.innerHeight - 80) + "px";
  }
  document.addEventListener("mouseover", (e) => showTip(tipFor(e.target), e.clientX, e.clientY));
  document.addEventListener("mouseleave", () => { tooltip.hidden = true; });
  document.addEventListener("focusin", (e) => {
    const r = e.target.getBoundingClientRect ? e.target.getBoundingClientRect() : { left: 0, bottom: 0 };
    showTip(tipFor(e.target), r.left, r.bottom);
  });

  // start, and keep up with a run still being written

  async function refresh() {
    const [summary, status] = await Promise.all([get("/api/summary"), get("/api/status")]);
    state.summary = summary;
    state.status = status;
    $("live").hidden = !status.running.length;
    renderSummary();
  }

  async function poll() {
    try {
      const status = await get("/api/status");
      const wasRunning = state.status && state.status.running.length;
      if (status.running.length || wasRunning) {
        await refresh();
        if (state.task) await openTask(state.task, true);
      }
    } catch (error) { showMessage(error.message); }
  }

  async function start() {
    try {
      await refresh();
      if (location.hash) await applyHash();
      else if (state.summary.tasks.length) await openTask(state.summary.tasks[0].id);
      else showMessage("This run holds no task yet" + (embedded ? "." : "; the page refreshes while it runs."));
    } catch (error) { showMessage(error.message); }
    if (!embedded) state.polling = setInterval(poll, 3000);
  }
  start();
})();
