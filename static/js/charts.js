// Draw every figure whose JSON sits in a <script type="application/json"> next to its div.
document.querySelectorAll("[data-figure]").forEach(function (div) {
  var source = document.getElementById(div.getAttribute("data-figure"));
  if (!source || typeof Plotly === "undefined") return;
  var figure = JSON.parse(source.textContent);
  Plotly.newPlot(div, figure.data, figure.layout, {responsive: true, displaylogo: false});
});
