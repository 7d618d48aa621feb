// Draws the report's charts with Chart.js from the JSON in #report-data (built by
// crates/report/src/chart.rs). The tables in the page hold the same figures, so the
// report still says everything if this script cannot run.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const body = getComputedStyle(document.body);
  Chart.defaults.font.family = body.fontFamily;
  Chart.defaults.color = body.color;
  // 1, 2, 5, 10, 20, 50 …: the ticks a log axis labels.
  const isStep125 = (v) => {
    const m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    return [1, 2, 5].some((k) => Math.abs(m - k) < 1e-6);
  };
  // The 1-2-5 value at or below (round = Math.floor) or above (Math.ceil) v.
  const step125 = (v, round) => {
    const decade = Math.pow(10, Math.floor(Math.log10(v)));
    const steps = [1, 2, 5, 10].map((k) => k * decade);
    return round === Math.floor ? steps.filter((s) => s <= v * (1 + 1e-9)).pop() : steps.find((s) => s >= v * (1 - 1e-9));
  };
  let drawn = 0;
  for (const spec of data.charts) {
    const canvas = document.getElementById(spec.id);
    if (!canvas) continue;
    const bar = spec.kind === "bar";
    // A flagged point (bench CPU-bound) is drawn as a larger cross.
    const flagged = (ctx) => Boolean(ctx.raw && ctx.raw.flag);
    const bubble = spec.kind === "bubble";
    // A bubble's disc shows a third figure: half transparent, so overlaps stay readable.
    const translucent = (color) => color.replace(/\)$/, " / 0.45)");
    const datasets = spec.series.map((s) =>
      bubble
        ? {
            label: s.label,
            data: s.points.map((p) => ({ x: p.x, y: p.y, r: p.r, flag: p.flag, note: p.note })),
            borderColor: s.color,
            backgroundColor: translucent(s.color),
            borderWidth: 2,
          }
        : {
            label: s.label,
            data: s.points.map((p, i) => ({ x: bar ? spec.categories[i] : p.x, y: p.y, flag: p.flag, note: p.note })),
            borderColor: s.color,
            backgroundColor: s.color,
            borderWidth: bar ? 0 : 2,
            maxBarThickness: 90,
            pointStyle: (ctx) => (flagged(ctx) ? "crossRot" : s.point_style),
            pointRadius: (ctx) => (flagged(ctx) ? 7 : 3.5),
            pointBorderWidth: (ctx) => (flagged(ctx) ? 2.5 : 1),
          },
    );
    // Values start at zero on y (bars and latencies read as sizes); x follows the data.
    const axis = (a, type, values, zero) => {
      const options = { type, title: { display: true, text: a.title }, beginAtZero: (zero || bubble) && type === "linear" };
      // Room beyond the data, so the largest discs are not cut at the edges.
      if (bubble) options.grace = "12%";
      if (type === "logarithmic") {
        // Start and end on a 1-2-5 value around the data (so no point sits on the
        // axis line) and label only those ticks.
        const positive = values.filter((v) => v > 0);
        options.min = step125(Math.min(...positive), Math.floor);
        options.max = step125(Math.max(...positive), Math.ceil);
        options.ticks = {
          callback: (v) => (isStep125(v) ? Number(v).toLocaleString("en-US", { maximumFractionDigits: 3 }) : ""),
        };
      }
      return options;
    };
    const xs = bar ? [] : spec.series.flatMap((s) => s.points.filter((p) => p.y != null).map((p) => p.x));
    const ys = spec.series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => y != null);
    try {
      new Chart(canvas, {
        type: bar ? "bar" : bubble ? "bubble" : "line",
        data: bar ? { labels: spec.categories, datasets } : { datasets },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          animation: false,
          interaction: bar ? { mode: "index", intersect: false } : { mode: "nearest", intersect: bubble },
          scales: {
            x: axis(spec.x, bar ? "category" : spec.x.log ? "logarithmic" : "linear", xs, false),
            y: axis(spec.y, spec.y.log ? "logarithmic" : "linear", ys, true),
          },
          plugins: {
            title: { display: true, text: spec.title, font: { size: 15, weight: "bold" } },
            subtitle: {
              display: Boolean(spec.subtitle),
              text: spec.subtitle || "",
              color: "#b3261e",
              padding: { bottom: 8 },
            },
            legend: {
              position: "bottom",
              labels: {
                usePointStyle: true,
                // Each series' own style: Chart.js takes its first point's, which is an
                // invisible cross on a bar (no border) when that point is flagged.
                generateLabels: (chart) =>
                  Chart.defaults.plugins.legend.labels
                    .generateLabels(chart)
                    .map((item) => Object.assign(item, { pointStyle: spec.series[item.datasetIndex].point_style })),
              },
            },
            tooltip: {
              callbacks: Object.assign(
                { afterLabel: (ctx) => [ctx.raw && ctx.raw.note, ctx.raw && ctx.raw.flag].filter(Boolean).join("\n") },
                // A bubble's own label would be its (x, y, radius in pixels); its note says it in units.
                bubble ? { label: (ctx) => ctx.dataset.label } : {},
              ),
            },
          },
        },
      });
      drawn++;
    } catch (e) {
      const note = document.createElement("p");
      note.className = "warning";
      note.textContent = "This chart could not be drawn: " + e;
      canvas.parentElement.after(note);
    }
  }
  // The screenshot test waits for this.
  document.documentElement.dataset.chartsDrawn = String(drawn);
})();
