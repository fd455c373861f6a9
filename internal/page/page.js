"use strict";
// The shared script of tfconv's pages: P.data() is the embedded JSON;
// P.table builds a table sorted by a click on a column and filtered by
// text; every number it shows carries data-fig and data-value.
var P = (function () {
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    document.documentElement.setAttribute("data-page-error", errors.join("; "));
  }
  window.addEventListener("error", function (e) { fail(e.message || e); });
  window.addEventListener("unhandledrejection", function (e) { fail(e.reason); });
  // A console error counts as a failure too (a test reads the attribute).
  var consoleError = console.error;
  console.error = function () {
    fail(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };

  function data() {
    return JSON.parse(document.getElementById("page-data").textContent);
  }
  // el("td", {class: "n"}, child, ...): children are nodes or text.
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (attrs[k] === undefined || attrs[k] === null) continue;
        if (k === "text") e.textContent = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === undefined || c === null) continue;
      e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  // section(title, half): on a wide screen a grid page (main.grid) sets
  // half sections two abreast.
  function section(title, half) {
    var s = el("section", {class: half ? "half" : null}, el("h2", {text: title}));
    document.getElementById("main").appendChild(s);
    return s;
  }
  function bytes(n) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = n;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return i === 0 ? n + " B" : v.toFixed(v < 10 ? 2 : 1) + " " + u[i];
  }
  function count(n) {
    var u = ["", "K", "M", "B", "T"], i = 0, v = n;
    while (Math.abs(v) >= 1000 && i < u.length - 1) { v /= 1000; i++; }
    return i === 0 ? String(n) : v.toFixed(v < 10 ? 2 : 1) + u[i];
  }
  function num(v, digits) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return v.toLocaleString("en-US");
    return Number(v.toPrecision(digits || 4)).toString();
  }
  // A figure: text shown, with its name and exact value in data-*.
  function fig(tag, name, value, text, attrs) {
    var a = Object.assign({"data-fig": name, "data-value": value === null ? "null" : String(value)}, attrs || {});
    return el(tag, a, text === undefined ? num(value) : text);
  }
  // Colours by dtype family: floats blue/green, 8-bit teal, k-quants
  // orange to red by fewer bits, i-quants purple.
  var palette = {
    F64: "#08306b", F32: "#2171b5", F16: "#6baed6", BF16: "#9ecae1", F8_E4M3: "#c6dbef", F8_E5M2: "#c6dbef",
    I8: "#41ab5d", I16: "#74c476", I32: "#a1d99b", I64: "#c7e9c0",
    Q8_0: "#1b9e77", Q8_1: "#1b9e77", Q8_K: "#1b9e77", Q6_K: "#66a61e", Q5_0: "#a6d854", Q5_1: "#b3de69", Q5_K: "#d9ef8b",
    Q4_0: "#fee08b", Q4_1: "#fdd49e", Q4_K: "#fdae61", IQ4_NL: "#fcbba1", IQ4_XS: "#fc9272", MXFP4: "#fb6a4a",
    Q3_K: "#f46d43", IQ3_S: "#de77ae", IQ3_XXS: "#c51b7d", Q2_K: "#d73027", IQ2_S: "#8073ac", IQ2_XS: "#6a51a3",
    IQ2_XXS: "#54278f", IQ1_S: "#3f007d", IQ1_M: "#4a1486", TQ1_0: "#969696", TQ2_0: "#bdbdbd"
  };
  function color(dt) {
    var c = palette[String(dt).toUpperCase()];
    if (c) return c;
    var h = 0, s = String(dt);
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) % 360;
    return "hsl(" + h + ",55%,60%)";
  }
  function swatch(dt) { return el("span", {class: "swatch", style: "background:" + color(dt)}); }
  // typed(dt): a type's name after its colour.
  function typed(dt) { return el("span", {class: "nowrap"}, swatch(dt), dt); }
  function legend(dtypes) {
    var d = el("div", {class: "legend"});
    dtypes.forEach(function (t) { d.appendChild(el("span", null, swatch(t), t)); });
    return d;
  }
  // table(parent, columns, rows, opts): columns [{key, label, num, fmt(v,row),
  // fig}] (fig: the data-fig of the column's cells, "" for none); rows
  // objects; opts.filter adds a text filter over every column, opts.tall
  // scrolls the body under a sticky head.
  function table(parent, columns, rows, opts) {
    opts = opts || {};
    var input = null;
    if (opts.filter) {
      input = el("input", {class: "filter", type: "search", placeholder: opts.filter, "aria-label": opts.filter});
      parent.appendChild(input);
    }
    var t = el("table", {class: "sortable" + (opts.cls ? " " + opts.cls : "")});
    var head = el("tr");
    columns.forEach(function (c, i) {
      var th = el("th", {class: c.num ? "n" : null, scope: "col", "data-col": c.key}, c.label);
      th.addEventListener("click", function () { sortBy(i); });
      head.appendChild(th);
    });
    t.appendChild(el("thead", null, head));
    var body = el("tbody");
    t.appendChild(body);
    var trs = rows.map(function (r, ri) {
      var tr = el("tr", {"data-row": ri});
      columns.forEach(function (c) {
        var v = r[c.key];
        var text = c.fmt ? c.fmt(v, r) : (c.num ? num(v) : (v === undefined || v === null ? "" : String(v)));
        var td;
        if (c.fig) td = fig("td", c.fig, v, undefined, {class: c.num ? "n" : null});
        else td = el("td", {class: c.num ? "n" : null});
        td.textContent = "";
        if (typeof text === "object") td.appendChild(text); else td.textContent = text;
        tr.appendChild(td);
      });
      tr._row = r;
      tr._text = columns.map(function (c) { return String(r[c.key]); }).join(" ").toLowerCase();
      body.appendChild(tr);
      return tr;
    });
    var state = {col: -1, dir: 1};
    function sortBy(i) {
      state.dir = state.col === i ? -state.dir : 1;
      state.col = i;
      var c = columns[i];
      var key = c.sortKey || function (r) { return r[c.key]; };
      var sorted = trs.slice().sort(function (a, b) {
        var x = key(a._row), y = key(b._row);
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        if (typeof x === "number" && typeof y === "number") return state.dir * (x - y);
        return state.dir * String(x).localeCompare(String(y), "en", {numeric: true});
      });
      sorted.forEach(function (tr) { body.appendChild(tr); });
      Array.prototype.forEach.call(head.children, function (th, j) {
        if (j === i) th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
        else th.removeAttribute("aria-sort");
      });
    }
    if (input) {
      input.addEventListener("input", function () {
        var q = input.value.trim().toLowerCase();
        trs.forEach(function (tr) { tr.hidden = q !== "" && tr._text.indexOf(q) < 0; });
      });
    }
    var wrap = el("div", {class: "scroll" + (opts.tall ? " tall" : "")}, t);
    parent.appendChild(wrap);
    // reset puts the rows back in the data's order, unsorted and unfiltered.
    function reset() {
      state.col = -1;
      trs.forEach(function (tr) { tr.hidden = false; body.appendChild(tr); });
      Array.prototype.forEach.call(head.children, function (th) { th.removeAttribute("aria-sort"); });
      if (input) input.value = "";
    }
    var api = {table: t, head: head, rows: trs, filter: input, reset: reset};
    tables.push(api);
    return api;
  }
  var tables = [];

  // selftest (a page opened as FILE#selftest) clicks every sortable
  // column holding figures twice and checks the rows' order, types the
  // first row's first cell into each filter and checks what stays shown,
  // then puts every table back as it was; data-selftest says how many
  // sorts and filters it checked.
  function selftest() {
    var sorts = 0, filters = 0;
    tables.forEach(function (tb, ti) {
      Array.prototype.forEach.call(tb.head.children, function (th, ci) {
        if (!tb.rows.length || !tb.rows[0].children[ci].hasAttribute("data-fig")) return;
        [1, -1].forEach(function (dir) {
          th.dispatchEvent(new MouseEvent("click", {bubbles: true}));
          var vals = Array.prototype.map.call(tb.table.tBodies[0].rows, function (tr) {
            var v = tr.children[ci].getAttribute("data-value");
            return v === "null" ? null : parseFloat(v);
          });
          var want = th.getAttribute("aria-sort") === (dir > 0 ? "ascending" : "descending");
          for (var i = 1; i < vals.length && want; i++) {
            if (vals[i] === null || vals[i - 1] === null || isNaN(vals[i]) || isNaN(vals[i - 1])) continue;
            want = dir * (vals[i] - vals[i - 1]) >= 0;
          }
          if (!want) fail("selftest: table " + ti + " column " + th.textContent + " not sorted " + (dir > 0 ? "up" : "down"));
          sorts++;
        });
      });
      if (tb.filter && tb.rows.length) {
        var q = tb.rows[tb.rows.length - 1].children[0].textContent;
        tb.filter.value = q;
        tb.filter.dispatchEvent(new Event("input"));
        var shown = tb.rows.filter(function (tr) { return !tr.hidden; });
        if (!shown.length || shown.some(function (tr) { return tr.textContent.toLowerCase().indexOf(q.toLowerCase()) < 0; })) {
          fail("selftest: filter " + JSON.stringify(q) + " shows " + shown.length + " rows");
        }
        filters++;
      }
      tb.reset();
    });
    document.documentElement.setAttribute("data-selftest", sorts + " sorts, " + filters + " filters");
  }
  // kv(parent, [[label, value node or text], ...]) is a two-column table.
  function kv(parent, rows) {
    var t = el("table", {class: "kv"});
    rows.forEach(function (r) {
      if (r) t.appendChild(el("tr", null, el("th", {scope: "row"}, r[0]), el("td", null, r[1])));
    });
    parent.appendChild(el("div", {class: "scroll"}, t));
    return t;
  }
  // typeMap(parent, cells, figName): a layer × tensor-kind grid, one cell
  // per tensor coloured by its type; cells [{layer, kind, type, name}]
  // (layer "" : outside the layers, left out). Rows are kinds in the
  // order given, columns layers in order.
  function typeMap(parent, cells, figName) {
    var layers = [], kinds = [], seenL = {}, seenK = {}, at = {}, types = [], seenT = {};
    cells.forEach(function (c) {
      if (c.layer === "") return;
      if (!seenL[c.layer]) { seenL[c.layer] = 1; layers.push(c.layer); }
      if (!seenK[c.kind]) { seenK[c.kind] = 1; kinds.push(c.kind); }
      if (!seenT[c.type]) { seenT[c.type] = 1; types.push(c.type); }
      at[c.kind + "\u0000" + c.layer] = c;
    });
    if (!layers.length) { parent.appendChild(el("p", {class: "muted"}, "No tensors in numbered layers.")); return; }
    // By stack, then by number ("decoder.10" after "decoder.9", "10" after "9").
    layers.sort(function (a, b) { return a.localeCompare(b, "en", {numeric: true}); });
    parent.appendChild(legend(types));
    var t = el("table", {class: "map"});
    var head = el("tr", null, el("th", {class: "kind"}, "layer →"));
    layers.forEach(function (l) { head.appendChild(el("th", {scope: "col"}, l)); });
    t.appendChild(el("thead", null, head));
    var body = el("tbody");
    kinds.forEach(function (k) {
      var tr = el("tr", null, el("th", {class: "kind", scope: "row"}, k));
      layers.forEach(function (l) {
        var c = at[k + "\u0000" + l];
        if (!c) { tr.appendChild(el("td")); return; }
        tr.appendChild(el("td", {style: "background:" + color(c.type), title: c.name + ": " + c.type,
          "data-fig": figName, "data-name": c.name, "data-value": c.type}));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    parent.appendChild(el("div", {class: "scroll"}, t));
  }
  function done() {
    if (location.hash === "#selftest") selftest();
    if (!errors.length) document.documentElement.setAttribute("data-rendered", "ok");
  }
  return {data: data, el: el, section: section, bytes: bytes, count: count, num: num, fig: fig,
    color: color, swatch: swatch, typed: typed, legend: legend, table: table, typeMap: typeMap, kv: kv, done: done, fail: fail};
})();
