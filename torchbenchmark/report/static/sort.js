// Click a header to sort by it; numeric columns by value, blanks last. Inline: the page fetches nothing.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (header, column) {
    header.title = "click to sort";
    header.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      var numeric = header.classList.contains("num");
      var body = table.tBodies[0];
      var key = function (row) {
        var text = row.cells[column].textContent.trim();
        return numeric ? parseFloat(text) : text.toLowerCase();
      };
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric && isNaN(x) !== isNaN(y)) { return isNaN(x) ? 1 : -1; }
        var order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
      table.querySelectorAll("thead th").forEach(function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
