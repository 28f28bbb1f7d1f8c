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
      // The drawing is hidden from screen readers (its axis labels alone say nothing): the figure's
      // caption and its link to the figures it draws stand for it. The chart's buttons stay.
      window.Plotly.newPlot(el, fig.data || [], layout, config).then(function () {
        el.querySelectorAll("svg.main-svg").forEach(function (svg) { svg.setAttribute("aria-hidden", "true"); });
      });
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
