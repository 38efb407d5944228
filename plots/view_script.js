// aha plot --html: the page's script. plots/view.c writes what it reads: the
// JSON #aha-meta and base64 blobs of zlib-compressed little-endian arrays,
// #aha-ids (int32 [n]), #aha-nll-<r> (float32 [n]) and #aha-layer-<l> (d_eps
// [n_eps][n][H] as uint16 or uint32, then the gates [n_gates][n][H] as uint8).
// A layer is decompressed (the browser's DecompressionStream) when first shown.
//
// Colours (docs/reports.md, "The per-token view"):
//   d_eps      viridis at x = log2(d_eps) / log2(D), D = max(ctx, last position + 1);
//              a mean over heads or layers takes the mean of log2(d_eps) (a geometric mean)
//   decisions  white (local) to #d62728 (global) by the fraction of the heads averaged
//              that are global: 0 or 1 for one head
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const M = JSON.parse($("aha-meta").textContent);
  const L = M.n_layers, H = M.n_heads, N = M.doc.shown, E = M.eps.length;
  const D = Math.max(2, M.ctx, M.doc.from + N); // the largest d_eps the page's tokens can have
  const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const RED = [214, 39, 40];
  const GLOBAL_LAYERS = M.layer_window.map((w, l) => (w ? -1 : l)).filter((l) => l >= 0);
  const MEAN_LAYERS = GLOBAL_LAYERS.length ? GLOBAL_LAYERS : M.layer_window.map((w, l) => l);
  const S = { layer: MEAN_LAYERS[0], head: 0, colour: "dep:0", wi: M.window_index, heat: 0, subset: "t_ge_w" };
  const layers = []; // [L] promises of { dep: [E] arrays [N * H], gate: [n_gates] arrays [N * H] }
  let shown = null; // what the tokens show now: { ls, hs, data } (data: the layers of ls)
  let ids = null, nll = [];

  function viridis(x) {
    const y = Math.min(1, Math.max(0, x)) * 4, i = Math.min(3, Math.floor(y)), f = y - i;
    return VIRIDIS[i].map((c, k) => Math.round(c + (VIRIDIS[i + 1][k] - c) * f));
  }
  const reds = (x) => [255, 255, 255].map((c, k) => Math.round(c + (RED[k] - c) * x));
  const rgb = (c) => `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
  const ink = (c) => (0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] < 128 ? "#fff" : "#000");
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  };

  async function inflate(id) {
    const s = atob($(id).textContent);
    const u = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
    const stream = new Blob([u]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }

  function layer(l) {
    if (!layers[l])
      layers[l] = inflate("aha-layer-" + l).then((buf) => {
        // typed arrays read the platform's byte order: little-endian wherever browsers run today
        const nh = N * H, b = M.dep_bytes, T = b === 2 ? Uint16Array : Uint32Array;
        const dep = M.eps.map((e, k) => new T(buf, k * nh * b, nh));
        const gate = M.gates.map((g, s) => new Uint8Array(buf, E * nh * b + s * nh, nh));
        return { dep, gate };
      });
    return layers[l];
  }

  // ---- what is shown: names and words ----
  const layerSet = () => (S.layer >= 0 ? [S.layer] : MEAN_LAYERS);
  const headSet = () => (S.head >= 0 ? [S.head] : [...Array(H).keys()]);
  const meanLayersName = GLOBAL_LAYERS.length === L ? `all ${L} layers`
    : GLOBAL_LAYERS.length === 1 ? `the 1 global layer (${GLOBAL_LAYERS[0]}; the others natively local)`
    : GLOBAL_LAYERS.length ? `the ${GLOBAL_LAYERS.length} global layers (natively local ones left out)`
    : `all ${L} layers (every one natively local)`;
  function what() {
    const lw = S.layer >= 0 && M.layer_window[S.layer] ? ` (natively local, window ${M.layer_window[S.layer]})` : "";
    if (S.layer >= 0 && S.head >= 0) return `layer ${S.layer}${lw}, head ${S.head}`;
    if (S.layer >= 0) return `mean over the ${H} heads of layer ${S.layer}${lw}`;
    if (S.head >= 0) return `head ${S.head}, mean over ${meanLayersName}`;
    return `mean over the ${H} heads of ${meanLayersName}`;
  }
  function gateName(s) {
    const g = M.gates[s];
    return g.kind === "learned" ? `learned router (sigmoid(logit) > tau ${g.tau})`
                                : `run ${g.name} (policy ${g.policy}, window ${g.window})`;
  }
  function colourName() {
    const [kind, k] = S.colour.split(":"), w = M.windows[S.wi];
    if (kind === "dep") return `d_eps at eps ${M.eps_names[k]} (how far back attention reaches)`;
    if (kind === "oracle") return `the oracle's decision at w = ${w}, eps ${M.eps_names[k]} (global iff d_eps > w)`;
    return `the decision of the ${gateName(k)}`;
  }

  // ---- the tokens ----
  const spans = [];
  function buildTokens() {
    const box = $("aha-tokens"), frag = document.createDocumentFragment();
    for (let i = 0; i < N; i++) {
      const t = M.text[i];
      const s = el("span", t === "" ? "\u2205" : t.replace(/\n/g, "\u21b5\n").replace(/\t/g, "\u2192\t"));
      s.dataset.i = i;
      spans.push(s);
      frag.append(s);
    }
    box.append(frag);
    box.addEventListener("mouseover", (ev) => {
      const s = ev.target.closest("span[data-i]");
      if (s) tip(+s.dataset.i, ev);
    });
    box.addEventListener("mousemove", place);
    box.addEventListener("mouseleave", () => ($("aha-tip").hidden = true));
  }

  // Per token: the mean of log2(d_eps) (dep) or the fraction global (decisions).
  function values() {
    const [kind, k] = S.colour.split(":"), w = M.windows[S.wi], { hs, data } = shown;
    const out = new Float64Array(N), n = data.length * hs.length;
    for (const d of data) {
      const a = kind === "gate" ? d.gate[k] : d.dep[k];
      for (let i = 0; i < N; i++)
        for (const h of hs) {
          const v = a[i * H + h];
          out[i] += kind === "dep" ? Math.log2(v) : kind === "oracle" ? (v > w ? 1 : 0) : v;
        }
    }
    for (let i = 0; i < N; i++) out[i] /= n;
    return out;
  }

  function legend(kind) {
    const box = $("aha-legend");
    box.textContent = "";
    if (kind === "dep") {
      const bar = el("div", undefined, "aha-bar"), ticks = el("div", undefined, "aha-ticks");
      bar.style.background = `linear-gradient(to right, ${VIRIDIS.map((c, i) => `${rgb(c)} ${i * 25}%`).join(", ")})`;
      for (const v of [1, ...M.windows.filter((w) => w < D), D]) {
        const t = el("span", String(v));
        t.style.left = `${(100 * Math.log2(v)) / Math.log2(D)}%`;
        ticks.append(t);
      }
      box.append(el("div", `d_eps on a log2 scale (ticks: 1, the windows, ${D})`), bar, ticks);
    } else {
      const sw = (x, label) => {
        const s = el("span", undefined, "aha-swatch");
        s.style.background = rgb(reds(x));
        box.append(s, label);
      };
      sw(0, "local");
      sw(1, "global");
      if (shown.ls.length * shown.hs.length > 1) sw(0.5, "half of them global (shade: the fraction)");
    }
  }

  function renderTokens() {
    const [kind] = S.colour.split(":"), v = values();
    for (let i = 0; i < N; i++) {
      const c = kind === "dep" ? viridis(v[i] / Math.log2(D)) : reds(v[i]);
      spans[i].style.backgroundColor = rgb(c);
      spans[i].style.color = ink(c);
    }
    const mean = shown.ls.length * shown.hs.length > 1;
    $("aha-caption").textContent = `Colour: ${colourName()}, ${what()}` +
      (kind === "dep" ? `; viridis on log2 d_eps from 1 to ${D}${mean ? " (a mean: of log2 d_eps, the geometric mean)" : ""}`
                      : mean ? "; shade: the fraction of those heads that are global" : "") +
      `; sinks ${M.sinks}, ctx ${M.ctx}. Hover over a token for its numbers.`;
    legend(kind);
  }

  // ---- the tooltip ----
  function tip(i, ev) {
    if (!shown) return;
    const box = $("aha-tip"), { hs, data } = shown, n = data.length * hs.length, pos = M.doc.from + i;
    box.textContent = "";
    const head = el("div");
    head.append(`position ${pos} of document ${M.doc.number} (trace token ${M.doc.trace_token + i}, id ${ids[i]}): `,
                el("span", M.text[i], "aha-text"));
    box.append(head);
    if (pos < M.sinks) box.append(el("div", `a sink: position < sinks ${M.sinks}, always visible to local attention`));
    box.append(el("div", what() + (n > 1 ? `: a mean over ${n} (layer, head) pairs` : "")));
    // d_eps per eps, and the oracle's decision at each window
    const t = el("table");
    t.id = "aha-tip-dep";
    const hr = t.insertRow();
    hr.append(el("th", "eps"), el("th", n > 1 ? "d_eps (geometric mean)" : "d_eps"));
    for (const w of M.windows) hr.append(el("th", n > 1 ? `w = ${w}: fraction global` : `w = ${w}`));
    M.eps.forEach((e, k) => {
      let lg = 0, v = 0;
      const g = M.windows.map(() => 0);
      for (const d of data)
        for (const h of hs) {
          v = d.dep[k][i * H + h];
          lg += Math.log2(v);
          M.windows.forEach((w, j) => (g[j] += v > w ? 1 : 0));
        }
      const r = t.insertRow();
      r.append(el("td", M.eps_names[k]), el("td", n > 1 ? (2 ** (lg / n)).toFixed(2) : String(v)));
      g.forEach((x) => r.append(el("td", n > 1 ? (x / n).toFixed(3) : x ? "global" : "local", x ? "aha-g" : "")));
    });
    box.append(el("div", `oracle at each window w: global iff d_eps > w (sinks ${M.sinks}, ctx ${M.ctx})`), t);
    if (M.gates.length) {
      const gt = el("table");
      gt.id = "aha-tip-gates";
      gt.insertRow().append(el("th", "router"), el("th", n > 1 ? "fraction global" : "decision"));
      M.gates.forEach((g, s) => {
        let x = 0;
        for (const d of data) for (const h of hs) x += d.gate[s][i * H + h];
        gt.insertRow().append(el("td", gateName(s)), el("td", n > 1 ? (x / n).toFixed(3) : x ? "global" : "local", x ? "aha-g" : ""));
      });
      box.append(gt);
    }
    const nt = el("table");
    nt.id = "aha-tip-nll";
    nt.insertRow().append(el("th", "run"), el("th", "NLL of the next token (nats)"));
    M.runs.forEach((r, k) => {
      const x = nll[k][i];
      nt.insertRow().append(el("td", `${r.name} (${r.policy}${r.window ? ", window " + r.window : ""})`),
                            el("td", Number.isNaN(x) ? "none: the document's last token" : x.toFixed(4)));
    });
    box.append(nt);
    box.hidden = false;
    place(ev);
  }
  function place(ev) {
    const box = $("aha-tip");
    if (box.hidden) return;
    const r = box.getBoundingClientRect();
    box.style.left = Math.max(0, Math.min(ev.clientX + 14, innerWidth - r.width - 4)) + "px";
    box.style.top = (ev.clientY + 14 + r.height < innerHeight ? ev.clientY + 14 : Math.max(0, ev.clientY - r.height - 8)) + "px";
  }

  // ---- the heatmap ----
  function renderHeat() {
    const R = M.heat[S.heat], w = M.windows[S.wi], f = R[S.subset][S.wi], t = $("aha-heat");
    const sub = S.subset === "t_ge_w" ? M.subset_t_ge_w : M.subset_all;
    $("aha-heat-caption").textContent = `Fraction of decisions routed global by the ${R.name} at w = ${w}, ${sub}, ` +
      `per layer (rows) and head (columns), over the whole trace (${M.n_docs} documents, ${M.n_tokens} tokens; ` +
      `${M.settings}). Viridis from 0 to 1; hatched: natively local layers (their router decides nothing) or no decisions.`;
    t.textContent = "";
    const hr = t.createTHead().insertRow();
    hr.append(el("th", "layer \\ head"));
    for (let h = 0; h < H; h++) hr.append(el("th", H <= 16 || h % 4 === 0 ? String(h) : ""));
    const body = t.createTBody();
    for (let l = 0; l < L; l++) {
      const r = body.insertRow();
      r.append(el("th", M.layer_window[l] ? `${l} local` : String(l)));
      for (let h = 0; h < H; h++) {
        const c = r.insertCell(), x = f[l][h];
        c.dataset.l = l;
        c.dataset.h = h;
        if (x === null) c.className = "aha-null";
        else c.style.background = rgb(viridis(x));
        c.title = `layer ${l}, head ${h}: fraction global ${x === null ? "none" : x.toFixed(4)} (${R.name}, w = ${w}, ${sub})`;
        if ((S.layer === l || S.layer < 0) && (S.head === h || S.head < 0)) c.classList.add("aha-sel");
      }
    }
  }

  // ---- the controls ----
  function options(sel, items, value) {
    sel.textContent = "";
    for (const [v, label] of items) sel.append(Object.assign(el("option", label), { value: String(v) }));
    sel.value = String(value);
  }
  function heatFor(colour) { // the heatmap's router that matches what the tokens show
    const [kind, k] = colour.split(":");
    const g = kind === "gate" ? M.gates[k] : null;
    const i = M.heat.findIndex((r) => (g ? g.kind === "learned" && r.router === "learned" : r.router === "oracle" && r.eps === M.eps[k]));
    return i >= 0 ? i : S.heat;
  }
  function controls() {
    options($("aha-layer"), [[-1, `mean over ${meanLayersName}`],
      ...M.layer_window.map((w, l) => [l, w ? `${l} (natively local, window ${w})` : String(l)])], S.layer);
    options($("aha-head"), [[-1, `mean over the ${H} heads`], ...[...Array(H).keys()].map((h) => [h, String(h)])], S.head);
    options($("aha-colour"), [...M.eps.map((e, k) => [`dep:${k}`, `d_eps, eps ${M.eps_names[k]}`]),
      ...M.eps.map((e, k) => [`oracle:${k}`, `oracle decision at w, eps ${M.eps_names[k]}`]),
      ...M.gates.map((g, s) => [`gate:${s}`, g.kind === "learned" ? `learned router decision (tau ${g.tau})`
                                                                 : `run ${g.name}'s decision (${g.policy}, window ${g.window})`])], S.colour);
    options($("aha-window"), M.windows.map((w, i) => [i, `w = ${w}`]), S.wi);
    options($("aha-heat-router"), M.heat.map((r, i) => [i, r.name]), S.heat);
    options($("aha-heat-subset"), [["t_ge_w", M.subset_t_ge_w], ["all", M.subset_all]], S.subset);
    const on = (id, f) => $(id).addEventListener("change", (ev) => { f(ev.target.value); update(); });
    on("aha-layer", (v) => (S.layer = +v));
    on("aha-head", (v) => (S.head = +v));
    on("aha-colour", (v) => { S.colour = v; S.heat = heatFor(v); $("aha-heat-router").value = String(S.heat); });
    on("aha-window", (v) => (S.wi = +v));
    on("aha-heat-router", (v) => (S.heat = +v));
    on("aha-heat-subset", (v) => (S.subset = v));
    $("aha-heat").addEventListener("click", (ev) => {
      const c = ev.target.closest("td[data-l]");
      if (!c) return;
      S.layer = +c.dataset.l;
      S.head = +c.dataset.h;
      $("aha-layer").value = String(S.layer);
      $("aha-head").value = String(S.head);
      update();
    });
  }

  async function render() {
    const ls = layerSet(), hs = headSet();
    if (ls.some((l) => !layers[l])) $("aha-status").textContent = `decompressing ${ls.length} layer(s)...`;
    const data = await Promise.all(ls.map(layer));
    shown = { ls, hs, data };
    renderTokens();
    renderHeat();
    $("aha-status").textContent = "";
  }
  let pending = Promise.resolve();
  function update() {
    pending = pending.then(render).catch((e) => {
      $("aha-status").textContent = "view.html: " + e;
      throw e;
    });
    return pending;
  }

  function header() {
    const d = M.doc, last = d.from + N - 1, model = M.model.split("/").filter(Boolean).pop();
    document.title = `aha view: ${model}, document ${d.number}`;
    $("aha-title").textContent = `aha view: ${model}, document ${d.number}, tokens ${d.from}..${last}`;
    $("aha-about").textContent = `Trace ${M.files.join(", ")} (${M.architecture}; data ${M.dataset}): eps ${M.eps_names.join(", ")}; ` +
      `windows ${M.windows.join(", ")}; ${M.settings}. Document ${d.number} holds ${d.tokens} tokens.`;
    $("aha-held").textContent = `This page holds exact d_eps (${E} eps)` + (M.gates.length ? ` and ${M.gates.length} router decision(s)` : "") +
      ` of every layer and head for ${N} of them (positions ${d.from}..${last})` +
      (N < d.tokens ? `; the others are not in it: aha plot --html --html-from P --html-tokens N picks them (0: to the end).` : ".") +
      " A layer's data is decompressed when first shown; a mean over layers decompresses each layer it averages.";
  }

  async function main() {
    S.heat = heatFor(S.colour);
    header();
    buildTokens();
    controls();
    const raw = await Promise.all([inflate("aha-ids"), ...M.runs.map((r, k) => inflate("aha-nll-" + k))]);
    ids = new Int32Array(raw[0]);
    nll = raw.slice(1).map((b) => new Float32Array(b));
    await update();
    document.body.dataset.ready = "1";
  }
  const t0 = performance.now();
  window.ahaView = { idle: () => pending, state: S, main: main().then(() => (document.body.dataset.readyMs = Math.round(performance.now() - t0))) };
})();
