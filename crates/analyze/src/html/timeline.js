// The interactive timeline of an mpiscope report: canvas drawing at levels of detail
// (slices of the run per rank, aggregated per pixel and per group of ranks; every call when
// zoomed in), zoom, pan, rank selection and message lines. Data: the #tl-data element.
"use strict";
(function () {
  var D = null, canvas = null, g = null;
  var LEFT = 96, TOP = 34, MAXH = 640;
  var fracL = [], fidL = [];      // per rank: levels of slices (Float32Array, Uint8Array)
  var detail = [];                // per rank: {s: Float64Array, e: Float64Array, emax, f: Uint8Array} or null
  var msgs = null;                // {from, to, ts, tr} typed arrays
  var sel = [], lanes = [], laneH = 16, laneOf = null;
  var view = { t0: 0, t1: 1 };
  var drag = null;
  function bytes(s) {
    var bin = atob(s), u = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { u[i] = bin.charCodeAt(i); }
    return u;
  }
  function varints(u) {
    var out = [], v = 0, m = 1;
    for (var i = 0; i < u.length; i++) {
      var c = u[i];
      v += (c & 127) * m;
      if (c < 128) { out.push(v); v = 0; m = 1; } else { m *= 128; }
    }
    return out;
  }
  function fmt(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) { return (ns / 1e9).toFixed(3) + " s"; }
    if (a >= 1e6) { return (ns / 1e6).toFixed(3) + " ms"; }
    if (a >= 1e3) { return (ns / 1e3).toFixed(3) + " us"; }
    return ns.toFixed(0) + " ns";
  }
  function load() {
    D = JSON.parse(document.getElementById("tl-data").textContent);
    var n = D.ranks.length, B = D.buckets;
    var fid = bytes(D.fid), mpi = bytes(D.mpi);
    for (var r = 0; r < n; r++) {
      var f0 = new Float32Array(B), d0 = new Uint8Array(B);
      for (var i = 0; i < B; i++) { f0[i] = mpi[r * B + i] / 255; d0[i] = fid[r * B + i]; }
      var lv = pyramid(f0, d0);
      fracL.push(lv[0]); fidL.push(lv[1]);
      detail.push(null);
    }
    Object.keys(D.detail).forEach(function (k) {
      var v = varints(bytes(D.detail[k])), m = v.length / 3;
      var s = new Float64Array(m), e = new Float64Array(m), emax = new Float64Array(m), f = new Uint8Array(m);
      var t = 0, mx = 0;
      for (var i = 0; i < m; i++) {
        t += v[3 * i]; s[i] = t; e[i] = t + v[3 * i + 1]; f[i] = v[3 * i + 2];
        mx = Math.max(mx, e[i]); emax[i] = mx;
      }
      detail[Number(k)] = { s: s, e: e, emax: emax, f: f };
    });
    var mv = varints(bytes(D.messages)), k = mv.length / 4;
    msgs = { from: new Uint32Array(k), to: new Uint32Array(k), ts: new Float64Array(k), tr: new Float64Array(k) };
    var ts = 0;
    for (var j = 0; j < k; j++) {
      msgs.from[j] = mv[4 * j]; msgs.to[j] = mv[4 * j + 1];
      ts += mv[4 * j + 2]; msgs.ts[j] = ts;
      var z = mv[4 * j + 3];
      msgs.tr[j] = ts + (z % 2 === 0 ? z / 2 : -(z + 1) / 2);
    }
    view = { t0: 0, t1: D.span_ns };
  }
  // Levels of slices: level l has B / 2^l slices; a slice's fraction is the mean of its two
  // halves, its function the one of the busier half.
  function pyramid(f0, d0) {
    var fs = [f0], ds = [d0];
    while (fs[fs.length - 1].length > 1) {
      var pf = fs[fs.length - 1], pd = ds[ds.length - 1], m = Math.ceil(pf.length / 2);
      var nf = new Float32Array(m), nd = new Uint8Array(m);
      for (var i = 0; i < m; i++) {
        var a = 2 * i, b = Math.min(2 * i + 1, pf.length - 1);
        nf[i] = (pf[a] + pf[b]) / 2;
        nd[i] = pf[a] >= pf[b] ? pd[a] : pd[b];
        if (pf[a] === 0 && pf[b] === 0) { nd[i] = 255; }
      }
      fs.push(nf); ds.push(nd);
    }
    return [fs, ds];
  }
  function parseRanks(text) {
    text = text.trim();
    if (text === "" || text === "all") { return D.ranks.map(function (_, i) { return i; }); }
    var index = {};
    D.ranks.forEach(function (r, i) { index[r] = i; });
    var out = [];
    text.split(",").forEach(function (part) {
      var ab = part.trim().split("-");
      var a = parseInt(ab[0], 10), b = ab.length > 1 ? parseInt(ab[1], 10) : a;
      if (isNaN(a) || isNaN(b)) { return; }
      for (var r = a; r <= b && out.length < D.ranks.length; r++) {
        if (index[r] !== undefined) { out.push(index[r]); }
      }
    });
    return out;
  }
  // Lanes: one per selected rank while they fit at 4 px, else groups of consecutive ranks
  // (aggregate lanes, their slices the mean of their ranks').
  function setLanes(list) {
    sel = list.length ? list : D.ranks.map(function (_, i) { return i; });
    var per = Math.max(1, Math.ceil(sel.length / (MAXH / 4)));
    lanes = [];
    for (var i = 0; i < sel.length; i += per) {
      var members = sel.slice(i, i + per);
      var a = D.ranks[members[0]], b = D.ranks[members[members.length - 1]];
      lanes.push({ members: members, label: members.length === 1 ? "rank " + a : "ranks " + a + "-" + b, levels: null });
    }
    laneH = Math.max(4, Math.min(20, Math.floor(MAXH / lanes.length)));
    laneOf = {};
    if (per === 1) { lanes.forEach(function (l, k) { laneOf[l.members[0]] = k; }); }
    canvas.height = TOP + laneH * lanes.length + 8;
  }
  function laneLevels(l) {
    if (l.members.length === 1) { return [fracL[l.members[0]], fidL[l.members[0]]]; }
    if (l.levels) { return l.levels; }
    var B = D.buckets, nfun = D.functions.length, f0 = new Float32Array(B), d0 = new Uint8Array(B);
    var tally = new Float32Array(nfun + 1);
    for (var i = 0; i < B; i++) {
      tally.fill(0);
      var sum = 0;
      for (var k = 0; k < l.members.length; k++) {
        var r = l.members[k], v = fracL[r][0][i];
        sum += v;
        var d = fidL[r][0][i];
        if (d !== 255) { tally[d] += v; }
      }
      f0[i] = sum / l.members.length;
      var best = 255, bv = 0;
      for (var q = 0; q < tally.length; q++) { if (tally[q] > bv) { bv = tally[q]; best = q; } }
      d0[i] = best;
    }
    l.levels = pyramid(f0, d0);
    return l.levels;
  }
  function colour(f) { return D.colours[Math.min(f, D.colours.length - 1)]; }
  function ticks(t0, t1, w) {
    var span = t1 - t0, raw = span / Math.max(2, w / 110), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * mag; }).find(function (s) { return s >= raw; });
    var out = [];
    for (var t = Math.ceil(t0 / step) * step; t <= t1 && out.length < 40; t += step) { out.push(t); }
    return out;
  }
  function drawLaneSlices(l, y, h, W, nsPx) {
    var lv = laneLevels(l), bw0 = D.span_ns / D.buckets;
    var L = 0;
    while (L + 1 < lv[0].length && bw0 * Math.pow(2, L + 1) <= nsPx) { L++; }
    var fr = lv[0][L], fd = lv[1][L], bw = bw0 * Math.pow(2, L), drawn = 0;
    for (var px = 0; px < W; px++) {
      var ta = view.t0 + px * nsPx, tb = ta + nsPx;
      var ia = Math.max(0, Math.floor(ta / bw)), ib = Math.min(fr.length - 1, Math.floor((tb - 1e-9) / bw));
      if (ib < 0 || ia >= fr.length) { continue; }
      var s = 0, c = 0, best = 255, bv = -1;
      for (var i = ia; i <= ib; i++) { s += fr[i]; c++; if (fr[i] > bv && fd[i] !== 255) { bv = fr[i]; best = fd[i]; } }
      var f = c ? s / c : 0;
      if (f <= 0 || best === 255) { continue; }
      var bh = Math.max(1, f * h);
      g.fillStyle = colour(best);
      g.fillRect(LEFT + px, y + h - bh, 1, bh);
      drawn++;
    }
    return drawn;
  }
  function first(d, t) {
    var lo = 0, hi = d.s.length;
    while (lo < hi) { var m = (lo + hi) >> 1; if (d.emax[m] < t) { lo = m + 1; } else { hi = m; } }
    return lo;
  }
  function drawLaneSpans(d, y, h, W, nsPx) {
    var drawn = 0, lastPx = -1;
    for (var i = first(d, view.t0); i < d.s.length && d.s[i] <= view.t1; i++) {
      if (d.e[i] < view.t0) { continue; }
      var x0 = (d.s[i] - view.t0) / nsPx, x1 = (d.e[i] - view.t0) / nsPx;
      x0 = Math.max(x0, 0); x1 = Math.min(x1, W);
      if (x1 - x0 < 1) {
        if (Math.floor(x0) === lastPx) { continue; }
        x1 = x0 + 1;
      }
      lastPx = Math.floor(x1 - 1e-9);
      g.fillStyle = colour(d.f[i]);
      g.fillRect(LEFT + x0, y, x1 - x0, h);
      drawn++;
    }
    return drawn;
  }
  function draw() {
    var W = canvas.width - LEFT - 10, nsPx = (view.t1 - view.t0) / W;
    g.clearRect(0, 0, canvas.width, canvas.height);
    g.font = "11px sans-serif"; g.fillStyle = "#222"; g.textAlign = "center";
    var tk = ticks(view.t0, view.t1, W);
    tk.forEach(function (t) {
      var x = LEFT + (t - view.t0) / nsPx;
      g.fillStyle = "#222"; g.fillText(fmt(t), x, TOP - 14);
      g.fillStyle = "#ddd"; g.fillRect(x, TOP - 10, 1, canvas.height - TOP + 10);
    });
    g.fillStyle = "#222"; g.textAlign = "left";
    g.fillText("time since the run's first call", LEFT + W / 2 - 80, 10);
    var spans = 0, slices = 0, gap = laneH >= 8 ? 2 : (laneH >= 5 ? 1 : 0), step = Math.ceil(12 / laneH);
    var bw0 = D.span_ns / D.buckets;
    lanes.forEach(function (l, k) {
      var y = TOP + k * laneH, h = laneH - gap;
      if (k % step === 0) {
        g.fillStyle = "#222"; g.textAlign = "right";
        g.fillText(l.label, LEFT - 6, y + Math.min(h, 14) - 2);
      }
      g.fillStyle = D.compute; g.fillRect(LEFT, y, W, h);
      var d = l.members.length === 1 ? detail[l.members[0]] : null;
      if (d && nsPx < bw0) { spans += drawLaneSpans(d, y, h, W, nsPx); } else { slices += drawLaneSlices(l, y, h, W, nsPx); }
    });
    var lines = 0;
    var showMsgs = document.getElementById("tl-msgs").checked;
    var inView = 0;
    if (showMsgs && lanes.length && lanes[0].members.length === 1) {
      for (var q = 0; q < msgs.ts.length && msgs.ts[q] <= view.t1; q++) { if (msgs.tr[q] >= view.t0) { inView++; } }
    }
    if (inView > 0 && inView <= W / 2) {
      var index = {};
      D.ranks.forEach(function (r, i) { index[r] = i; });
      g.strokeStyle = "rgba(0,0,0,0.7)"; g.lineWidth = 1; g.beginPath();
      for (var j = 0; j < msgs.ts.length && lines < 20000; j++) {
        var ts = msgs.ts[j], tr = msgs.tr[j];
        if (ts > view.t1) { break; }
        if (tr < view.t0) { continue; }
        var a = laneOf[index[msgs.from[j]]], b = laneOf[index[msgs.to[j]]];
        if (a === undefined || b === undefined) { continue; }
        g.moveTo(LEFT + (ts - view.t0) / nsPx, TOP + a * laneH + (laneH - gap) / 2);
        g.lineTo(LEFT + (tr - view.t0) / nsPx, TOP + b * laneH + (laneH - gap) / 2);
        lines++;
      }
      g.stroke();
    }
    canvas.dataset.drawnSpans = String(spans);
    canvas.dataset.drawnSlices = String(slices);
    canvas.dataset.lanes = String(lanes.length);
    canvas.dataset.messageLines = String(lines);
    canvas.dataset.view = view.t0.toFixed(0) + ":" + view.t1.toFixed(0);
    status("Showing " + fmt(view.t0) + " to " + fmt(view.t1) + " (" + fmt(view.t1 - view.t0) + "), " +
      sel.length + " ranks in " + lanes.length + " lanes" + (lanes.length && lanes[0].members.length > 1 ? " (aggregate lanes)" : "") +
      "; drawn: " + spans + " calls, " + slices + " slice columns, " + lines + " message lines" +
      (inView > W / 2 ? " (" + inView + " messages in view: zoom in to draw their lines)" : "") + ".");
  }
  function status(t) { document.getElementById("tl-status").textContent = t; }
  function zoom(f, at) {
    var w = view.t1 - view.t0, c = at === undefined ? view.t0 + w / 2 : at;
    var nw = Math.max(100, Math.min(D.span_ns, w / f));
    var r = (c - view.t0) / w;
    view.t0 = c - r * nw; view.t1 = view.t0 + nw;
    clamp(); draw();
  }
  function clamp() {
    var w = view.t1 - view.t0;
    if (view.t0 < 0) { view.t0 = 0; view.t1 = w; }
    if (view.t1 > D.span_ns) { view.t1 = D.span_ns; view.t0 = Math.max(0, D.span_ns - w); }
  }
  function timeAt(ev) {
    var rect = canvas.getBoundingClientRect(), W = canvas.width - LEFT - 10;
    var x = (ev.clientX - rect.left) * canvas.width / rect.width - LEFT;
    return { x: x, t: view.t0 + x * (view.t1 - view.t0) / W, lane: Math.floor(((ev.clientY - rect.top) * canvas.height / rect.height - TOP) / laneH) };
  }
  function hover(ev) {
    var p = timeAt(ev), l = lanes[p.lane];
    if (!l || p.x < 0) { return; }
    var what = "";
    var d = l.members.length === 1 ? detail[l.members[0]] : null;
    if (d) {
      for (var i = first(d, p.t); i < d.s.length && d.s[i] <= p.t; i++) {
        if (d.e[i] >= p.t) { what = ": " + D.functions[d.f[i]] + " for " + fmt(d.e[i] - d.s[i]); }
      }
    }
    status(l.label + " at " + fmt(p.t) + what);
  }
  window.mpiscopeTimelineInit = function () {
    canvas = document.getElementById("tl-canvas");
    if (!canvas) { return; }
    g = canvas.getContext("2d");
    load();
    setLanes([]);
    draw();
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      zoom(ev.deltaY < 0 ? 1.5 : 1 / 1.5, timeAt(ev).t);
    }, { passive: false });
    canvas.addEventListener("mousedown", function (ev) {
      var p = timeAt(ev);
      if (p.x < 0) {
        var l = lanes[p.lane];
        if (l && l.members.length > 1) {
          document.getElementById("tl-ranks").value = D.ranks[l.members[0]] + "-" + D.ranks[l.members[l.members.length - 1]];
          setLanes(l.members); draw();
        }
        return;
      }
      drag = { x: ev.clientX, t0: view.t0, t1: view.t1 };
    });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) { hover(ev); return; }
      var rect = canvas.getBoundingClientRect(), W = canvas.width - LEFT - 10;
      var dt = (ev.clientX - drag.x) * canvas.width / rect.width * (drag.t1 - drag.t0) / W;
      view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt; clamp(); draw();
    });
    window.addEventListener("mouseup", function () { drag = null; });
    document.getElementById("tl-in").onclick = function () { zoom(2); };
    document.getElementById("tl-out").onclick = function () { zoom(0.5); };
    document.getElementById("tl-all").onclick = function () { view = { t0: 0, t1: D.span_ns }; draw(); };
    var app = document.getElementById("tl-app");
    if (D.app) { app.onclick = function () { view = { t0: D.app[0], t1: D.app[1] }; draw(); }; } else { app.disabled = true; }
    document.getElementById("tl-show").onclick = function () {
      setLanes(parseRanks(document.getElementById("tl-ranks").value)); draw();
    };
    document.getElementById("tl-ranks").addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { document.getElementById("tl-show").click(); }
    });
    document.getElementById("tl-msgs").onchange = draw;
  };
  // The self-check (#selftest): zoom in and out, choose one rank, then back to the whole run.
  window.mpiscopeTimelineSelfTest = function () {
    if (!canvas) { return "timeline: none"; }
    var out = [], w = view.t1 - view.t0;
    var before = Number(canvas.dataset.drawnSpans) + Number(canvas.dataset.drawnSlices);
    out.push(before > 0 ? "drawn" : "FAILED: nothing drawn");
    zoom(4);
    out.push(Math.abs((view.t1 - view.t0) * 4 - w) < 1 ? "zoom" : "FAILED: zoom");
    zoom(0.25);
    setLanes(parseRanks(String(D.ranks[D.ranks.length - 1]))); draw();
    out.push(canvas.dataset.lanes === "1" ? "select" : "FAILED: select");
    setLanes([]); view = { t0: 0, t1: D.span_ns }; draw();
    return "timeline: " + out.join(", ");
  };
})();
