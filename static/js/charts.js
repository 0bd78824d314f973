// Draw every figure whose JSON sits in a <script type="application/json"> next to its div.
document.querySelectorAll("[data-figure]").forEach(function (div) {
  var source = document.getElementById(div.getAttribute("data-figure"));
  if (!source || typeof Plotly === "undefined") return;
  var figure = JSON.parse(source.textContent);
  // With responsive on, plotly sizes its SVG box to 100% of this div: give the div the
  // figure's height, or a tall figure spills over what follows it.
  if (figure.layout && figure.layout.height) div.style.height = figure.layout.height + "px";
  Plotly.newPlot(div, figure.data, figure.layout, {responsive: true, displaylogo: false});
});
