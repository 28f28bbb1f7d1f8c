/* speed-matrix: progressive enhancement only. Every page reads fully without it. */
(function () {
  "use strict";

  // The look every chart shares: transparent backgrounds that suit light and dark pages, Tableau 10's
  // mid-tone hues, grey text and gridlines, and the legend below the plot so a phone keeps its width.
  var GRID = "rgba(128,128,128,0.35)";
  var LOOK = {
    autosize: true,
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { color: "#808080" },
    colorway: ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"],
    hovermode: "closest",
    legend: { title: { text: "" }, orientation: "h", x: 0, xanchor: "left", y: 0, yanchor: "bottom", yref: "container" },
    showlegend: true,
    margin: { l: 10, r: 10, t: 30, b: 10 }
  };
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  function axis(title, extra) {
    return Object.assign({ title: { text: title } }, extra || {});
  }

  // A log axis ticked at the measured powers of two (1, 2, 4 … 128) instead of decades.
  function log2Axis(title, values) {
    return axis(title, { type: "log", tickvals: values, ticktext: values.map(String) });
  }

  function tickText(value) {
    if (value >= 1e6) return value / 1e6 + "M";
    if (value >= 1e3) return value / 1e3 + "K";
    return String(value);
  }

  // A log axis ticked at 1-2-3-5 steps over the values' range ("200", "1K", "5K"), not every digit.
  function logAxis(title, values) {
    var lo = values.length ? Math.min.apply(null, values) : 1, hi = values.length ? Math.max.apply(null, values) : 10;
    var ticks = [];
    for (var power = -1; power < 9; power++) {
      [1, 2, 3, 5].forEach(function (step) {
        var tick = Number((step * Math.pow(10, power)).toPrecision(12));
        if (lo / 2 <= tick && tick <= hi * 2) ticks.push(tick);
      });
    }
    return axis(title, { type: "log", tickvals: ticks, ticktext: ticks.map(tickText) });
  }

  // A run page's three charts from the figures it carries (#run-charts): decode rows of [concurrency,
  // total tok/s, per-request tok/s] per context, and prefill points of [context, prompt tok/s, TTFT ms].
  function runFigures(runData) {
    var levels = [], totals = [];
    runData.decode.forEach(function (row) {
      row[1].forEach(function (cell) {
        if (levels.indexOf(cell[0]) < 0) levels.push(cell[0]);
        if (cell[2] !== null) totals.push(cell[1]);
      });
    });
    levels.sort(function (a, b) { return a - b; });
    var decode = runData.decode.map(function (row) {
      var name = row[0], cells = row[1];
      return {
        type: "scatter", mode: "lines+markers", name: name,
        x: cells.map(function (c) { return c[0]; }), y: cells.map(function (c) { return c[1]; }),
        hovertemplate: name + " × %{x}: %{y:,.1f} tok/s<extra></extra>"
      };
    });
    // Total tok/s on a log axis, where each doubling of requests moves a point about as far; only the
    // shortest context's points carry their concurrency as a label, lest labels pile up.
    var latency = runData.decode.map(function (row, index) {
      var name = row[0], known = row[1].filter(function (c) { return c[2] !== null; });
      return {
        type: "scatter", mode: index === 0 ? "lines+markers+text" : "lines+markers", name: name,
        x: known.map(function (c) { return c[1]; }), y: known.map(function (c) { return c[2]; }),
        text: known.map(function (c) { return String(c[0]); }), textposition: "top center",
        hovertemplate: name + " × %{text}: %{x:,.1f} total, %{y:,.1f} per request tok/s<extra></extra>"
      };
    });
    var prefill = {
      type: "scatter", mode: "lines+markers", name: "prefill",
      x: runData.prefill.map(function (p) { return p[0]; }), y: runData.prefill.map(function (p) { return p[1]; }),
      customdata: runData.prefill.map(function (p) { return p[2]; }),
      hovertemplate: "%{x}: %{y:,.0f} tok/s<br>%{customdata:,} ms TTFT<extra></extra>"
    };
    return {
      decode: { data: decode, layout: { xaxis: log2Axis("simultaneous requests", levels), yaxis: axis("total tok/s", { rangemode: "tozero" }) } },
      latency: { data: latency, layout: { xaxis: logAxis("total tok/s", totals), yaxis: axis("per request tok/s", { rangemode: "tozero" }) } },
      prefill: { data: [prefill], layout: { xaxis: axis("context", { type: "category" }), yaxis: axis("prompt tok/s", { rangemode: "tozero" }), showlegend: false } }
    };
  }

  function draw(el, fig) {
    var layout = Object.assign({}, LOOK, fig.layout);
    ["xaxis", "yaxis"].forEach(function (name) {
      layout[name] = Object.assign({ gridcolor: GRID, zerolinecolor: GRID, automargin: true }, layout[name]);
    });
    // The drawing is hidden from screen readers (its axis labels alone say nothing): the figure's
    // caption and its link to the figures it draws stand for it. The chart's buttons stay.
    window.Plotly.newPlot(el, fig.data, layout, CONFIG).then(function () {
      el.querySelectorAll("svg.main-svg").forEach(function (svg) { svg.setAttribute("aria-hidden", "true"); });
    });
  }

  function drawCharts() {
    if (!window.Plotly) return;
    document.querySelectorAll(".chart[data-figure]").forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-figure"));
      if (source) draw(el, JSON.parse(source.textContent));
    });
    var runData = document.getElementById("run-charts");
    if (!runData) return;
    var figures = runFigures(JSON.parse(runData.textContent));
    document.querySelectorAll(".chart[data-run-chart]").forEach(function (el) {
      draw(el, figures[el.getAttribute("data-run-chart")]);
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

  document.addEventListener("DOMContentLoaded", function () {
    drawCharts();
    copyButtons();
  });
  window.speedMatrix = { drawCharts: drawCharts };
})();
