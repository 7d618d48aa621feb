// Draws the report's charts with Chart.js from the JSON in #report-data (built by
// crates/report/src/chart.rs). The tables in the page hold the same figures, so the
// report still says everything if this script cannot run.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const body = getComputedStyle(document.body);
  Chart.defaults.font.family = body.fontFamily;
  Chart.defaults.color = body.color;
  let drawn = 0;
  for (const spec of data.charts) {
    const canvas = document.getElementById(spec.id);
    if (!canvas) continue;
    const bar = spec.kind === "bar";
    // A flagged point (bench CPU-bound) is drawn as a larger cross.
    const flagged = (ctx) => Boolean(ctx.raw && ctx.raw.flag);
    const datasets = spec.series.map((s) => ({
      label: s.label,
      data: s.points.map((p, i) => ({ x: bar ? spec.categories[i] : p.x, y: p.y, flag: p.flag })),
      borderColor: s.color,
      backgroundColor: s.color,
      borderWidth: bar ? 0 : 2,
      pointStyle: (ctx) => (flagged(ctx) ? "crossRot" : s.point_style),
      pointRadius: (ctx) => (flagged(ctx) ? 7 : 3.5),
      pointBorderWidth: (ctx) => (flagged(ctx) ? 2.5 : 1),
    }));
    const axis = (a, type) => ({
      type,
      title: { display: true, text: a.title },
      beginAtZero: type === "linear",
    });
    try {
      new Chart(canvas, {
        type: bar ? "bar" : "line",
        data: bar ? { labels: spec.categories, datasets } : { datasets },
        options: {
          responsive: true,
          maintainAspectRatio: false,
          animation: false,
          interaction: bar ? { mode: "index", intersect: false } : { mode: "nearest", intersect: false },
          scales: {
            x: axis(spec.x, bar ? "category" : spec.x.log ? "logarithmic" : "linear"),
            y: axis(spec.y, spec.y.log ? "logarithmic" : "linear"),
          },
          plugins: {
            title: { display: true, text: spec.title, font: { size: 15, weight: "bold" } },
            subtitle: {
              display: Boolean(spec.subtitle),
              text: spec.subtitle || "",
              color: "#b3261e",
              padding: { bottom: 8 },
            },
            legend: { position: "bottom", labels: { usePointStyle: true } },
            tooltip: {
              callbacks: { afterLabel: (ctx) => (ctx.raw && ctx.raw.flag) || "" },
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
