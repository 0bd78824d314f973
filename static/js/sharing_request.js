// The sharing-request form says, beside the mode, when an approval would cover the tenant's
// own pods only (its trust class forbids the mode between tenants): the tenant select carries
// {tenant: class} and {class: {mode: note}}, and the note follows the tenant and mode chosen.
(function () {
  var tenant = document.querySelector("select[data-scope-notes]");
  var mode = document.querySelector("select[name=mode]");
  var note = document.getElementById("scope-note");
  if (!tenant || !mode || !note) return;
  var classes = JSON.parse(tenant.getAttribute("data-classes"));
  var notes = JSON.parse(tenant.getAttribute("data-scope-notes"));

  function show() {
    var text = (notes[classes[tenant.value]] || {})[mode.value] || "";
    note.textContent = text;
    note.hidden = !text;
  }
  tenant.addEventListener("change", show);
  mode.addEventListener("change", show);
  show();
})();
