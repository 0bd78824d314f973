// MIG partitioner: turn the GET form into an editor of GPU-instance rows (with compute
// instances and tenants) that asks POST /api/v1/mig/validate/ on every change and redraws the
// grid, the warnings and the mig-parted snippet. Without this script the form still works.
(function () {
  "use strict";
  var dataNode = document.getElementById("mig-data");
  var form = document.getElementById("mig-form");
  var editor = document.getElementById("mig-editor");
  var resultBox = document.getElementById("mig-result");
  if (!dataNode || !form || !editor || !resultBox) return;
  var data = JSON.parse(dataNode.textContent);
  var modelSelect = form.querySelector("[name=gpu_model]");
  var textarea = form.querySelector("[name=instances]");
  var configInput = form.querySelector("[name=config_name]");
  var rows = (data.initial.instances || []).map(function (r) {
    return {profile: r.profile, start: r.start, tenant: r.tenant || "",
      cis: (r.compute_instances || []).map(function (c) { return {profile: c.profile, tenant: c.tenant || ""}; })};
  });
  // Text the server could not read (it shows the error): leave the plain form to fix it.
  if (!rows.length && textarea.value.trim()) return;
  var timer = null;
  var sequence = 0;

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function model() { return data.models[modelSelect.value]; }
  function profileOf(name) {
    return model().profiles.filter(function (p) { return p.name === name; })[0] || null;
  }
  function select(key, label, options, value, onChange) {
    var wrap = el("label", {class: "mig-inline"}, label + " ");
    var box = el("select", {"data-key": key});
    options.forEach(function (o) {
      var option = el("option", {value: o[0]}, o[1]);
      if (String(o[0]) === String(value)) option.selected = true;
      box.appendChild(option);
    });
    box.addEventListener("change", function () { onChange(box.value); changed(true); });
    wrap.appendChild(box);
    return wrap;
  }
  function button(key, text, onClick, cls) {
    var b = el("button", {type: "button", class: cls || "link", "data-key": key}, text);
    b.addEventListener("click", function () { onClick(); changed(true); });
    return b;
  }
  function tenantOptions(current) {
    var names = data.tenants.slice();
    if (current && names.indexOf(current) < 0) names.push(current);  // e.g. loaded from text
    return [["", "no tenant"]].concat(names.map(function (t) { return [t, t]; }));
  }
  function ciOptions(profile) {
    return profile.compute_instances.map(function (c) {
      return [c.name, c.name + " (" + c.slices + " of " + profile.compute + " compute slices)"];
    });
  }
  function ciSlices(name) {
    // "2c", "2c.3g.40gb" -> 2; a GI's own name ("3g.40gb", a CI of the whole GI) -> 3
    var match = /^(\d+)c/.exec(name) || /^(\d+)g/.exec(name);
    return match ? parseInt(match[1], 10) : 0;
  }
  function fixCis(row) {
    // Keep each CI's size when the GI's profile or the model changes, where the GI offers it.
    var profile = profileOf(row.profile);
    if (!profile) return;
    row.cis.forEach(function (ci) {
      var same = profile.compute_instances.filter(function (c) { return c.slices === ciSlices(ci.profile); })[0];
      ci.profile = (same || profile.compute_instances[0]).name;
    });
  }

  function drawEditor() {
    // Redrawing replaces the controls: put the keyboard focus back where it was.
    var active = document.activeElement;
    var focusKey = active && active.getAttribute ? active.getAttribute("data-key") : null;
    editor.textContent = "";
    var list = el("ol", {class: "mig-rows"});
    rows.forEach(function (row, i) {
      var profile = profileOf(row.profile);
      var item = el("li", {class: "mig-row"});
      var line = el("div", {class: "mig-row-line"});
      line.appendChild(select("r" + i + "-profile", "GPU instance " + (i + 1), model().profiles.map(function (p) {
        return [p.name, p.name + " (" + p.compute + " compute, " + p.size + " memory slices)"];
      }), row.profile, function (v) { row.profile = v; row.start = null; fixCis(row); }));
      var starts = [["", "any start"]].concat((profile ? profile.placements : []).map(function (s) { return [s, "slice " + s]; }));
      line.appendChild(select("r" + i + "-start", "start", starts, row.start === null || row.start === undefined ? "" : row.start,
        function (v) { row.start = v === "" ? null : parseInt(v, 10); }));
      line.appendChild(select("r" + i + "-tenant", "tenant", tenantOptions(row.tenant), row.tenant, function (v) { row.tenant = v; }));
      if (profile && profile.compute > 1) {
        line.appendChild(button("r" + i + "-addci", "add compute instance", function () {
          row.cis.push({profile: profile.compute_instances[0].name, tenant: row.tenant});
        }));
      }
      line.appendChild(button("r" + i + "-remove", "remove GPU instance " + (i + 1), function () { rows.splice(i, 1); }));
      item.appendChild(line);
      if (row.cis.length && profile) {
        var sub = el("ul", {class: "mig-ci-rows"});
        row.cis.forEach(function (ci, j) {
          var ciItem = el("li");
          var key = "r" + i + "c" + j;
          ciItem.appendChild(select(key + "-profile", "compute instance " + (j + 1), ciOptions(profile), ci.profile, function (v) { ci.profile = v; }));
          ciItem.appendChild(select(key + "-tenant", "tenant", tenantOptions(ci.tenant), ci.tenant, function (v) { ci.tenant = v; }));
          ciItem.appendChild(button(key + "-remove", "remove compute instance " + (j + 1), function () { row.cis.splice(j, 1); }));
          sub.appendChild(ciItem);
        });
        item.appendChild(sub);
      }
      list.appendChild(item);
    });
    editor.appendChild(list);
    editor.appendChild(button("add", "Add GPU instance", function () {
      rows.push({profile: model().profiles[0].name, start: null, tenant: "", cis: []});
    }, "mig-add"));
    var again = focusKey && editor.querySelector("[data-key='" + focusKey + "']");
    if (again) again.focus();
  }

  function asText() {
    return rows.map(function (r) {
      var words = [r.profile];
      if (r.start !== null && r.start !== undefined) words.push("@" + r.start);
      if (r.tenant) words.push(r.tenant);
      return [words.join(" ")].concat(r.cis.map(function (c) { return c.tenant ? c.profile + " " + c.tenant : c.profile; })).join(" ; ");
    }).join("\n");
  }
  function requestBody() {
    return {
      gpu_model: modelSelect.value,
      config_name: configInput ? configInput.value : "",
      instances: rows.map(function (r) {
        return {profile: r.profile, start: r.start, tenant: r.tenant || null,
          compute_instances: r.cis.map(function (c) { return {profile: c.profile, tenant: c.tenant || null}; })};
      })
    };
  }
  function csrfToken() {
    var input = document.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function changed(redraw) {
    if (redraw) drawEditor();
    textarea.value = asText();
    clearTimeout(timer);
    timer = setTimeout(validate, 150);
  }
  function validate() {
    var mine = ++sequence;
    if (!rows.length) { resultBox.textContent = ""; return; }
    fetch(data.validate_url, {
      method: "POST",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(requestBody())
    }).then(function (response) {
      return response.json().then(function (body) { return {ok: response.ok, body: body}; });
    }).then(function (answer) {
      if (mine !== sequence) return;  // a newer change is on its way
      if (answer.ok) drawResult(answer.body);
      else drawProblem(answer.body);
    }).catch(function () {
      if (mine === sequence) drawProblem({detail: "The check could not be reached; submit the form instead."});
    });
  }
  function drawProblem(body) {
    resultBox.textContent = "";
    var message = body && body.detail ? body.detail : JSON.stringify(body);
    resultBox.appendChild(el("p", {class: "error", role: "alert"}, message));
  }

  function drawResult(answer) {
    resultBox.textContent = "";
    var title = el("h2", null, answer.valid ? "It fits " : "It does not fit ");
    title.appendChild(el("span", {class: "muted"}, answer.compute_slices_used + " of " + answer.compute_slices +
      " compute slices, " + answer.memory_slices_used + " of " + answer.memory_slices + " memory slices"));
    resultBox.appendChild(title);
    answer.errors.forEach(function (e) { resultBox.appendChild(el("p", {class: "error", role: "alert"}, e)); });
    answer.warning_details.forEach(function (w) {
      var p = el("p", {class: "warning"});
      p.appendChild(el("span", {class: "sev sev-high"}, w.check));
      p.appendChild(document.createTextNode(" " + w.message));
      resultBox.appendChild(p);
    });
    if (answer.memory_slices) resultBox.appendChild(grid(answer));
    if (answer.mig_parted) drawSnippet(answer);
  }
  function grid(answer) {
    var tenants = [];
    answer.placements.forEach(function (p) { if (p.tenant && tenants.indexOf(p.tenant) < 0) tenants.push(p.tenant); });
    tenants.sort();
    var wrap = el("div", {class: "scroll"});
    var table = el("table", {class: "data mig-grid", "aria-label": "Memory slices of one " + answer.model});
    var head = el("tr");
    for (var s = 0; s < answer.memory_slices; s++) head.appendChild(el("th", {scope: "col"}, "slice " + s));
    table.appendChild(el("thead")).appendChild(head);
    var row = el("tr");
    var byStart = {};
    answer.placements.forEach(function (p) { byStart[p.start] = p; });
    for (var slot = 0; slot < answer.memory_slices;) {
      var p = byStart[slot];
      if (!p) { row.appendChild(el("td", {class: "mig-free"})).appendChild(el("span", {class: "muted"}, "free")); slot += 1; continue; }
      var tone = p.tenant ? String(tenants.indexOf(p.tenant) % 6) : "n";
      var cell = el("td", {colspan: p.size, class: "mig-gi mig-t" + tone});
      cell.appendChild(el("strong", null, p.profile));
      cell.appendChild(el("span", {class: "muted"}, " slices " + p.start + (p.size > 1 ? "-" + (p.start + p.size - 1) : "")));
      cell.appendChild(el("br"));
      cell.appendChild(document.createTextNode("tenant: " + (p.tenant || "none")));
      if (p.compute_instances.length) {
        var cis = el("ul", {class: "mig-cis"});
        p.compute_instances.forEach(function (c) { cis.appendChild(el("li", null, c.profile + ": " + (c.tenant || "no tenant"))); });
        cell.appendChild(cis);
      }
      row.appendChild(cell);
      slot += p.size;
    }
    table.appendChild(el("tbody")).appendChild(row);
    wrap.appendChild(table);
    return wrap;
  }
  function drawSnippet(answer) {
    resultBox.appendChild(el("h2", null, "As a mig-parted config"));
    resultBox.appendChild(el("p", {class: "muted"}, "mig-parted counts profiles per GPU: it carries no start slots and no tenants, and the driver picks the slots when it applies the config. Compute-instance splits beyond one per GPU instance are made with nvidia-smi mig -cci."));
    resultBox.appendChild(el("pre", {id: "mig-snippet", class: "mig-snippet"}, answer.mig_parted));
    var actions = el("p");
    actions.appendChild(copyButton());
    actions.appendChild(document.createTextNode(" "));
    var query = new URLSearchParams({gpu_model: modelSelect.value, instances: asText(), config_name: answer.config_name, format: "yaml"});
    actions.appendChild(el("a", {href: "?" + query.toString(), class: "mig-download", download: ""}, "Download " + answer.config_name + ".yaml"));
    resultBox.appendChild(actions);
  }
  function copyButton(existing) {
    var b = existing || el("button", {type: "button", class: "mig-copy"}, "Copy");
    b.hidden = false;
    b.addEventListener("click", function () {
      var text = document.getElementById("mig-snippet").textContent;
      var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, function () { b.textContent = "Select the text to copy"; });
      else b.textContent = "Select the text to copy";
    });
    return b;
  }

  modelSelect.addEventListener("change", function () {
    // Same kind of profile on the new model (all models list their profiles in one order).
    var before = data.models[modelSelect.getAttribute("data-previous")] || model();
    rows.forEach(function (row) {
      var index = before.profiles.map(function (p) { return p.name; }).indexOf(row.profile);
      row.profile = (model().profiles[index] || model().profiles[0]).name;
      fixCis(row);
    });
    modelSelect.setAttribute("data-previous", modelSelect.value);
    changed(true);
  });
  if (configInput) configInput.addEventListener("input", function () { changed(false); });
  modelSelect.setAttribute("data-previous", modelSelect.value);
  rows.forEach(fixCis);
  form.querySelector(".mig-field-instances").hidden = true;
  editor.hidden = false;
  var serverCopy = resultBox.querySelector(".mig-copy");
  if (serverCopy) copyButton(serverCopy);
  drawEditor();
  textarea.value = asText();
})();
