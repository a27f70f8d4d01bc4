// Charts are drawn while the page is still being parsed, before the grid has its final
// column widths; once everything is laid out, fit each chart to its container.
window.addEventListener("load", function () {
  if (!window.Plotly) { return; }
  document.querySelectorAll(".js-plotly-plot").forEach(function (el) { window.Plotly.Plots.resize(el); });
});
