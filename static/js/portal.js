// Charts: each is a <div> plus its figure as JSON in a <script type="application/json"
// data-plotly-for="div id"> (apps/reports/figures.py). Drawing them here, from a static file,
// keeps every page free of inline scripts, which the Content-Security-Policy forbids.
function drawCharts() {
  if (!window.Plotly) { return; }
  document.querySelectorAll("script[data-plotly-for]").forEach(function (spec) {
    var target = document.getElementById(spec.getAttribute("data-plotly-for"));
    if (!target || target.getAttribute("data-drawn")) { return; }
    var figure = JSON.parse(spec.textContent);
    window.Plotly.newPlot(target, figure.data, figure.layout, figure.config);
    target.setAttribute("data-drawn", "1");
  });
}

// A <select data-autosubmit> submits its form when changed (instead of an inline onchange,
// which the Content-Security-Policy blocks).
function autosubmit() {
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
}

// On a narrow screen the navigation collapses behind the Menu button (static/css/portal.css);
// the "js" class tells the stylesheet a script is here to open it (without one it stays open).
document.documentElement.classList.add("js");

function menuToggle() {
  var button = document.querySelector("header.top .menu-toggle");
  var menu = document.getElementById("site-menu");
  if (!button || !menu) { return; }
  button.addEventListener("click", function () {
    var open = menu.classList.toggle("open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
}

document.addEventListener("DOMContentLoaded", function () { drawCharts(); autosubmit(); menuToggle(); });

// Charts are drawn while the page is still being laid out; once everything has its final
// column widths, fit each chart to its container.
window.addEventListener("load", function () {
  if (!window.Plotly) { return; }
  drawCharts();
  document.querySelectorAll(".js-plotly-plot").forEach(function (el) { window.Plotly.Plots.resize(el); });
});

// A <button data-copy="id"> copies the text of the element with that id (the advice's YAML).
function copyButtons() {
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source || !navigator.clipboard) { return; }
      navigator.clipboard.writeText(source.textContent).then(function () {
        button.textContent = "Copied";
      });
    });
  });
}
document.addEventListener("DOMContentLoaded", copyButtons);
