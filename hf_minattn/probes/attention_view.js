// The interactive attention view of report.html and `hf-minattn view` (attention_view.py writes its data).
// Reads the JSON block #attention-view-data (schema hf_minattn/attention-view/1): sentences, each with one graph per
// weighting in the schema of attention_graph.json. Draws a head view (queries on the left, keys on the right, one
// line per kept edge) and a model view (layers x heads small multiples). Hovering or focusing a token shows its edges
// alone in both views. Served over http by `hf-minattn view`, a form encodes typed sentences (GET api/attention).
(function () {
  "use strict";
  const root = document.getElementById("attention-view");
  const data = JSON.parse(document.getElementById("attention-view-data").textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const controls = {sentence: $("av-sentence"), weighting: $("av-weighting"), layer: $("av-layer"), head: $("av-head")};
  const NAMES = {attention: "raw attention", norm: "norm-weighted (Kobayashi et al.)", rollout: "rollout (Abnar & Zuidema)"};
  let focus = null; // {side: "source" | "target", index} of the hovered or focused token
  // The layer and head last picked: kept while a sentence or weighting cannot show them (rollout has the head mean
  // only; a typed sentence's model may have fewer layers), and shown again once one can.
  const picked = {layer: "0", head: "0"};

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function option(select, value, label, title) {
    const o = document.createElement("option");
    o.value = String(value);
    o.textContent = label;
    if (title) o.title = title;
    select.appendChild(o);
  }

  function entry() {
    return data.sentences[+controls.sentence.value];
  }

  function graph() {
    return entry().graphs[controls.weighting.value] || entry().graphs.attention;
  }

  // The layers and heads of the shown sentence: a typed one's are its model's (api/info), which --model may make
  // differ from the probe's.
  function shape(e) {
    return e.shape || {layers: data.num_layers, heads: data.num_heads};
  }

  // The heads a weighting has: 0..H-1 and "mean" for attention weights (no "mean" where whole_layer is null: a norm
  // graph without the layer measure); "mean" alone for rollout.
  function heads(g, count) {
    const each = [...Array(count).keys()].map(String);
    return g.weighting === "rollout" ? ["mean"] : g.whole_layer === null ? each : each.concat(["mean"]);
  }

  function edgesOf(g, layer, head) {
    return g.edges.filter((e) => e.layer === layer && String(e.head) === head);
  }

  // One panel: tokens in two columns, a line per edge. `labels`: full token text (head view) or ticks (model view).
  function panel(parent, g, layer, head, size) {
    const n = g.nodes.length;
    const rowH = size.row, width = size.width, pad = size.labels ? 8 : 2;
    const svg = el("svg", {width, height: n * rowH + 4, class: "av-panel", "data-layer": layer, "data-head": head,
                          role: "group", "aria-label": `layer ${layer}, head ${head}`}, parent);
    const left = size.labels ? size.column : 6, right = width - left;
    const lines = el("g", {class: "av-edges"}, svg);
    for (const e of edgesOf(g, layer, head)) {
      el("line", {x1: left + pad, y1: rowH * e.source + rowH / 2 + 2, x2: right - pad, y2: rowH * e.target + rowH / 2 + 2,
                  class: "edge", "stroke-width": (size.labels ? 1 : 0.6) + 3 * e.weight,
                  "stroke-opacity": Math.min(1, 0.15 + e.weight),
                  "data-layer": e.layer, "data-head": String(e.head), "data-source": e.source, "data-target": e.target,
                  "data-weight": e.weight}, lines);
    }
    for (const [side, x, anchor] of [["source", left, "end"], ["target", right, "start"]]) {
      g.nodes.forEach((node, i) => {
        const group = el("g", {class: "token", "data-side": side, "data-index": i}, svg);
        if (size.labels) {
          group.setAttribute("tabindex", "0");
          group.setAttribute("role", "button");
          group.setAttribute("aria-label", `${side === "source" ? "query" : "key"} token ${i}: ${node.label}`);
          const text = el("text", {x, y: rowH * i + rowH / 2 + 6, "text-anchor": anchor}, group);
          text.textContent = node.label;
        } else {
          el("rect", {x: side === "source" ? 0 : right, y: rowH * i + 2, width: 6, height: Math.max(1, rowH - 1)}, group);
        }
        group.addEventListener("mouseenter", () => setFocus({side, index: i}));
        group.addEventListener("mouseleave", () => setFocus(null));
        group.addEventListener("focus", () => setFocus({side, index: i}));
        group.addEventListener("blur", () => setFocus(null));
      });
    }
    return svg;
  }

  // Hovering a token shows its edges alone (class "active"; the rest "dim"), in every panel of both views.
  function setFocus(f) {
    focus = f;
    for (const line of root.querySelectorAll("line.edge")) {
      const on = f !== null && +line.dataset[f.side] === f.index;
      line.classList.toggle("active", on);
      line.classList.toggle("dim", f !== null && !on);
    }
    for (const token of root.querySelectorAll("g.token")) {
      token.classList.toggle("focused", f !== null && token.dataset.side === f.side && +token.dataset.index === f.index);
    }
  }

  // What a graph's "mean" head holds, as its whole_layer says: the layer as a whole (a norm graph's
  // ||sum_h a_ij^h f_h(x_j)||), or the mean over heads (raw attention, rollout, and files from before the field).
  function meanLabel(g, short) {
    if (g.whole_layer === "layer") return short ? "whole layer" : "the whole layer (||sum_h a f_h||, not a head mean)";
    return short ? "all heads (mean)" : "mean of the heads";
  }

  // The cut: one weight, or in a causal graph one per query (its multiple of 1/n_i; `threshold` is the smallest).
  function cutText(g) {
    const t = (+g.threshold).toFixed(3);
    if (g.relative_threshold == null) return `weight >= ${t}`;
    if (g.causal) return `${g.relative_threshold}x the uniform weight 1/n_i over the n_i tokens each query sees ` +
      `(weight >= ${t} for the last query, more for earlier ones)`;
    return `${g.relative_threshold}x the uniform weight, weight >= ${t}`;
  }

  function caption(g, layer, head) {
    const who = g.weighting === "rollout" ? "the share of each input token (right) in each token (left) after layer " + layer
      : "each query token (left) and the key tokens it attends to (right), layer " + layer + ", " +
        (head === "mean" ? meanLabel(g, false) : "head " + head);
    return `${NAMES[g.weighting] || g.weighting}: ${who}. Lines are kept from ${cutText(g)}; ` +
      "hover or focus a token (Tab, then arrow keys) to see its edges alone.";
  }

  // The Layer and Head menus for the shown sentence's graph `g`, set to the picked layer and head where it has
  // them (else its last layer; the head mean, or the last head).
  function fillLayersAndHeads(g, size) {
    controls.layer.replaceChildren();
    for (let l = 0; l < size.layers; l++) option(controls.layer, l, "layer " + l);
    controls.layer.value = +picked.layer < size.layers ? picked.layer : String(size.layers - 1);
    const options = heads(g, size.heads);
    controls.head.replaceChildren();
    for (let h = 0; h < size.heads; h++) option(controls.head, h, "head " + h);
    option(controls.head, "mean", meanLabel(g, true));
    for (const o of controls.head.options) o.disabled = !options.includes(o.value);
    controls.head.value = options.includes(picked.head) ? picked.head : options[options.length - 1];
  }

  function render() {
    const g = graph(), size = shape(entry());
    fillLayersAndHeads(g, size);
    const layer = +controls.layer.value, head = controls.head.value;
    const headView = $("av-head-view"), modelView = $("av-model-view");
    headView.replaceChildren();
    modelView.replaceChildren();
    const column = Math.min(160, 12 + 7 * Math.max(...g.nodes.map((n) => n.label.length)));
    panel(headView, g, layer, head, {labels: true, row: 20, width: 2 * column + 200, column});
    $("av-caption").textContent = caption(g, layer, head);
    // Model view: a row per layer, a panel per head (the mean alone for rollout).
    const columns = g.weighting === "rollout" ? ["mean"] : [...Array(size.heads).keys()].map(String);
    const table = document.createElement("table");
    table.className = "av-model";
    const top = table.insertRow();
    top.appendChild(document.createElement("th"));
    for (const h of columns) {
      const th = document.createElement("th");
      th.textContent = h === "mean" ? "mean" : "head " + h;
      top.appendChild(th);
    }
    for (const l of g.layers || [...Array(size.layers).keys()]) {
      const row = table.insertRow();
      const th = document.createElement("th");
      th.textContent = "layer " + l;
      row.appendChild(th);
      for (const h of columns) panel(row.insertCell(), g, l, h, {labels: false, row: 4, width: 70});
    }
    modelView.appendChild(table);
    setFocus(focus);
  }

  function fillSentences(selected) {
    controls.sentence.replaceChildren();
    data.sentences.forEach((s, i) => option(controls.sentence, i,
      s.sentence.length > 70 ? s.sentence.slice(0, 67) + "..." : s.sentence, s.sentence));
    controls.sentence.value = String(selected);
  }

  function setup() {
    fillSentences(0);
    for (const w of data.weightings) option(controls.weighting, w, NAMES[w] || w);
    for (const [key, c] of Object.entries(controls)) {
      c.addEventListener("change", () => {
        if (key in picked) picked[key] = c.value;
        focus = null;
        render();
      });
    }
    // Arrow keys move the focus between the tokens of a column.
    $("av-head-view").addEventListener("keydown", (event) => {
      const token = event.target.closest && event.target.closest("g.token");
      if (!token || !["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].includes(event.key)) return;
      event.preventDefault();
      let side = token.dataset.side, index = +token.dataset.index;
      if (event.key === "ArrowUp") index -= 1;
      if (event.key === "ArrowDown") index += 1;
      if (event.key === "ArrowLeft") side = "source";
      if (event.key === "ArrowRight") side = "target";
      const next = root.querySelector(`#av-head-view g.token[data-side="${side}"][data-index="${index}"]`);
      if (next) next.focus();
    });
    render();
    if (location.protocol === "http:" || location.protocol === "https:") enableTyping();
  }

  // Only when served by `hf-minattn view`: api/info answers, and typed sentences are encoded by the model.
  function enableTyping() {
    fetch("api/info").then((r) => (r.ok ? r.json() : null)).then((info) => {
      if (!info) return;
      const form = $("av-form");
      form.hidden = false;
      $("av-model-name").textContent = info.model;
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const error = $("av-error");
        error.textContent = "";
        fetch("api/attention?sentence=" + encodeURIComponent($("av-input").value))
          .then((r) => r.json().then((body) => ({ok: r.ok, body})))
          .then(({ok, body}) => {
            if (!ok) { error.textContent = body.error; return; }
            body.shape = {layers: info.num_layers, heads: info.num_heads};
            data.sentences.push(body);
            fillSentences(data.sentences.length - 1);
            focus = null;
            render();
          })
          .catch((e) => { error.textContent = "the server did not answer: " + e; });
      });
    }).catch(() => {});
  }

  setup();
})();
