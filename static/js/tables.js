// Every table.data: scrolls sideways on a narrow screen, and sorts by a column when its header
// is clicked (numbers as numbers, the rest as text; the rows of the page shown).
(function () {
  function cellValue(row, index) {
    var cell = row.cells[index];
    var text = cell ? cell.textContent.trim() : "";
    var number = parseFloat(text.replace(/[^0-9.\-]/g, ""));
    return {text: text.toLowerCase(), number: /^-?[0-9.,]+/.test(text) ? number : NaN};
  }

  function sortBy(table, index, header) {
    var body = table.tBodies[0];
    if (!body) return;
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      var order = !isNaN(x.number) && !isNaN(y.number) ? x.number - y.number : x.text.localeCompare(y.text);
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.querySelectorAll("table.data").forEach(function (table) {
    if (!table.parentElement.classList.contains("scroll")) {
      var wrapper = document.createElement("div");
      wrapper.className = "scroll";
      table.parentElement.insertBefore(wrapper, table);
      wrapper.appendChild(table);
    }
    if (!table.tHead || !table.tBodies[0] || table.tBodies[0].rows.length < 2) return;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      if (!header.textContent.trim() || header.querySelector("input, button, a")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.textContent = header.textContent.trim();
      button.title = "Sort by " + button.textContent;
      header.textContent = "";
      header.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, index, header); });
    });
  });
})();
