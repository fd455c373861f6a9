"use strict";
// quantize --report: each tensor's chosen type (a layer × kind map and a
// table) and the error by layer, from the embedded --json figures.
(function () {
  var d = P.data(), q = d.quantize, el = P.el, fig = P.fig;
  var main = document.getElementById("main");
  main.classList.add("grid");
  function db(v) { return v === null ? "exact" : v.toFixed(2); }

  var cards = el("div", {class: "cards"});
  function card(name, value, text, label) {
    cards.appendChild(el("div", {class: "card"}, fig("b", name, value, text), el("span", null, label)));
  }
  card("tensor_count", q.tensors.length, undefined, "tensors");
  card("total_bytes", q.total_bytes, P.bytes(q.total_bytes), "tensor data");
  card("bits_per_weight", q.bits_per_weight, q.bits_per_weight.toFixed(3), "bits per weight");
  main.appendChild(cards);
  main.appendChild(el("p", {class: "muted"}, "Errors are measured against the " + q.measured_against +
    ". SQNR is 10·log10(Σx² / Σ(x−q)²) in dB: higher is better; exact tensors have none."));

  var types = {};
  q.tensors.forEach(function (t) {
    types[t.type] = types[t.type] || {type: t.type, tensors: 0, bytes: 0};
    types[t.type].tensors++;
    types[t.type].bytes += t.bytes;
  });
  var ty = P.section("Types chosen", true);
  P.table(ty, [
    {key: "type", label: "type", fmt: function (v) { return P.typed(v); }},
    {key: "tensors", label: "tensors", num: true, fig: "type.tensors"},
    {key: "bytes", label: "bytes", num: true, fig: "type.bytes"}
  ], Object.keys(types).sort().map(function (k) { return types[k]; }));

  var cells = q.tensors.map(function (t, i) {
    return {layer: d.places[i].layer, kind: d.places[i].kind, type: t.type, name: t.name};
  });
  if (cells.some(function (c) { return c.layer !== ""; })) {
    var mp = P.section("Types by layer and tensor kind", true);
    P.typeMap(mp, cells, "map.type");
  }

  var ls = d.layers.filter(function (l) { return l.layer !== ""; });
  if (ls.length) {
    var le = P.section("Error by layer");
    var lo = Infinity, hi = -Infinity;
    ls.forEach(function (l) {
      if (l.min_sqnr_db !== null) { lo = Math.min(lo, l.min_sqnr_db); hi = Math.max(hi, l.min_sqnr_db); }
    });
    P.table(le, [
      {key: "layer", label: "layer", sortKey: function (r) { return parseInt(r.layer.replace(/^\D*/, ""), 10); }},
      {key: "tensors", label: "tensors", num: true, fig: "layer.tensors"},
      {key: "bytes", label: "bytes", num: true, fig: "layer.bytes"},
      {key: "min_sqnr_db", label: "worst SQNR dB", num: true, fig: "layer.min_sqnr_db", fmt: db},
      {key: "bar", label: "", sortKey: function (r) { return r.min_sqnr_db; }, fmt: function (v, r) {
        if (r.min_sqnr_db === null || !isFinite(lo)) return "";
        // Longer is worse: the bar grows as the worst SQNR falls.
        var w = hi > lo ? 8 + Math.round(72 * (hi - r.min_sqnr_db) / (hi - lo)) : 8;
        return el("span", {class: "bar", style: "width:" + w + "px;background:#c8102e"});
      }},
      {key: "mean_sqnr_db", label: "mean SQNR dB", num: true, fig: "layer.mean_sqnr_db", fmt: db},
      {key: "max_rmse", label: "max RMSE", num: true, fig: "layer.max_rmse", fmt: function (v) { return v.toPrecision(3); }},
      {key: "worst_tensor", label: "worst tensor"}
    ], ls, {tall: ls.length > 40});
  }

  var ts = P.section("Tensors (" + q.tensors.length + ")");
  P.table(ts, [
    {key: "name", label: "tensor"},
    {key: "type", label: "type", fmt: function (v) { return P.typed(v); }},
    {key: "bytes", label: "bytes", num: true, fig: "tensor.bytes"},
    {key: "rmse", label: "RMSE", num: true, fig: "tensor.rmse", fmt: function (v) { return v.toPrecision(3); }},
    {key: "max_abs", label: "max abs", num: true, fig: "tensor.max_abs", fmt: function (v) { return v.toPrecision(3); }},
    {key: "sqnr_db", label: "SQNR dB", num: true, fig: "tensor.sqnr_db", fmt: db},
    {key: "reason", label: "reason"}
  ], q.tensors, {filter: "filter tensors by name, type or reason", tall: true});
})();
