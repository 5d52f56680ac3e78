// mpiscope report pages: sortable tables, a hook that writes script errors into the page,
// and a self-check run when the address ends with #selftest. No network, no library.
"use strict";
window.mpiscopeT0 = performance.now();
window.onerror = function (msg, src, line) {
  var box = document.getElementById("js-errors");
  if (!box) { return false; }
  var p = document.createElement("p");
  p.className = "warning";
  p.textContent = "script error: " + msg + " (line " + line + ")";
  box.appendChild(p);
  box.dataset.count = String(Number(box.dataset.count || "0") + 1);
  return false;
};
function mpiscopeCellValue(td) {
  if (td === undefined) { return ""; }
  if (td.dataset.v !== undefined) { return Number(td.dataset.v); }
  return td.textContent;
}
function mpiscopeSort(th) {
  var table = th.closest("table");
  var body = table.tBodies[0];
  var col = Array.prototype.indexOf.call(th.parentNode.children, th);
  var desc = !th.classList.contains("desc");
  Array.prototype.forEach.call(th.parentNode.children, function (h) {
    h.classList.remove("asc", "desc");
  });
  th.classList.add(desc ? "desc" : "asc");
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = mpiscopeCellValue(a.cells[col]), y = mpiscopeCellValue(b.cells[col]);
    var c = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
    return desc ? -c : c;
  });
  rows.forEach(function (r) { body.appendChild(r); });
}
function mpiscopeSelfTest() {
  var out = [];
  var table = document.querySelector("table.sortable");
  if (table && table.tBodies[0].rows.length > 1) {
    var th = null, col = -1;
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length && th === null; i++) {
      var v = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return mpiscopeCellValue(r.cells[i]); });
      var distinct = v.filter(function (x, k) { return v.indexOf(x) === k; });
      if (typeof v[0] === "number" && distinct.length > 1) { th = heads[i]; col = i; }
    }
    if (th !== null) {
      th.click();
      var down = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return mpiscopeCellValue(r.cells[col]); });
      th.click();
      var up = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return mpiscopeCellValue(r.cells[col]); });
      var okDown = down.every(function (x, k) { return k === 0 || down[k - 1] >= x; });
      var okUp = up.every(function (x, k) { return k === 0 || up[k - 1] <= x; });
      out.push("sort " + table.id + " by " + th.textContent.trim() + ": " + (okDown && okUp ? "ok" : "FAILED"));
    } else {
      out.push("sort: no numeric column with distinct values");
    }
  } else {
    out.push("sort: no table with two rows");
  }
  if (window.mpiscopeTimelineSelfTest) { out.push(window.mpiscopeTimelineSelfTest()); }
  var box = document.getElementById("selftest");
  box.dataset.result = out.every(function (l) { return l.indexOf("FAILED") < 0; }) ? "ok" : "failed";
  box.textContent = out.join("; ");
}
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () { mpiscopeSort(th); });
  });
  if (window.mpiscopeTimelineInit) { window.mpiscopeTimelineInit(); }
  if (location.hash === "#selftest") { mpiscopeSelfTest(); }
  var ms = performance.now() - window.mpiscopeT0;
  document.body.dataset.scriptMs = ms.toFixed(1);
  var nav = performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
  var el = document.getElementById("load-time");
  if (el) { el.textContent = "Page scripts ran in " + ms.toFixed(0) + " ms."; }
  window.addEventListener("load", function () {
    var n = performance.getEntriesByType ? performance.getEntriesByType("navigation")[0] : null;
    if (n) { document.body.dataset.loadMs = n.loadEventStart.toFixed(1); }
    var paint = performance.getEntriesByType ? performance.getEntriesByType("paint") : [];
    paint.forEach(function (p) { document.body.dataset[p.name === "first-paint" ? "firstPaintMs" : "firstContentfulPaintMs"] = p.startTime.toFixed(1); });
    if (el && n) { el.textContent += " Loaded in " + n.loadEventStart.toFixed(0) + " ms."; }
  });
  void nav;
});
