/* speed-matrix: progressive enhancement only. Every page reads fully without it. */
(function () {
  "use strict";

  function drawCharts() {
    if (!window.Plotly) return;
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    document.querySelectorAll(".chart[data-figure]").forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure"));
      if (!source) return;
      var fig = JSON.parse(source.textContent);
      var layout = fig.layout || {};
      layout.font = Object.assign({ color: dark ? "#e6e8eb" : "#1b1d21" }, layout.font || {});
      var config = Object.assign({ responsive: true, displaylogo: false }, fig.config || {});
      window.Plotly.newPlot(el, fig.data || [], layout, config);
    });
  }

  function copyButtons() {
    document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) return;
      button.hidden = false;
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(source.textContent).then(function () {
          button.textContent = "Copied";
          setTimeout(function () { button.textContent = "Copy"; }, 1500);
        });
      });
    });
  }

  function sortableTable(table) {
    var headers = table.querySelectorAll("thead th[data-key]");
    headers.forEach(function (th, index) {
      var column = index + 1;
      var label = th.textContent;
      th.textContent = "";
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = label;
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      th.addEventListener("click", function (event) { if (event.target === th) button.click(); });  // the whole cell sorts
      var numeric = th.getAttribute("data-kind") === "number";
      button.addEventListener("click", function () {
        // Numbers start biggest first, text A to Z; a second click reverses.
        var current = th.getAttribute("aria-sort");
        var ascending = current === "none" ? !numeric : current !== "ascending";
        headers.forEach(function (other) { other.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column].getAttribute("data-value");
          var y = b.cells[column].getAttribute("data-value");
          if (!x || !y) return (x ? 0 : 1) - (y ? 0 : 1);  // runs without the figure go last either way
          var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  function filters(form, table) {
    form.hidden = false;
    var selects = form.querySelectorAll("select");
    var count = document.getElementById("runs-shown");
    function apply() {
      var rows = table.tBodies[0].rows;
      var shown = 0;
      Array.prototype.forEach.call(rows, function (row) {
        row.hidden = !Array.prototype.every.call(selects, function (select) {
          return !select.value || row.getAttribute("data-" + select.name) === select.value;
        });
        if (!row.hidden) shown += 1;
      });
      if (count) count.textContent = shown === rows.length ? "" : "Showing " + shown + " of " + rows.length + " runs";
    }
    selects.forEach(function (select) { select.addEventListener("change", apply); });
  }

  function picker(form, table) {
    var button = document.getElementById("compare-selected");
    if (!button) return;
    function chosen() {
      return Array.prototype.map.call(table.querySelectorAll("input[name=compare]:checked"), function (box) { return box.value; });
    }
    table.addEventListener("change", function () {
      var count = chosen().length;
      button.disabled = count < 2 || count > 4;
    });
    button.addEventListener("click", function () {
      window.location.href = form.getAttribute("data-compare-url") + "#runs=" + chosen().map(encodeURIComponent).join(",");
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts();
    copyButtons();
    var table = document.getElementById("runs-table");
    var form = document.getElementById("filters");
    if (table) sortableTable(table);
    if (table && form) { filters(form, table); picker(form, table); }
  });
  window.speedMatrix = { drawCharts: drawCharts };
})();
