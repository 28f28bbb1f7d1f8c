/* speed-matrix: the runs of every listing, searched, filtered and sorted as one set.
   The page holds its first screen of rows as HTML. The first search, filter, sort or "Show more"
   (or a pointer on the headers, or focus in the filters, just before one) loads the data chunks (data/runs-N.js: script tags, which work from file://), then draws the
   matching rows a screenful at a time from the same cells the build renders (index_view.row_cells).
   window.speedMatrixData.load(done) hands the records to other scripts (the compare picker). */
(function () {
  "use strict";

  var chunks = [];
  var waiting = null;

  window.speedMatrixRuns = function (index, records) { chunks[index] = records; };

  /* Load every chunk once; done(records) runs when all have arrived, in the build's order. */
  function load(urls, done) {
    if (waiting === null) {
      waiting = [done];
      var pending = urls.length;
      var finish = function () {
        var all = [].concat.apply([], chunks.filter(Boolean));
        waiting.forEach(function (callback) { callback(all); });
        waiting = "done";
        load.records = all;
      };
      if (!pending) { finish(); return; }
      urls.forEach(function (url) {
        var script = document.createElement("script");
        script.src = url;
        script.onload = script.onerror = function () { pending -= 1; if (!pending) finish(); };
        document.head.appendChild(script);
      });
    } else if (waiting === "done") {
      done(load.records);
    } else {
      waiting.push(done);
    }
  }

  /* The words of a query; a run matches when each is in its model, GPU or engine. */
  function matcher(query) {
    var words = query.toLowerCase().split(/\s+/).filter(Boolean);
    return function (record) {
      if (!words.length) return true;
      var text = record.search || (record.search = [record.model, record.gpu, record.cells.engine[0]].join(" ").toLowerCase());
      return words.every(function (word) { return text.indexOf(word) >= 0; });
    };
  }

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  /* A row as _runs_table.html renders it; cells are [text, sort, href, after, sub], trailing defaults left out. */
  function row(record, columns, root, chosen) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", record.id);
    var pick = el("td", null, "pick");
    var box = document.createElement("input");
    box.type = "checkbox";
    box.name = "compare";
    box.value = record.id;
    box.checked = chosen.indexOf(record.id) >= 0;
    box.setAttribute("aria-label", "Compare " + record.model);
    pick.appendChild(box);
    tr.appendChild(pick);
    columns.forEach(function (column) {
      var cell = record.cells[column.key] || ["—"];
      var td = el("td", null, column.numeric ? "num" : null);
      td.setAttribute("data-value", cell[1] === undefined ? "" : String(cell[1]));
      if (cell[2]) {
        var link = el("a", cell[0]);
        link.href = root + cell[2];
        td.appendChild(link);
      } else {
        td.appendChild(document.createTextNode(cell[0]));
      }
      if (cell[3]) td.appendChild(document.createTextNode(cell[3]));
      if (cell[4]) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", cell[4], "sub")); }
      tr.appendChild(td);
    });
    return tr;
  }

  /* Runs without the figure go last either way; numbers compare as numbers, text by locale. */
  function comparer(key, numeric, ascending) {
    return function (a, b) {
      var x = a.cells[key] ? a.cells[key][1] : "", y = b.cells[key] ? b.cells[key][1] : "";
      var hasX = x !== undefined && x !== "", hasY = y !== undefined && y !== "";
      if (!hasX || !hasY) return (hasX ? 0 : 1) - (hasY ? 0 : 1);
      var order = numeric ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    };
  }

  function listing(table, form) {
    var root = table.getAttribute("data-root");
    var urls = (table.getAttribute("data-chunks") || "").split(" ").filter(Boolean);
    var scope = (table.getAttribute("data-scope") || "").split(":");
    var body = table.tBodies[0];
    var screen = body.rows.length || 100;
    var limit = screen;
    var headers = Array.prototype.slice.call(table.querySelectorAll("thead th[data-key]"));
    var columns = headers.map(function (th) { return { key: th.getAttribute("data-key"), numeric: th.getAttribute("data-kind") === "number" }; });
    var sort = null;  // {key, numeric, ascending}
    var chosen = [];
    var more = document.getElementById("runs-more");
    var count = document.getElementById("runs-shown");
    var note = document.getElementById("runs-more-note");
    var search = form ? form.querySelector("input[name=q]") : null;
    var selects = form ? Array.prototype.slice.call(form.querySelectorAll("select")) : [];
    var total = Number(table.getAttribute("data-total"));
    if (more && total > body.rows.length) more.hidden = false;

    function draw(records) {
      var inScope = scope.length === 2 ? records.filter(function (r) { return r[scope[0]] === scope[1]; }) : records;
      var matches = matcher(search ? search.value : "");
      var shown = inScope.filter(function (record) {
        return matches(record) && selects.every(function (select) { return !select.value || record[select.name] === select.value; });
      });
      if (sort) shown = shown.slice().sort(comparer(sort.key, sort.numeric, sort.ascending));
      var fragment = document.createDocumentFragment();
      shown.slice(0, limit).forEach(function (record) { fragment.appendChild(row(record, columns, root, chosen)); });
      body.textContent = "";
      body.appendChild(fragment);
      if (note) note.hidden = true;
      if (more) {
        more.hidden = shown.length <= limit;
        more.textContent = "Show " + Math.min(screen, shown.length - limit).toLocaleString("en") + " more of " + shown.length.toLocaleString("en");
      }
      if (count) count.textContent = shown.length === inScope.length ? "" : "Showing " + shown.length.toLocaleString("en") + " of " + inScope.length.toLocaleString("en") + " runs";
      table.setAttribute("aria-busy", "false");
    }

    function update() {
      table.setAttribute("aria-busy", "true");
      load(urls, draw);
    }

    headers.forEach(function (th, index) {
      var label = th.textContent;
      th.textContent = "";
      var button = el("button", label, "sort");
      button.type = "button";
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", function (event) { if (event.target === th) button.click(); });  // the whole cell sorts
      button.addEventListener("click", function () {
        // Numbers start biggest first, text A to Z; a second click reverses.
        var current = th.getAttribute("aria-sort");
        var ascending = current === "none" ? !columns[index].numeric : current !== "ascending";
        headers.forEach(function (other) { other.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        sort = { key: columns[index].key, numeric: columns[index].numeric, ascending: ascending };
        limit = screen;
        update();
      });
    });
    if (more) more.addEventListener("click", function () { limit += screen; update(); });
    // A reader pointing at the table's headers or entering the filters is about to ask for the
    // whole set: start loading it then, so the click finds it (nothing is drawn until asked).
    var prefetch = function () { load(urls, function () {}); };
    table.tHead.addEventListener("pointerenter", prefetch, { once: true });
    if (more) more.addEventListener("pointerenter", prefetch, { once: true });
    if (form) form.addEventListener("focusin", prefetch, { once: true });
    if (form) {
      form.hidden = false;
      form.addEventListener("submit", function (event) { event.preventDefault(); });
      selects.forEach(function (select) { select.addEventListener("change", function () { limit = screen; update(); }); });
      if (search) search.addEventListener("input", function () { limit = screen; update(); });
    }

    var button = document.getElementById("compare-selected");
    if (button && form) {
      table.addEventListener("change", function (event) {
        var id = event.target.value;
        if (event.target.name !== "compare") return;
        chosen = chosen.filter(function (x) { return x !== id; });
        if (event.target.checked) chosen.push(id);
        button.disabled = chosen.length < 2 || chosen.length > 4;
      });
      button.addEventListener("click", function () {
        window.location.href = form.getAttribute("data-compare-url") + "#runs=" + chosen.map(encodeURIComponent).join(",");
      });
    }
  }

  window.speedMatrixData = { load: load, matcher: matcher };
  document.addEventListener("DOMContentLoaded", function () {
    var table = document.getElementById("runs-table");
    if (table) listing(table, document.getElementById("filters"));
  });
})();
