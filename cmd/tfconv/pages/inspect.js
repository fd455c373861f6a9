"use strict";
// inspect --report: the summary, memory at several contexts, parameters
// by layer and kind, the layer × kind map of types, the dtypes, tensors
// and metadata, all from the embedded --json figures.
(function () {
  var d = P.data(), j = d.inspect, el = P.el, fig = P.fig;
  var main = document.getElementById("main");
  main.classList.add("grid");

  var cards = el("div", {class: "cards"});
  function card(name, value, text, label) {
    cards.appendChild(el("div", {class: "card"}, fig("b", name, value, text), el("span", null, label)));
  }
  card("params", j.params, P.count(j.params), "parameters");
  card("tensor_count", j.tensor_count, undefined, "tensors");
  card("bits_per_weight", j.bits_per_weight, j.bits_per_weight.toFixed(3), "bits per weight");
  card("file_size", j.file_size, P.bytes(j.file_size), "file size (" + j.files + " file" + (j.files === 1 ? "" : "s") + ")");
  if (j.layers) card("layers", j.layers, undefined, "layers");
  main.appendChild(cards);

  var s = P.section("Summary", true);
  function n(key) { return j[key] ? fig("span", key, j[key]) : "–"; }
  P.kv(s, [
    ["format", j.format + (j.source ? " (from " + j.source + ")" : "")],
    j.type ? ["type", j.type] : null,
    j.file_type ? ["file type", j.file_type] : null,
    ["architecture", j.architecture || "–"],
    j.support ? ["tfconv support", "convert " + (j.support.convert ? "yes" : "no") + ", run " + (j.support.run ? "yes" : "no")] : null,
    ["layers", n("layers")],
    ["hidden size", n("hidden_size")],
    ["heads / kv heads", el("span", null, n("heads"), " / ", n("kv_heads"))],
    ["vocab", n("vocab_size")],
    ["context", n("context_length")],
    j.experts ? ["experts", el("span", null, n("experts"), ", used per token ", n("experts_used"))] : null,
    ["parameters", el("span", null, fig("span", "params", j.params), " (" + P.count(j.params) + ")")],
    ["tensor bytes", el("span", null, fig("span", "tensor_bytes", j.tensor_bytes), " (" + P.bytes(j.tensor_bytes) + ")")],
    ["bits per weight", fig("span", "bits_per_weight", j.bits_per_weight, j.bits_per_weight.toFixed(3))],
    ["file size", el("span", null, fig("span", "file_size", j.file_size), " (" + P.bytes(j.file_size) + ")")]
  ]);

  if (d.memory_at.length) {
    var m = P.section("Memory to run it (llama.cpp on the CPU, KV cache " + d.memory_at[0].kv_type + ")", true);
    P.table(m, [
      {key: "ctx", label: "context", num: true, fig: "memory.ctx"},
      {key: "kv_bytes", label: "KV cache", num: true, fig: "memory.kv_bytes", fmt: P.bytes},
      {key: "total_bytes", label: "weights + KV", num: true, fig: "memory.total_bytes", fmt: P.bytes},
      {key: "compute_bytes", label: "compute (est.)", num: true, fig: "memory.compute_bytes", fmt: P.bytes},
      {key: "run_total_bytes", label: "total to run", num: true, fig: "memory.run_total_bytes", fmt: P.bytes}
    ], d.memory_at);
    m.appendChild(el("p", {class: "muted"}, "Weights ", fig("span", "memory.weight_bytes", d.memory_at[0].weight_bytes,
      P.bytes(d.memory_at[0].weight_bytes)), " at every context. As inspect --ctx N prints them: batch " + d.memory_at[0].batch +
      ", physical batch " + d.memory_at[0].ubatch + ", " + d.memory_at[0].parallel + " sequence(s)."));
  }

  if (j.layer_table && j.layer_table.length) {
    var l = P.section("Parameters by layer", true);
    var maxP = Math.max.apply(null, j.layer_table.map(function (r) { return r.params; }));
    var rows = j.layer_table.map(function (r) {
      return {layer: r.layer < 0 ? "other" : (r.stack ? r.stack + "." : "") + r.layer, order: r.layer < 0 ? 1e9 : r.layer,
        tensors: r.tensors, params: r.params, bytes: r.bytes, dtypes: (r.dtypes || []).join(", ")};
    });
    P.table(l, [
      {key: "layer", label: "layer", sortKey: function (r) { return r.order; }},
      {key: "tensors", label: "tensors", num: true, fig: "layer.tensors"},
      {key: "params", label: "parameters", num: true, fig: "layer.params"},
      {key: "share", label: "", fmt: function (v, r) {
        return el("span", {class: "bar", style: "width:" + Math.max(1, Math.round(80 * r.params / maxP)) + "px"});
      }, sortKey: function (r) { return r.params; }},
      {key: "bytes", label: "bytes", num: true, fig: "layer.bytes"},
      {key: "dtypes", label: "dtypes"}
    ], rows, {tall: rows.length > 40});
  }

  if (d.kinds.length) {
    var k = P.section("Parameters by tensor kind (summed over the layers)", true);
    P.table(k, [
      {key: "kind", label: "kind"},
      {key: "tensors", label: "tensors", num: true, fig: "kind.tensors"},
      {key: "params", label: "parameters", num: true, fig: "kind.params"},
      {key: "bytes", label: "bytes", num: true, fig: "kind.bytes"}
    ], d.kinds);
  }

  var cells = j.tensors.map(function (t, i) {
    return {layer: d.places[i].layer, kind: d.places[i].kind, type: t.dtype, name: t.name};
  });
  if (cells.some(function (c) { return c.layer !== ""; })) {
    var mp = P.section("Types by layer and tensor kind");
    P.typeMap(mp, cells, "map.dtype");
  }

  var dt = P.section("Types", true);
  P.table(dt, [
    {key: "dtype", label: "dtype", fmt: function (v) { return P.typed(v); }},
    {key: "tensors", label: "tensors", num: true, fig: "dtype.tensors"},
    {key: "params", label: "parameters", num: true, fig: "dtype.params"},
    {key: "bytes", label: "bytes", num: true, fig: "dtype.bytes"},
    {key: "bpw", label: "bits/weight", num: true, fmt: function (v) { return v.toFixed(3); }}
  ], j.dtypes.map(function (r) {
    return {dtype: r.dtype, tensors: r.tensors, params: r.params, bytes: r.bytes, bpw: r.params ? 8 * r.bytes / r.params : 0};
  }));

  var ts = P.section("Tensors (" + j.tensors.length + ")");
  P.table(ts, [
    {key: "name", label: "name"},
    {key: "dtype", label: "dtype", fmt: function (v) { return P.typed(v); }},
    {key: "shape", label: "shape", fmt: function (v) { return "[" + v.join(", ") + "]"; },
      sortKey: function (r) { return r.params; }},
    {key: "params", label: "parameters", num: true, fig: "tensor.params"},
    {key: "bytes", label: "bytes", num: true, fig: "tensor.bytes"},
    {key: "offset", label: "file offset", num: true}
  ], j.tensors, {filter: "filter tensors by name or type", tall: true});

  var keys = Object.keys(j.metadata || {}).sort();
  if (keys.length) {
    var md = P.section("Metadata (" + keys.length + ")");
    P.table(md, [
      {key: "key", label: "key"},
      {key: "type", label: "type"},
      {key: "value", label: "value"}
    ], keys.map(function (key) {
      var v = j.metadata[key], text = typeof v === "string" ? v : JSON.stringify(v);
      if (text.length > 300) text = text.slice(0, 300) + "…";
      return {key: key, type: j.metadata_types[key], value: text};
    }), {filter: "filter metadata", tall: keys.length > 30});
  }
})();
