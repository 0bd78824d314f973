// While a sync runs, show the objects read so far without reloading; reload when it ends.
document.querySelectorAll("[data-sync-run]").forEach(function (row) {
  var url = row.getAttribute("data-sync-run");
  var timer = setInterval(function () {
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (run) {
        if (!run) return;
        if (run.status !== "running") { clearInterval(timer); window.location.reload(); return; }
        var parts = Object.keys(run.progress).map(function (kind) { return kind + " " + run.progress[kind]; });
        row.querySelector("[data-progress]").textContent = parts.join(", ") || "starting";
      });
  }, 2000);
});
