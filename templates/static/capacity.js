/* Capacity at the reader's own targets, on run pages (#capacity) and the index (#capacity-ranking).
   The rule is sitegen/figures/capacity.py's, repeated here on the data the page embeds: per context, of the
   Valid cells whose median TTFT is at most the target and whose median per-request tok/s is at least
   the target, the one with the most total tok/s (a tie goes to fewer requests); ranked by energy, the
   one with the fewest J per output token or the most tok/s per kW among those with a valid reading.
   The build-time tables above the inputs are Python's answers; a browser test checks that the two agree. */
(function () {
  "use strict";
  var NONE_QUALIFIES = "no cell meets both targets";
  var EMPTY = "\u2014";

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  /* A cell as the page embeds it: [context, concurrency, total tok/s, per-request tok/s, TTFT ms], then
     [J per output token, tok/s per kW] where it has a valid energy reading; only Valid cells are embedded,
     so every one is a candidate. */
  var CONTEXT = 0, N = 1, TOTAL = 2, PER_USER = 3, TTFT = 4, JOULES = 5, PER_KW = 6;
  var TOK_S_PER_GPU = "tok_s_per_gpu", JOULES_PER_OUTPUT_TOKEN = "joules_per_output_token";

  function qualifies(cell, target) {
    return cell[TOTAL] !== null && cell[TTFT] !== null && cell[TTFT] <= target.ttftMs &&
      cell[PER_USER] !== null && cell[PER_USER] >= target.minTokSPerUser;
  }

  function usdPerMillion(price, gpus, total) {
    if (price === null || !gpus || !(total > 0)) return null;
    return price * gpus / (total * 3600) * 1e6;
  }

  /* A cell's figure to rank by energy, lower first (J per output token, or tok/s per kW negated); null without it. */
  function energyFigure(cell, by) {
    if (cell.length <= JOULES) return null;
    if (by === JOULES_PER_OUTPUT_TOKEN) return cell[JOULES];
    return cell[PER_KW] === null ? null : -cell[PER_KW];
  }

  /* Whether cell `a` beats cell `b` (null beats nothing) by the most total tok/s, a tie going to fewer requests. */
  function busier(a, b) {
    return b === null || a[TOTAL] > b[TOTAL] || (a[TOTAL] === b[TOTAL] && a[N] < b[N]);
  }

  /* One context's answer, the fields named as `sitegen capacity --json` names them; `paid`: the GPUs a price is paid for. */
  function pick(cells, gpus, context, target, by, paid) {
    var best = null, measured = null;
    cells.forEach(function (cell) {
      if (cell[CONTEXT] !== context || !qualifies(cell, target)) return;
      if (busier(cell, best)) best = cell;
      var figure = by && by !== TOK_S_PER_GPU ? energyFigure(cell, by) : null;
      if (figure === null) return;
      var other = measured === null ? null : energyFigure(measured, by);
      if (measured === null || figure < other || (figure === other && busier(cell, measured))) measured = cell;
    });
    best = measured || best;
    if (best === null) {
      return { context_tokens: context, concurrency: null, total_tok_s: null, tok_s_per_gpu: null, usd_per_million_tokens: null,
               joules_per_output_token: null, tok_s_per_kw: null };
    }
    var energy = best.length > JOULES;
    return {
      context_tokens: context, concurrency: best[N], total_tok_s: best[TOTAL],
      tok_s_per_gpu: gpus ? best[TOTAL] / gpus : null,
      usd_per_million_tokens: usdPerMillion(target.gpuHourUsd, paid === undefined ? gpus : paid, best[TOTAL]),
      joules_per_output_token: energy ? best[JOULES] : null, tok_s_per_kw: energy ? best[PER_KW] : null,
    };
  }

  function capacity(data, target) {
    var paid = data.paid_gpus === undefined ? data.gpus : data.paid_gpus;
    return data.contexts.map(function (pair) { return pick(data.cells, data.gpus, pair[0], target, TOK_S_PER_GPU, paid); });
  }

  /* Round half up on the number's shortest decimal form, as runner/bundle/formats.py does. */
  function roundHalfUp(value, places) {
    var text = String(Math.abs(value));
    if (/e/.test(text)) return value.toFixed(places);
    var parts = text.split("."), fraction = (parts[1] || "") + "0".repeat(places + 1);
    var digits = parts[0] + fraction.slice(0, places);
    var up = fraction.charAt(places) >= "5";
    var scaled = (BigInt(digits) + (up ? 1n : 0n)).toString().padStart(places + 1, "0");
    var whole = scaled.slice(0, scaled.length - places), decimals = scaled.slice(scaled.length - places);
    return (value < 0 ? "-" : "") + whole + (places ? "." + decimals : "");
  }

  function commas(text) {
    var parts = text.split(".");
    return parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (parts.length > 1 ? "." + parts[1] : "");
  }

  /* runner/bundle/formats.py's tok_s: one decimal with commas under 10,000, else thousands with a K. */
  function tokS(value) {
    if (value === null) return EMPTY;
    var tenths = roundHalfUp(value, 1);
    if (Number(tenths) < 10000) return commas(tenths);
    return commas(roundHalfUp(value / 1000, 1)).replace(/\.0$/, "") + "K";
  }

  /* sitegen/views/figure_formats.py's joules: three significant digits, more only left of the point. */
  function joules(value) {
    if (value === null) return EMPTY;
    if (value === 0) return "0 J";
    var exponent = Number(Math.abs(value).toExponential().split("e")[1]);  // of the shortest digits, as Python's repr
    var places = Math.max(0, 2 - exponent);
    return commas(roundHalfUp(value, places)) + " J";
  }

  function usd(value) {
    if (value === null) return EMPTY;
    var cents = roundHalfUp(value, 2);
    if (Number(cents) === 0 && value > 0) return "< $0.01";
    return "$" + commas(cents);
  }

  function readTarget(form) {
    function number(name) {
      var input = form.elements[name];
      if (!input || input.value.trim() === "") return null;  // the ranking asks no price
      var value = Number(input.value);
      return isFinite(value) && value >= 0 ? value : NaN;
    }
    return { ttftMs: number("ttft_ms"), minTokSPerUser: number("min_tok_s_per_user"), gpuHourUsd: number("gpu_hour_usd") };
  }

  function badTarget(target) {
    if (target.ttftMs === null || target.minTokSPerUser === null) return "Enter both targets.";
    if (isNaN(target.ttftMs) || isNaN(target.minTokSPerUser) || isNaN(target.gpuHourUsd)) return "Targets and price must be numbers of 0 or more.";
    return null;
  }

  function answerCells(row, found, withPrice, withEnergy) {
    if (found.concurrency === null) {
      var none = el("td", NONE_QUALIFIES, "none");
      none.colSpan = 3 + (withPrice ? 1 : 0) + (withEnergy ? 2 : 0);
      row.appendChild(none);
      return;
    }
    row.appendChild(el("td", String(found.concurrency)));
    row.appendChild(el("td", tokS(found.total_tok_s)));
    row.appendChild(el("td", tokS(found.tok_s_per_gpu)));
    if (withEnergy) {
      row.appendChild(el("td", joules(found.joules_per_output_token)));
      row.appendChild(el("td", tokS(found.tok_s_per_kw)));
    }
    if (withPrice) row.appendChild(el("td", usd(found.usd_per_million_tokens)));
  }

  function table(headers) {
    var node = el("table", null, "capacity-answers");
    var head = node.createTHead().insertRow();
    headers.forEach(function (text) { var th = el("th", text); th.scope = "col"; head.appendChild(th); });
    return node;
  }

  function runView(section) {
    var data = JSON.parse(document.getElementById("capacity-data").textContent);
    var form = document.getElementById("capacity-form");
    var out = document.getElementById("capacity-result");
    form.hidden = false;
    function update() {
      var target = readTarget(form);
      out.textContent = "";
      var problem = badTarget(target);
      if (problem) { out.appendChild(el("p", problem, "caption")); return; }
      var withPrice = target.gpuHourUsd !== null;
      var headers = ["Context", "Requests at once", "Total tok/s", "tok/s per GPU"];
      if (withPrice) headers.push("USD per million output tokens");
      var node = table(headers);
      var body = node.createTBody();
      var labels = {};
      data.contexts.forEach(function (pair) { labels[pair[0]] = pair[1]; });
      capacity(data, target).forEach(function (found) {
        var row = body.insertRow();
        var th = el("th", labels[found.context_tokens]);
        th.scope = "row";
        row.appendChild(th);
        answerCells(row, found, withPrice, false);
      });
      var wrap = el("div", null, "table-scroll");
      wrap.appendChild(node);
      out.appendChild(el("h3", "Your targets"));
      out.appendChild(wrap);
    }
    form.addEventListener("input", update);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    update();
  }

  /* Best first: tok/s per GPU, then runs of unknown GPU count by total tok/s, then none qualifying. By
     energy, the runs whose chosen cell has the figure first, best first, then the others as by tok/s. */
  function rankKey(found, by) {
    if (found.concurrency === null) return [2, 0, 0];
    var speed = found.tok_s_per_gpu === null ? [1, -found.total_tok_s] : [0, -found.tok_s_per_gpu];
    if (!by || by === TOK_S_PER_GPU) return [0].concat(speed);
    var figure = by === JOULES_PER_OUTPUT_TOKEN ? found.joules_per_output_token : (found.tok_s_per_kw === null ? null : -found.tok_s_per_kw);
    return figure === null ? [1].concat(speed) : [0, 0, figure];
  }

  /* The ranking page renders its first screen; the reader's own targets rank every run, from the
     data chunks (capacity/runs-N.js) loaded on the first change, or when the form is entered. */
  var rankingParts = [];
  window.speedMatrixRanking = function (index, runs) { rankingParts[index] = runs; };

  function rankingView(section) {
    var form = document.getElementById("ranking-form");
    var body = document.querySelector("#ranking-table tbody");
    var caption = document.getElementById("ranking-caption");
    var urls = (form.getAttribute("data-chunks") || "").split(" ").filter(Boolean);
    var total = Number(form.getAttribute("data-total"));
    var screen = body.rows.length < total ? body.rows.length : Infinity;
    var withEnergy = form.hasAttribute("data-energy");
    var data = null, waiting = null;
    form.hidden = false;
    function withRuns(done) {
      if (data) { done(); return; }
      if (waiting) { waiting.push(done); return; }
      waiting = [done];
      window.speedMatrixData.scripts(urls, function () {
        data = { runs: [].concat.apply([], rankingParts.filter(Boolean)) };
        waiting.forEach(function (callback) { callback(); });
      });
    }
    function update() { withRuns(rank); }
    function rank() {
      var target = readTarget(form);
      var context = Number(form.elements.context.value);
      var label = form.elements.context.selectedOptions[0].textContent;
      var by = form.elements.by ? form.elements.by.value : TOK_S_PER_GPU;
      var problem = badTarget(target);
      if (problem) { caption.textContent = problem; return; }
      caption.textContent = "At " + label + " context, TTFT \u2264 " + commas(String(target.ttftMs)) + " ms \u00b7 \u2265 " +
        commas(String(target.minTokSPerUser)) + " tok/s per user" +
        (by === TOK_S_PER_GPU ? "" : ", " + form.elements.by.selectedOptions[0].textContent + " first") + ":";
      var measured = [], unmeasured = [];
      data.runs.forEach(function (run) {
        if (run.contexts.indexOf(context) >= 0) measured.push({ run: run, found: pick(run.cells, run.gpus, context, target, by) });
        else unmeasured.push({ run: run, found: null });
      });
      measured.sort(function (a, b) {
        var x = rankKey(a.found, by), y = rankKey(b.found, by);
        return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];  // Array.sort is stable: ties keep the runs' id order
      });
      body.textContent = "";
      measured.concat(unmeasured).slice(0, screen).forEach(function (entry, index) {
        var row = body.insertRow();
        row.setAttribute("data-id", entry.run.id);
        row.appendChild(el("td", String(index + 1)));
        var name = el("td");
        var link = el("a", entry.run.title);
        link.href = form.getAttribute("data-runs") + entry.run.id + "/index.html";
        name.appendChild(link);
        row.appendChild(name);
        if (entry.found === null) {
          var away = el("td", "not measured at " + label, "none");
          away.colSpan = withEnergy ? 5 : 3;
          row.appendChild(away);
        } else {
          answerCells(row, entry.found, false, withEnergy);
        }
      });
    }
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    form.addEventListener("focusin", function () { withRuns(function () {}); }, { once: true });
    form.addEventListener("submit", function (event) { event.preventDefault(); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var run = document.getElementById("capacity");
    var ranking = document.getElementById("capacity-ranking");
    if (run) runView(run);
    if (ranking) rankingView(ranking);
  });
  window.speedMatrixCapacity = { capacity: capacity, pick: pick, tokS: tokS, usd: usd, joules: joules };
})();
