// The memrl-bench episode viewer (memrl_bench/report/viewer.py writes the pages and data).
// A run's data arrives as data/<n>.js calling memrlViewer.add(n, base64 gzip JSON, fields known
// only once the whole folder is loaded, such as its variant); the page
// <n>.html shows one run, compare.html two runs side by side. No network, no server.
"use strict";

const memrlViewer = (() => {
  const packed = {};
  const extra = {};
  const waiting = {};
  const runs = {};
  const ROW_LIMIT = 2000; // rows drawn at once; the search narrows the rest

  const css = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: 1400px; margin: 0 auto; padding: 20px 28px 48px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 18px 0 6px; } h3 { font-size: 14px; margin: 12px 0 4px; }
.meta { color: #555; margin: 0 0 10px; } .warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: 6px 10px; }
a { color: #0b5cad; } .scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 4px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #f0f0f3; } td.text, th.text { text-align: left; }
tr.ok td:nth-child(6) { color: #1e6b32; } tr.fail td:nth-child(6) { color: #a01a1a; }
tr.current td { background: #fff8d0; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f8; padding: 6px 8px; margin: 3px 0; font-size: 12.5px; }
mark.memory { background: #fff0a8; outline: 1px solid #e0c200; }
.episode { border: 1px solid #ccd; padding: 8px 14px; margin: 10px 0; background: #fcfcff; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.absent { color: #888; font-style: italic; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; background: #eee; font-size: 12px; margin-right: 3px; }
.badge.success { background: #e6f4ea; color: #1e6b32; } .badge.failure { background: #fde8e8; color: #a01a1a; }
input[type=search] { width: 28em; padding: 3px 6px; } select { max-width: 40em; }
details > summary { cursor: pointer; }
`;

  function add(n, data, fields) {
    packed[n] = data;
    extra[n] = fields || {};
    (waiting[n] || []).forEach((resolve) => resolve());
  }

  function fetchScript(n) {
    return new Promise((resolve, reject) => {
      if (packed[n] !== undefined) return resolve();
      (waiting[n] = waiting[n] || []).push(resolve);
      if (!document.querySelector(`script[src="data/${n}.js"]`)) {
        const tag = document.createElement("script");
        tag.src = `data/${n}.js`;
        tag.onerror = () => reject(new Error(`cannot load data/${n}.js`));
        document.body.appendChild(tag);
      }
    });
  }

  async function load(n) {
    if (runs[n]) return runs[n];
    await fetchScript(n);
    const bytes = Uint8Array.from(atob(packed[n]), (c) => c.charCodeAt(0));
    const text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
    runs[n] = Object.assign(JSON.parse(text), extra[n]);
    runs[n].byId = Object.fromEntries(runs[n].episodes.map((e) => [e.episode_id, e]));
    return runs[n];
  }

  // h("a", {href: "#x"}, "text", child...): an element; strings become text (never HTML).
  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const absent = (what) => h("span", { class: "absent" }, `${what}: not recorded`);
  const num = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : x === undefined || x === null ? "—" : String(x));
  const phaseName = (e) => (e.phase === "test" ? e.split : e.phase);
  const tokens = (e) => ((e.act_usage || {}).prompt_tokens || 0) + ((e.act_usage || {}).completion_tokens || 0);
  const latency = (e) => Object.values(e.latency_s || {}).reduce((a, b) => a + (typeof b === "number" ? b : 0), 0);
  const outcome = (success) => h("span", { class: `badge ${success ? "success" : "failure"}` }, success ? "success" : "failure");

  // The text of a message with the memory spans marked.
  function marked(content, spans) {
    const node = h("pre", {});
    let at = 0;
    for (const [start, end] of spans || []) {
      if (start < at) continue;
      node.append(content.slice(at, start), h("mark", { class: "memory", title: "memory section (from the method)" }, content.slice(start, end)));
      at = end;
    }
    node.append(content.slice(at));
    return node;
  }

  function retrievedTable(e, run, link) {
    if (!(e.retrieved || []).length) return h("p", { class: "absent" }, "No memory retrieved.");
    const rows = e.retrieved.map((r, rank) => {
      const source = run.byId[r.source_episode_id];
      const where = `${r.source_task_id || "?"}, epoch ${r.source_epoch}` + (r.source_success === true ? ", success" : r.source_success === false ? ", failure" : "");
      const provenance = source ? h("a", { href: link(r.source_episode_id), class: "provenance" }, r.source_episode_id) : h("span", {}, r.source_episode_id || "—");
      const content = run.items[r.item_id];
      return h(
        "tr",
        { class: "retrieved" },
        h("td", {}, rank + 1),
        h("td", { class: "text" }, r.item_id, content ? h("details", {}, h("summary", {}, "content"), h("pre", {}, content)) : null),
        h("td", { class: "similarity" }, num(r.similarity)),
        h("td", { class: "q" }, num(r.q_value)),
        h("td", { class: "score" }, num(r.score)),
        h("td", { class: "text" }, provenance, h("br", {}), h("small", {}, where)),
      );
    });
    const head = h("tr", {}, ...["#", "memory", "similarity", "Q", "score", "provenance (training episode)"].map((c) => h("th", { class: c === "memory" || c.startsWith("prov") ? "text" : "" }, c)));
    return h("div", { class: "scroll" }, h("table", { class: "retrieved" }, h("thead", {}, head), h("tbody", {}, rows)));
  }

  function turnBlock(turn) {
    return h("div", { class: "turn" }, h("b", {}, "action: "), h("code", { class: "action" }, turn.action), h("pre", { class: "observation" }, turn.observation));
  }

  function actingBlock(e) {
    const turns = e.turns || [];
    if (!(e.acting || []).length) {
      if (!turns.length) return h("p", { class: "absent" }, "No turns recorded.");
      return h("div", {}, h("p", { class: "absent" }, "No transcript for this episode (prompts and completions are not recorded): the turns as logged."), turns.map(turnBlock));
    }
    return h(
      "div",
      {},
      e.acting.map((call, i) => {
        const messages = Array.isArray(call.messages) ? call.messages : [];
        const shown = messages.map((m, j) => h("div", { class: "message" }, h("b", {}, (m && m.role) || "?"), marked(String((m && m.content) || ""), (call.memory_spans || [])[j])));
        const facts = [`finish: ${call.finish_reason ?? "—"}`, `prompt tokens: ${call.prompt_tokens ?? "—"}`, `completion tokens: ${call.completion_tokens ?? "—"}`, `trimmed tokens: ${call.trimmed_tokens ?? "—"}`, `cache hit: ${call.cache_hit ?? "—"}`];
        return h(
          "div",
          { class: "call" },
          h("h3", {}, `Call ${i + 1}`),
          h("details", i === 0 ? { open: "" } : {}, h("summary", {}, `prompt (${messages.length} messages${i === 0 ? "; memory section highlighted" : ""})`), shown),
          h("div", {}, h("b", {}, "completion"), typeof call.completion === "string" ? h("pre", { class: "completion" }, call.completion) : absent("completion")),
          h("p", { class: "meta" }, facts.join(" · ")),
          turns[i] ? turnBlock(turns[i]) : null,
        );
      }),
      turns.length > e.acting.length ? turns.slice(e.acting.length).map(turnBlock) : null,
    );
  }

  // MemRL's Q updates (each memory injected into this episode, linked to the episode it came
  // from) and the memory written from it.
  function memoryOpsBlock(e, run, link) {
    const ops = e.memory_ops || [];
    const updates = ops.filter((o) => o.op === "q_update");
    const writes = ops.filter((o) => o.op === "add");
    const sources = Object.fromEntries((e.retrieved || []).map((r) => [r.item_id, r.source_episode_id]));
    const item = (id) => (run.byId[sources[id]] ? h("a", { href: link(sources[id]), class: "provenance" }, id) : h("span", {}, id));
    return [
      updates.length
        ? h("div", { class: "q-updates" }, h("b", {}, "Q updates"), h("ul", {}, updates.map((u) => h("li", { class: "q-update" }, item(u.item_id), ` Q ${num(u.q_before)} -> ${num(u.q_after)} (reward ${u.reward})`))))
        : null,
      ...writes.map((w) =>
        h("p", { class: "memory-write" }, h("b", {}, "Written: "), `memory ${w.item_id} with Q ${num(w.q)}, ${w.group === -1 ? "orphaned within its batch" : `group ${w.group}`}`, (w.orphaned || []).length ? `; its task's group taken over, orphaning ${w.orphaned.join(", ")}` : ""),
      ),
    ];
  }

  function memoryCallsBlock(e) {
    if (!(e.memory_calls || []).length) {
      if ((e.memory_ops || []).length) return null;
      if (e.has_transcript) return h("p", { class: "absent" }, "No memory-management call for this episode.");
      return h("p", { class: "absent" }, e.phase === "train" ? "Memory operations: not recorded (no transcript)." : "None: memory changes only in training.");
    }
    return e.memory_calls.map((call, i) =>
      h(
        "div",
        { class: "memory-call" },
        h("h3", {}, `${i + 1}. ${call.purpose || "memory call"}`),
        call.problem ? h("p", { class: "warn" }, `problem: ${call.problem}`) : null,
        h("b", {}, "operations / parsed"),
        call.parsed !== undefined && call.parsed !== null ? h("pre", { class: "parsed" }, JSON.stringify(call.parsed, null, 1)) : absent("parsed output"),
        h("details", {}, h("summary", {}, "prompt and completion"), (Array.isArray(call.messages) ? call.messages : []).map((m) => h("pre", {}, `${(m && m.role) || "?"}: ${(m && m.content) || ""}`)), h("pre", {}, call.completion ?? "(no completion)")),
      ),
    );
  }

  function episodeBlock(e, run, link) {
    const act = e.act_usage || {};
    const facts = [
      `${phaseName(e)} · epoch ${e.epoch} · sample ${e.sample_index} · batch ${e.batch_index} · order ${e.order_index}`,
      `status ${e.status}${e.error ? ` (${e.error})` : ""} · reward ${num(e.reward)} · turns ${(e.turns || []).length}`,
      `tokens: acting ${act.prompt_tokens || 0} prompt + ${act.completion_tokens || 0} completion in ${act.calls || 0} calls (${act.cache_hits || 0} cached); memory ${(e.memory_usage || {}).prompt_tokens || 0} + ${(e.memory_usage || {}).completion_tokens || 0}`,
      `latency (s): ${Object.entries(e.latency_s || {}).map(([k, v]) => `${k} ${num(v, 4)}`).join(", ") || "—"}`,
      `memory after: ${e.memory_items_after} items, ${e.memory_bytes_after} bytes · candidates ${e.candidates} · injected ${e.injected_chars} chars`,
    ];
    return h(
      "div",
      { class: "episode", "data-episode": e.episode_id },
      h("h2", {}, e.episode_id, " ", outcome(e.success)),
      h("p", {}, h("b", {}, "task "), e.task_id),
      e.text ? h("pre", { class: "task-text" }, e.text) : null,
      facts.map((f) => h("p", { class: "meta" }, f)),
      h("h3", {}, "Retrieved memories"),
      retrievedTable(e, run, link),
      h("h3", {}, "Turns"),
      actingBlock(e),
      h("h3", {}, "Memory operations after it"),
      memoryOpsBlock(e, run, link),
      memoryCallsBlock(e),
      Object.keys(e.info || {}).length ? h("details", {}, h("summary", {}, "info"), h("pre", {}, JSON.stringify(e.info, null, 1))) : null,
    );
  }

  function episodeRow(e, href, current) {
    return h(
      "tr",
      { class: `${e.success ? "ok" : "fail"}${current ? " current" : ""}` },
      h("td", { class: "text" }, h("a", { href }, e.episode_id)),
      h("td", { class: "text" }, e.task_id),
      h("td", { class: "text" }, phaseName(e)),
      h("td", {}, e.epoch),
      h("td", {}, e.sample_index),
      h("td", {}, e.success ? "yes" : "no"),
      h("td", {}, (e.turns || []).length),
      h("td", {}, tokens(e)),
      h("td", {}, num(latency(e), 3)),
      h("td", {}, (e.retrieved || []).length),
    );
  }

  const searchText = (e) => `${e.episode_id} ${e.task_id} ${e.split} ${e.text || ""}`.toLowerCase();

  async function showRun(app) {
    const n = Number(app.dataset.run);
    const run = await load(n);
    const search = h("input", { type: "search", id: "search", placeholder: "search task ids and task text" });
    const count = h("span", { class: "meta" });
    const detail = h("div", { id: "detail" });
    const body = h("tbody", {});
    const head = h("tr", {}, ...["episode", "task", "split", "epoch", "sample", "success", "turns", "tokens", "latency (s)", "retrieved"].map((c, i) => h("th", { class: i < 3 ? "text" : "" }, c)));
    const draw = () => {
      const id = decodeURIComponent(location.hash.slice(1));
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const hits = run.episodes.filter((e) => words.every((w) => searchText(e).includes(w)));
      body.replaceChildren(...hits.slice(0, ROW_LIMIT).map((e) => episodeRow(e, `#${encodeURIComponent(e.episode_id)}`, e.episode_id === id)));
      count.textContent = ` ${hits.length} of ${run.episodes.length} episodes${hits.length > ROW_LIMIT ? ` (the first ${ROW_LIMIT} shown)` : ""}`;
      const e = run.byId[id];
      detail.replaceChildren(e ? episodeBlock(e, run, (other) => `#${encodeURIComponent(other)}`) : h("p", { class: "meta" }, "Choose an episode below."));
      if (e) detail.scrollIntoView();
    };
    search.addEventListener("input", draw);
    window.addEventListener("hashchange", draw);
    app.replaceChildren(
      h("h1", {}, run.run),
      h("p", { class: "meta" }, `variant ${run.variant} · method ${run.method} · seed ${run.seed} · ${run.complete ? "complete" : "incomplete"} · transcripts: ${run.transcripts ? "yes" : "none (what episodes.jsonl holds is shown)"}`),
      detail,
      h("p", {}, search, count),
      h("div", { class: "scroll" }, h("table", { id: "episodes" }, h("thead", {}, head), body)),
    );
    draw();
  }

  const pairKey = (e) => `${e.phase}|${e.split}|${e.task_id}|${e.epoch}|${e.sample_index}`;

  async function showCompare(root) {
    const choices = JSON.parse(document.getElementById("runs").textContent);
    const params = new URLSearchParams(location.search);
    const picker = (name, fallback) => {
      const select = h("select", { id: `run-${name}` }, choices.map((c) => h("option", { value: c.n }, `${c.variant} — ${c.run}`)));
      select.value = params.get(name) ?? String(fallback);
      select.addEventListener("change", () => {
        params.set(name, select.value);
        location.search = params.toString();
      });
      return select;
    };
    const a = picker("a", choices[0]?.n ?? 0);
    const b = picker("b", choices[1]?.n ?? choices[0]?.n ?? 0);
    const differ = h("input", { type: "checkbox", id: "differ" });
    const search = h("input", { type: "search", placeholder: "search task ids and task text" });
    const out = h("div", {});
    root.replaceChildren(h("h1", {}, "Compare two runs on the same tasks"), h("p", {}, "A ", a), h("p", {}, "B ", b), h("p", {}, search, " ", h("label", {}, differ, " only where the outcomes differ")), out);
    if (!choices.length) return out.replaceChildren(h("p", { class: "absent" }, "No runs."));
    const [runA, runB] = await Promise.all([load(Number(a.value)), load(Number(b.value))]);
    const inB = Object.fromEntries(runB.episodes.map((e) => [pairKey(e), e]));
    const pairs = runA.episodes.filter((e) => inB[pairKey(e)]).map((e) => [e, inB[pairKey(e)]]);
    const linkTo = (n) => (id) => `${n}.html#${encodeURIComponent(id)}`;
    const draw = () => {
      const key = decodeURIComponent(location.hash.slice(1));
      const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const shown = pairs.filter(([x, y]) => (!differ.checked || x.success !== y.success) && words.every((w) => searchText(x).includes(w)));
      const chosen = pairs.find(([x]) => pairKey(x) === key);
      const rows = shown.slice(0, ROW_LIMIT).map(([x, y]) =>
        h("tr", {}, h("td", { class: "text" }, h("a", { href: `#${encodeURIComponent(pairKey(x))}` }, x.task_id)), h("td", { class: "text" }, phaseName(x)), h("td", {}, x.epoch), h("td", {}, x.sample_index), h("td", {}, x.success ? "yes" : "no"), h("td", {}, y.success ? "yes" : "no")),
      );
      const head = h("tr", {}, ...["task", "split", "epoch", "sample", "A success", "B success"].map((c, i) => h("th", { class: i < 2 ? "text" : "" }, c)));
      out.replaceChildren(
        chosen ? h("div", { class: "columns" }, h("div", {}, h("p", { class: "meta" }, `A: ${runA.run}`), episodeBlock(chosen[0], runA, linkTo(a.value))), h("div", {}, h("p", { class: "meta" }, `B: ${runB.run}`), episodeBlock(chosen[1], runB, linkTo(b.value)))) : null,
        h("p", { class: "meta" }, `${shown.length} of ${pairs.length} episodes in both runs (same phase, split, task, epoch and sample)`),
        h("div", { class: "scroll" }, h("table", { id: "pairs" }, h("thead", {}, head), h("tbody", {}, rows))),
      );
    };
    search.addEventListener("input", draw);
    differ.addEventListener("change", draw);
    window.addEventListener("hashchange", draw);
    draw();
  }

  document.addEventListener("DOMContentLoaded", () => {
    document.head.append(h("style", {}, css));
    const app = document.getElementById("app");
    const compare = document.getElementById("compare");
    const failed = (node) => (err) => node.replaceChildren(h("p", { class: "warn" }, `The viewer could not show this page: ${err.message}`));
    if (app) showRun(app).catch(failed(app));
    if (compare) showCompare(compare).catch(failed(compare));
  });

  return { add, load };
})();
