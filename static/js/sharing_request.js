// The sharing-request form offers only the modes the chosen tenant's trust class allows: the
// tenant select carries {tenant: [modes]} and the mode list is narrowed when it changes.
(function () {
  var tenant = document.querySelector("select[data-modes]");
  var mode = document.querySelector("select[name=mode]");
  if (!tenant || !mode) return;
  var modes = JSON.parse(tenant.getAttribute("data-modes"));
  var labels = {};
  var all = Array.prototype.map.call(mode.options, function (o) {
    labels[o.value] = o.textContent;
    return o.value;
  });
  var known = {};
  Object.keys(modes).forEach(function (slug) {
    modes[slug].forEach(function (m) { known[m] = true; });
  });
  Object.keys(known).forEach(function (m) { if (all.indexOf(m) < 0) all.push(m); });

  function narrow() {
    var allowed = modes[tenant.value] || all;
    var current = mode.value;
    mode.innerHTML = "";
    allowed.forEach(function (m) {
      var option = document.createElement("option");
      option.value = m;
      option.textContent = labels[m] || m;
      option.selected = m === current;
      mode.appendChild(option);
    });
  }
  tenant.addEventListener("change", narrow);
  narrow();
})();
