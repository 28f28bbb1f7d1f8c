/* Compare 2-4 runs chosen on the index. State lives in the URL hash (#runs=a,b),
   and each run's data comes from runs/<id>/picker.js, a script tag that works from file://. */
(function () {
  "use strict";
  var ID = /^[a-z0-9](?:[a-z0-9-]{0,118}[a-z0-9])?$/;
  var root = document.getElementById("picker");
  var base = root.getAttribute("data-root");
  var loaded = {};
  var SHOWN = 50;  // search results listed at a time
  var NO_SHARED_CELL = "No cell has a value in both runs: they share no context and concurrency that both measured.";

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function isolated(text) { return window.speedMatrixData.isolated(text); }

  function chosenIds() {
    var match = /(?:^|[#&])runs=([^&]*)/.exec(window.location.hash);
    if (!match) return [];
    return decodeURIComponent(match[1]).split(",")
      .filter(function (id, i, all) { return ID.test(id) && all.indexOf(id) === i; }).slice(0, 4);
  }

  window.speedMatrixRun = function (run) { loaded[run.id] = run; };

  function load(ids, done) {
    var pending = ids.length;
    ids.forEach(function (id) {
      var script = document.createElement("script");
      script.src = base + "runs/" + id + "/picker.js";
      script.onload = script.onerror = function () { pending -= 1; if (!pending) done(); };
      document.head.appendChild(script);
    });
  }

  function matrixTable(run) {
    var table = el("table", null, "matrix");
    var head = table.createTHead().insertRow();
    head.appendChild(el("th", "Context"));
    run.concurrencies.forEach(function (n) { head.appendChild(el("th", String(n))); });
    var body = table.createTBody();
    run.rows.forEach(function (row) {  // [label, cells], each cell [value, note, heat, status]
      var tr = body.insertRow();
      tr.appendChild(el("th", row[0]));
      row[1].forEach(function (cell) {
        var td = el("td", null, "cell status-" + (cell[3] || "none").toLowerCase().replace(/ /g, "-"));
        if (cell[2] !== null) td.style.setProperty("--heat", String(cell[2]));
        [[cell[0], "value"], [cell[1], "note"]].forEach(function (part) {
          if (part[0]) td.appendChild(el("span", part[0], part[1]));
        });
        tr.appendChild(td);
      });
    });
    return table;
  }

  function ratioTable(base, other) {
    // Only the contexts and concurrencies where both runs have a value somewhere; null if none.
    var shared = Object.keys(base.totals).filter(function (key) { return other.totals[key] !== undefined; });
    if (!shared.length) return null;
    var labels = {};
    Object.keys(base.contexts).forEach(function (label) { labels[base.contexts[label]] = label; });
    function part(index) {  // the distinct contexts (0) or concurrencies (1) of the shared "CxN" keys, ascending
      return shared.map(function (key) { return Number(key.split("x")[index]); })
        .filter(function (v, i, all) { return all.indexOf(v) === i; }).sort(function (x, y) { return x - y; });
    }
    var contexts = part(0).map(function (c) { return [labels[c], c]; });
    var levels = part(1);
    var table = el("table", null, "matrix ratio");
    var head = table.createTHead().insertRow();
    head.appendChild(el("th", "Context"));
    levels.forEach(function (n) { head.appendChild(el("th", String(n))); });
    var body = table.createTBody();
    contexts.forEach(function (pair) {
      var ratios = levels.map(function (n) {
        var key = pair[1] + "x" + n, a = base.totals[key], b = other.totals[key];
        return a && b !== undefined ? b / a : null;
      });
      var tr = body.insertRow();
      tr.appendChild(el("th", pair[0]));
      ratios.forEach(function (ratio) {
        var cls = ratio === null || Math.abs(ratio - 1) < 0.02 ? "" : (ratio > 1 ? "ratio-up" : "ratio-down");
        tr.appendChild(el("td", ratio === null ? "—" : ratio.toFixed(2) + "×", cls));
      });
    });
    return table;
  }

  function diffTable(runs) {
    var labels = [];
    var facts = runs.map(function (run) {
      var map = {};
      run.facts.forEach(function (pair) { map[pair[0]] = pair[1]; if (labels.indexOf(pair[0]) < 0) labels.push(pair[0]); });
      return map;
    });
    var table = el("table", null, "diffs");
    var head = table.createTHead().insertRow();
    head.appendChild(el("th", "Field"));
    runs.forEach(function (run) { head.appendChild(el("th", run.title)); });
    var body = table.createTBody();
    labels.concat(["Launch command"]).forEach(function (label) {
      var values = runs.map(function (run, i) { return label === "Launch command" ? run.launch : (facts[i][label] || "—"); });
      var differs = values.some(function (v) { return v !== values[0]; });
      var tr = body.insertRow();
      var th = el("th", label);
      if (differs) {  // said in words too, not by the row's shade alone
        tr.className = "differs";
        th.appendChild(el("span", "differs", "sub"));
      }
      tr.appendChild(th);
      values.forEach(function (v) { tr.appendChild(el("td", v)); });
    });
    return table;
  }

  /* A table in a box that scrolls sideways: a named region a keyboard can reach and scroll. */
  function scroll(node, name) {
    var box = el("div", null, "table-scroll");
    box.setAttribute("role", "region");
    box.setAttribute("tabindex", "0");
    box.setAttribute("aria-label", name);
    box.appendChild(node);
    return box;
  }

  function render(ids) {
    var runs = ids.map(function (id) { return loaded[id]; }).filter(Boolean);
    if (runs.length < 2) {
      var missing = ids.filter(function (id) { return !loaded[id]; });
      root.appendChild(missing.length ? el("p", "Unknown run: " + missing.join(", "), "errors")
        : el("p", "Choose at least two different runs to compare.", "caption"));
      return;
    }
    var baseRun = runs[0];
    var ratios = el("section", null, "panel");
    var heading = el("h2", "Ratio to ");
    heading.appendChild(isolated(baseRun.title));
    ratios.appendChild(heading);
    // Each run's place in the choice names its tables too: two runs may have the same title.
    function named(run, i) { return run.title + (i ? " (run " + (i + 1) + ")" : " (baseline)"); }
    runs.slice(1).forEach(function (run, i) {
      ratios.appendChild(el("h3", run.title));
      var table = ratioTable(baseRun, run);
      ratios.appendChild(table ? scroll(table, "Ratio of " + named(run, i + 1) + " to the baseline") : el("p", NO_SHARED_CELL, "caption"));
    });
    root.appendChild(ratios);
    var grid = el("div", null, "side-by-side");
    runs.forEach(function (run, i) {
      var panel = el("section", null, "panel compared-run");
      var heading = el("h2");
      var link = el("a", run.title);
      link.href = base + "runs/" + run.id + "/index.html";
      heading.appendChild(link);
      panel.appendChild(heading);
      panel.appendChild(el("p", run.summary, "caption"));
      panel.appendChild(scroll(matrixTable(run), "Sustained decode: " + named(run, i)));
      grid.appendChild(panel);
    });
    root.appendChild(grid);
    var diffs = el("section", null, "panel");
    diffs.appendChild(el("h2", "What differs"));
    diffs.appendChild(scroll(diffTable(runs), "What differs"));
    root.appendChild(diffs);
  }

  /* The choice: a search over every run (model, GPU, engine), the chosen runs listed first. */
  function chooser(ids) {
    var form = document.getElementById("picker-form");
    var button = document.getElementById("picker-compare");
    var hint = document.getElementById("picker-hint");
    var list = document.getElementById("picker-choices");
    var found = document.getElementById("picker-found");
    var search = document.getElementById("picker-search");
    var urls = form.getAttribute("data-chunks").split(" ").filter(Boolean);
    var order = ids.slice();
    var records = [];
    var byId = {};
    form.hidden = false;

    function detail(record) {
      var c = record.cells, parts = [];
      if (record.gpu) parts.push(c.gpu[0] + (c.gpu[3] || ""));
      parts.push(c.engine[0]);
      if (c.date[1]) parts.push(c.date[0]);
      return parts.join(" · ");
    }

    function choice(record) {
      var item = el("li"), label = el("label"), box = el("input");
      box.type = "checkbox";
      box.name = "run";
      box.value = record.id;
      box.checked = order.indexOf(record.id) >= 0;
      label.appendChild(box);
      label.appendChild(document.createTextNode(" "));
      label.appendChild(el("span", null, "choice-title")).appendChild(isolated(record.model));
      label.appendChild(document.createTextNode(" "));
      label.appendChild(el("span", detail(record), "choice-detail"));
      item.appendChild(label);
      return item;
    }

    function draw() {
      var matches = window.speedMatrixData.matcher(search.value);
      var shown = order.map(function (id) { return byId[id]; }).filter(Boolean);
      var hits = records.filter(function (r) { return order.indexOf(r.id) < 0 && matches(r); });
      list.textContent = "";
      shown.concat(hits.slice(0, SHOWN)).forEach(function (record) { list.appendChild(choice(record)); });
      found.textContent = hits.length > SHOWN ? "The first " + SHOWN + " of " + hits.length.toLocaleString("en") + " matching runs: type more to narrow them." : "";
    }

    function update() {
      button.disabled = order.length < 2 || order.length > 4;
      hint.textContent = order.length > 4 ? order.length + " chosen: a comparison takes at most 4 runs" : "";
    }
    form.addEventListener("change", function (event) {
      var id = event.target.value;
      if (event.target.name !== "run") return;
      order = order.filter(function (x) { return x !== id; });
      if (event.target.checked) order.push(id);
      update();
    });
    search.addEventListener("input", draw);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      window.location.hash = "runs=" + order.map(encodeURIComponent).join(",");
    });
    update();
    window.speedMatrixData.load(urls, function (all) {
      records = all;
      all.forEach(function (record) { byId[record.id] = record; });
      draw();
      form.setAttribute("aria-busy", "false");
    });
  }

  var ids = chosenIds();
  chooser(ids);
  if (ids.length) load(ids, function () { render(ids); });
  window.addEventListener("hashchange", function () { window.location.reload(); });
})();
