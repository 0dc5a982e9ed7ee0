// s3q console: live relative times, refresh in place while the tab is
// visible (backing off while nothing changes), selection helpers and
// keyboard shortcuts. The pages work without it.
(function () {
  "use strict";
  var body = document.body;
  var base = (parseInt(body.dataset.refresh, 10) || 0) * 1000;
  var maxDelay = base * 12;
  var delay = base, timer = null, paused = false, inflight = null, fetches = 0;

  // --- relative times ---
  function span(ms) {
    var s = Math.round(ms / 1000), d = Math.floor(s / 86400); s -= d * 86400;
    var h = Math.floor(s / 3600); s -= h * 3600;
    var m = Math.floor(s / 60); s -= m * 60;
    if (d > 0) return d + "d " + h + "h";
    if (h > 0) return h + "h " + m + "m";
    if (m > 0) return m + "m " + s + "s";
    return s + "s";
  }
  function rel(t, now) {
    var d = t - now;
    if (d >= -1000 && d <= 1000) return "now";
    return d > 0 ? "in " + span(d) : span(-d) + " ago";
  }
  function tick() {
    var now = Date.now(), els = document.querySelectorAll("time[data-rel]");
    for (var i = 0; i < els.length; i++) {
      var t = Date.parse(els[i].getAttribute("datetime"));
      if (!isNaN(t)) { els[i].textContent = rel(t, now); }
    }
  }
  setInterval(tick, 1000);

  // --- selection ---
  function wireSelection(root) {
    var forms = root.querySelectorAll("form.selection");
    forms.forEach(function (form) {
      var all = form.querySelector("input.select-all");
      var boxes = function () { return form.querySelectorAll("input[name=ref]"); };
      var count = form.querySelector(".selected-count");
      function update() {
        var n = 0; boxes().forEach(function (b) { if (b.checked) n++; });
        if (count) count.textContent = n ? n + " selected" : "None selected";
        form.querySelectorAll(".actions button").forEach(function (b) { b.disabled = n === 0; });
      }
      if (all) all.addEventListener("change", function () {
        boxes().forEach(function (b) { b.checked = all.checked; }); update();
      });
      form.addEventListener("change", update);
      update();
    });
  }

  // --- refresh in place ---
  function status(text) {
    var el = document.getElementById("refresh-status");
    if (el) el.textContent = text;
  }
  function busy() {
    var main = document.getElementById("main");
    if (!main) return true;
    if (main.querySelector("input[name=ref]:checked")) return true;
    var a = document.activeElement;
    return !!(a && main.contains(a) && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName));
  }
  function schedule() {
    clearTimeout(timer);
    if (!base) return;
    if (paused) { status("Refresh paused."); return; }
    if (document.hidden) { status("Refresh stopped while this tab is hidden."); return; }
    status("Next refresh in " + Math.round(delay / 1000) + "s" + (delay > base ? " (nothing changed lately)" : "") + ".");
    timer = setTimeout(refresh, delay);
  }
  // refresh fetches the page again and swaps its content in when it
  // changed; while one is under way, it returns that one.
  function refresh() {
    if (inflight) return inflight;
    if (busy()) { schedule(); return Promise.resolve(); }
    fetches++;
    inflight = fetch(location.href, { credentials: "same-origin", cache: "no-store", headers: { "S3q-Refresh": "1" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main"), cur = document.getElementById("main");
        if (!fresh || !cur) throw new Error("no main");
        if (fresh.dataset.digest && fresh.dataset.digest === cur.dataset.digest) {
          delay = Math.min(delay * 2, maxDelay);
        } else {
          var open = Array.prototype.map.call(cur.querySelectorAll("details"), function (d) { return d.open; });
          var node = document.importNode(fresh, true);
          cur.replaceWith(node);
          node.querySelectorAll("details").forEach(function (d, i) { if (i < open.length) d.open = open[i]; });
          wireSelection(node);
          delay = base;
        }
        var cost = doc.getElementById("cost"), curCost = document.getElementById("cost");
        if (cost && curCost) curCost.replaceWith(document.importNode(cost, true));
        tick();
      })
      .catch(function () { delay = Math.min(delay * 2, maxDelay); })
      .then(function () { inflight = null; schedule(); });
    return inflight;
  }
  document.addEventListener("visibilitychange", function () {
    if (!base) return;
    if (document.hidden) { clearTimeout(timer); status("Refresh stopped while this tab is hidden."); }
    else if (!paused) { delay = base; refresh(); }
  });
  var toggle = document.getElementById("refresh-toggle");
  if (toggle) toggle.addEventListener("click", function () {
    paused = !paused;
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    toggle.textContent = paused ? "Resume refresh" : "Pause refresh";
    if (!paused) delay = base;
    schedule();
  });

  // --- keyboard: "/" finds a task, j and k move between rows, "g" then
  // q, d, s or e goes to a page ---
  var g = false;
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey || (t && /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName))) return;
    if (e.key === "/") { var f = document.getElementById("find-ref"); if (f) { e.preventDefault(); f.focus(); } return; }
    if (e.key === "j" || e.key === "k") {
      // The next or previous row of the page's table.
      var rows = Array.prototype.slice.call(document.querySelectorAll("main table tbody th a"));
      if (!rows.length) return;
      var i = rows.indexOf(document.activeElement);
      i = e.key === "j" ? Math.min(i + 1, rows.length - 1) : Math.max(i - 1, 0);
      e.preventDefault();
      rows[i].focus();
      return;
    }
    if (g) {
      g = false;
      var nav = document.querySelector("header nav");
      var go = { q: 0, d: 1, s: 2, e: 3 }[e.key];
      var links = nav ? nav.querySelectorAll("a") : [];
      if (go !== undefined && links[go]) { e.preventDefault(); links[go].click(); }
      return;
    }
    if (e.key === "g") g = true;
  });

  wireSelection(document);
  window.s3q = { refresh: refresh, delay: function () { return delay; }, fetches: function () { return fetches; } };
  schedule();
})();
