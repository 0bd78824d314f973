// Autosave for an assessment: each answer, note or evidence link is saved through the API as
// soon as it changes, so nothing typed is lost. Without this script the Save button still works.
(function () {
  var form = document.querySelector("form[data-autosave]");
  if (!form) return;
  var url = form.getAttribute("data-autosave");
  var token = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  var overall = form.querySelector(".autosave-status");

  function show(question, text, failed) {
    var where = form.querySelector('[data-status-for="' + question + '"]');
    if (where) {
      where.textContent = text;
      where.className = failed ? "saved error" : "saved";
    }
    if (overall) overall.textContent = failed ? "Some answers were not saved" : "All changes saved";
  }

  function save(input) {
    var question = input.getAttribute("data-question");
    var field = input.getAttribute("data-field");
    var body = {answers: {}};
    body.answers[question] = {};
    body.answers[question][field] = input.value;
    show(question, "saving…", false);
    fetch(url, {
      method: "PATCH",
      credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": token},
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().then(function (data) { return {ok: response.ok, data: data}; });
    }).then(function (result) {
      var problem = result.data.errors && result.data.errors[question];
      if (!result.ok) problem = result.data.detail || "not saved";
      show(question, problem ? "not saved: " + problem : "saved", Boolean(problem));
    }).catch(function () {
      show(question, "not saved: no connection", true);
    });
  }

  // A note grows with its text: CSS field-sizing does it where supported, this elsewhere.
  function grow(area) {
    area.style.height = "auto";
    area.style.height = area.scrollHeight + 2 + "px";
  }
  if (!(window.CSS && CSS.supports("field-sizing", "content"))) {
    form.querySelectorAll("textarea.grows").forEach(function (area) {
      grow(area);
      area.addEventListener("input", function () { grow(area); });
    });
  }

  form.addEventListener("change", function (event) {
    var input = event.target;
    if (input.hasAttribute("data-question")) save(input);
  });
})();
