/* speed-matrix: the runs of every listing, searched, filtered and sorted as one set.
   The page holds its first screen of rows as HTML. The first search, filter or "Show more"
   (or a pointer on or focus in "Show more" or the filters, just before one) loads the data chunks
   (data/runs-N.js: script tags, which work from file://), then draws the matching rows a
   screenful at a time from the same cells the build renders (index_view.row_cells).
   Orders come from the build too: a column's order's first screen of records
   (data/sort-KEY-DIRECTION.js), so a first sort of the whole listing draws from that one small
   file, whatever the count, and every run's place in it (data/positions-KEY-DIRECTION.js),
   loaded with the chunks when the whole set is asked for.
   window.speedMatrixData.load(done) hands the records to other scripts (the compare picker). */
(function () {
  "use strict";

  var chunks = [];
  var waiting = null;
  var orders = {};  // by "key-direction": {first: its first screen of records, positions: the site path of its places}
  var places = {};  // by "key-direction": every run's position in the chunks, in that order
  var waitingFor = {};  // by script URL: the callbacks of a script still loading

  window.speedMatrixRuns = function (index, records) { chunks[index] = records; };
  window.speedMatrixFirstScreen = function (name, first, positions) { orders[name] = { first: first, positions: positions }; };
  window.speedMatrixPositions = function (name, positions) { places[name] = positions; };

  function addScript(url, done) {
    var script = document.createElement("script");
    script.src = url;
    script.onload = script.onerror = done;
    document.head.appendChild(script);
  }

  /* Load script URLs at once; done() when every one has loaded or failed. */
  function scripts(urls, done) {
    var pending = urls.length;
    if (!pending) { done(); return; }
    urls.forEach(function (url) { addScript(url, function () { pending -= 1; if (!pending) done(); }); });
  }

  /* A script that sets store[name], loaded once; done() runs when it has arrived (or failed: then store[name] is `missing`). */
  function loadInto(store, name, url, missing, done) {
    if (store[name]) { done(); return; }
    if (waitingFor[url]) { waitingFor[url].push(done); return; }
    waitingFor[url] = [done];
    addScript(url, function () {
      store[name] = store[name] || missing;
      var callbacks = waitingFor[url];
      delete waitingFor[url];
      callbacks.forEach(function (callback) { callback(); });
    });
  }

  /* One column's order in one direction ({name, url}): its first screen, loaded once. */
  function loadOrder(order, done) {
    loadInto(orders, order.name, order.url, { first: [], positions: "" }, done);
  }

  /* The same order's every run's place (its first screen loaded first), from the site's root; none
     (the listing's own order) when the order did not load. */
  function loadPlaces(order, root, done) {
    loadOrder(order, function () {
      var path = orders[order.name].positions;
      if (path) { loadInto(places, order.name, root + path, [], done); return; }
      places[order.name] = [];
      done();
    });
  }

  /* Load every chunk once; done(records) runs when all have arrived, in the build's order. */
  function load(urls, done) {
    if (waiting === null) {
      waiting = [done];
      scripts(urls, function () {
        var all = [].concat.apply([], chunks.filter(Boolean));
        var callbacks = waiting;
        waiting = "done";
        load.records = all;
        callbacks.forEach(function (callback) { callback(all); });
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

  /* Right-to-left letters and direction controls: what can reorder the text around it (runview._REORDERING). */
  var REORDERING = /[\u0590-\u08FF\u200F\u202A-\u202E\u2066-\u2069\uFB1D-\uFDFF\uFE70-\uFEFF]|[\uD802\uD803\uD83A\uD83B][\uDC00-\uDFFF]/;

  /* Text from a bundle as the build's `bdi` filter prints it: in a <bdi> when it holds what can reorder the text around it. */
  function isolated(text) {
    return REORDERING.test(text) ? el("bdi", text) : document.createTextNode(text);
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
        var link = el("a");
        link.appendChild(isolated(cell[0]));
        link.href = root + cell[2];
        td.appendChild(link);
      } else {
        td.appendChild(isolated(cell[0]));
      }
      if (cell[3]) td.appendChild(document.createTextNode(cell[3]));
      if (cell[4]) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", cell[4], "sub")); }
      tr.appendChild(td);
    });
    return tr;
  }

  function listing(table, form) {
    var root = table.getAttribute("data-root");
    var urls = (table.getAttribute("data-chunks") || "").split(" ").filter(Boolean);
    var scope = (table.getAttribute("data-scope") || "").split(":");
    var body = table.tBodies[0];
    var screen = body.rows.length || 100;
    var limit = screen;
    var headers = Array.prototype.slice.call(table.querySelectorAll("thead th[data-key]"));
    var columns = headers.map(function (th) {
      return { key: th.getAttribute("data-key"), numeric: th.getAttribute("data-kind") === "number", orders: (th.getAttribute("data-orders") || "").split(" ") };
    });
    var sort = null;  // {name: "key-direction", url, reverse: the other direction's {name, url}}
    var chosen = [];
    var more = document.getElementById("runs-more");
    var count = document.getElementById("runs-shown");
    var note = document.getElementById("runs-more-note");
    var search = form ? form.querySelector("input[name=q]") : null;
    var selects = form ? Array.prototype.slice.call(form.querySelectorAll("select")) : [];
    var total = Number(table.getAttribute("data-total"));
    if (more && total > body.rows.length) more.hidden = false;

    /* Draw the first `limit` of `rows`, which are `matching` runs of the `inScope` the listing holds. */
    function drawRows(rows, matching, inScope) {
      var fragment = document.createDocumentFragment();
      rows.slice(0, limit).forEach(function (record) { fragment.appendChild(row(record, columns, root, chosen)); });
      body.textContent = "";
      body.appendChild(fragment);
      if (note) note.hidden = true;
      if (more) {
        more.hidden = matching <= limit;
        more.textContent = "Show " + Math.min(screen, matching - limit).toLocaleString("en") + " more of " + matching.toLocaleString("en");
      }
      if (count) count.textContent = matching === inScope ? "" : "Showing " + matching.toLocaleString("en") + " of " + inScope.toLocaleString("en") + " runs";
      table.setAttribute("aria-busy", "false");
    }

    function draw(records) {
      // The chunks may arrive after the reader chose another order: its places come first.
      if (sort && !places[sort.name]) { loadPlaces(sort, root, update); return; }
      var positions = sort ? places[sort.name] : [];
      // An order that did not load (or is not this data's) leaves the listing's own order.
      var ordered = positions.length === records.length ? positions.map(function (p) { return records[p]; }) : records;
      var inScope = scope.length === 2 ? ordered.filter(function (r) { return r[scope[0]] === scope[1]; }) : ordered;
      var matches = matcher(search ? search.value : "");
      var shown = inScope.filter(function (record) {
        return matches(record) && selects.every(function (select) { return !select.value || record[select.name] === select.value; });
      });
      drawRows(shown, shown.length, inScope.length);
    }

    /* Whether the listing shows every run of the site in one screen: its first sort needs no chunk. */
    function wholeFirstScreen() {
      return scope.length !== 2 && limit === screen && !(search && search.value.trim()) && selects.every(function (select) { return !select.value; });
    }

    function update() {
      table.setAttribute("aria-busy", "true");
      if (sort && !orders[sort.name]) { loadOrder(sort, update); return; }
      if (sort && load.records === undefined && orders[sort.name].first.length && wholeFirstScreen()) {
        drawRows(orders[sort.name].first, total, total);
        // The other direction's first screen, once this one is painted, so that a second click on the
        // column draws at once too. The chunks and places wait until the whole set is asked for: on a
        // large site parsing them would hold the page up after every first sort.
        var reverse = sort.reverse;
        requestAnimationFrame(function () { setTimeout(function () { loadOrder(reverse, function () {}); }, 0); });
        return;
      }
      if (sort && !places[sort.name]) { load(urls, function () {}); loadPlaces(sort, root, update); return; }
      load(urls, draw);
    }

    /* A column's order in one direction: its name and the URL of its script. */
    function order(column, ascending) {
      return { name: column.key + (ascending ? "-ascending" : "-descending"), url: column.orders[ascending ? 0 : 1] };
    }

    headers.forEach(function (th, index) {
      var label = th.textContent;
      th.textContent = "";
      var button = el("button", label, "sort");
      button.type = "button";
      th.appendChild(button);
      if (!th.hasAttribute("aria-sort")) th.setAttribute("aria-sort", "none");  // the page says which order it is in
      th.addEventListener("click", function (event) { if (event.target === th) button.click(); });  // the whole cell sorts
      button.addEventListener("click", function () {
        // Numbers start biggest first, text A to Z; a second click reverses.
        var current = th.getAttribute("aria-sort");
        var ascending = current === "none" ? !columns[index].numeric : current !== "ascending";
        headers.forEach(function (other) { other.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        sort = order(columns[index], ascending);
        sort.reverse = order(columns[index], !ascending);
        limit = screen;
        update();
      });
    });
    if (more) more.addEventListener("click", function () { limit += screen; update(); });
    // A reader pointing at or moving to "Show more", or entering the filters, is about to ask for the
    // whole set: start loading it then, so the click finds it (nothing is drawn until asked). A sort
    // of the whole listing needs none of it; one of a model's or GPU's runs needs it all.
    var prefetch = function () {
      load(urls, function () {});
      if (sort) loadPlaces(sort, root, function () {});
    };
    if (more) more.addEventListener("pointerenter", prefetch);
    if (more) more.addEventListener("focus", prefetch);
    if (form) form.addEventListener("focusin", prefetch);
    if (scope.length === 2) table.tHead.addEventListener("pointerenter", prefetch, { once: true });
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

  window.speedMatrixData = { load: load, matcher: matcher, scripts: scripts, isolated: isolated };
  document.addEventListener("DOMContentLoaded", function () {
    var table = document.getElementById("runs-table");
    if (table) listing(table, document.getElementById("filters"));
  });
})();
