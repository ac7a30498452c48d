#pragma once
// The style and script inlined into the SVG flame graph (profile_svg.cc). The script expects
// PAD, FULL (px of the frames' row), ROW (px from one row of frames to the next), TOTAL
// (samples, or with TIME nanoseconds), CHARW (px per character) and DROPPED (frames left out)
// defined before it; frames as <g data-s data-n [data-self]> holding a <title> whose first line
// is the frame's name; and the #unzoom, #search, #details and #matched texts.

namespace uscope {

inline constexpr const char* kFlameGraphStyle = R"CSS(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { font-size: 12px; text-anchor: middle; fill: #555; }
#search, #matched, .note { text-anchor: end; }
.note { fill: #777; font-size: 11px; }
.legend { fill: #333; font-size: 11px; }
.empty { text-anchor: middle; font-size: 15px; fill: #777; }
.button { fill: #1d4f91; cursor: pointer; }
.button:hover { text-decoration: underline; }
g[data-n] { cursor: pointer; }
g[data-n] text { pointer-events: none; }
g[data-n] rect { rx: 2px; }
g[data-n]:hover rect { stroke: #222; stroke-width: 0.7; }
g.match rect { fill: rgb(230, 0, 230) !important; }
.hide { display: none; }
.parent { opacity: 0.55; }
)CSS";

inline constexpr const char* kFlameGraphScript = R"JS(
"use strict";
var frames = [], zoomed = null, searching = null, restoring = false;
var details, matched, unzoomButton, searchButton, hint;

function attr(e, name) { return +e.getAttribute(name); }
function rectOf(g) { return g.querySelector("rect"); }
function nameOf(g) { return g.querySelector("title").textContent.split("\n")[0]; }
function grouped(n) { return n.toLocaleString("en-US"); }

// A count: samples, or with TIME (an off-CPU or wall-clock profile) nanoseconds, shown in ms, or
// with BYTES (memleak's outstanding blocks) bytes.
function amount(n) {
  if (BYTES) return grouped(n) + " bytes";
  return TIME ? (n / 1e6).toLocaleString("en-US", {maximumFractionDigits: 3}) + " ms"
              : grouped(n) + " samples";
}
// "8,123 samples (41.20%), self 12 samples (0.06%)", and the zoomed frame's share when zoomed.
function countsOf(g) {
  var n = attr(g, "data-n"), self = attr(g, "data-self");
  var text = amount(n) + " (" + pct(n) + "), self " + amount(self) + " (" + pct(self) + ")";
  if (zoomed && zoomed !== g && !g.classList.contains("parent"))
    text += ", " + share(n, attr(zoomed, "data-n")) + " of " + nameOf(zoomed);
  return text;
}
// Rounded down: a share that is not all never reads 100.00%.
function share(n, of) { return (Math.floor(10000 * n / of) / 100).toFixed(2) + "%"; }
function pct(n) { return share(n, TOTAL); }

// Places a frame at x with width w (px) and cuts its name to what fits.
function place(g, x, w) {
  var r = rectOf(g), t = g.querySelector("text");
  if (!t) {
    t = document.createElementNS("http://www.w3.org/2000/svg", "text");
    t.setAttribute("y", attr(r, "y") + 12);
    g.appendChild(t);
  }
  r.setAttribute("x", x.toFixed(2));
  r.setAttribute("width", w.toFixed(2));
  t.setAttribute("x", (x + 3).toFixed(2));
  var name = nameOf(g), fits = Math.floor((w - 6) / CHARW);
  t.textContent = fits < 3 ? "" : name.length <= fits ? name : name.slice(0, fits - 2) + "..";
}

function zoom(g) {
  var s0 = attr(g, "data-s"), n0 = attr(g, "data-n"), y0 = attr(rectOf(g), "y");
  zoomed = g;
  frames.forEach(function (f) {
    var s = attr(f, "data-s"), n = attr(f, "data-n"), y = attr(rectOf(f), "y");
    f.classList.remove("hide", "parent");
    if (y > y0 && s <= s0 && s + n >= s0 + n0) {
      f.classList.add("parent");  // a caller of the zoomed frame
      place(f, PAD, FULL);
    } else if (y <= y0 && s >= s0 && s + n <= s0 + n0 && n / n0 * FULL >= 0.1) {
      place(f, PAD + (s - s0) / n0 * FULL, n / n0 * FULL);
    } else {
      f.classList.add("hide");
    }
  });
  unzoomButton.classList.remove("hide");
  remember();
}

function unzoom() {
  zoomed = null;
  frames.forEach(function (f) {
    f.classList.remove("hide", "parent");
    place(f, PAD + attr(f, "data-s") / TOTAL * FULL, attr(f, "data-n") / TOTAL * FULL);
  });
  unzoomButton.classList.add("hide");
  remember();
}

// The zoomed frame as its path of names from the root ("all;server;main;...").
function pathOf(g) {
  var s0 = attr(g, "data-s"), y0 = attr(rectOf(g), "y");
  var callers = frames.filter(function (f) {
    var s = attr(f, "data-s"), y = attr(rectOf(f), "y");
    return y > y0 && s <= s0 && s + attr(f, "data-n") > s0;
  });
  callers.sort(function (a, b) { return attr(rectOf(b), "y") - attr(rectOf(a), "y"); });
  return callers.concat([g]).map(nameOf).join(";");
}

// The frame at the end of `path`, or the deepest of its callers that is still in the graph.
function frameAt(path) {
  var names = path.split(";"), at = document.querySelector("g.root");
  for (var k = 1; at && k < names.length; ++k) {
    var s0 = attr(at, "data-s"), e0 = s0 + attr(at, "data-n"), y = attr(rectOf(at), "y") - ROW;
    var next = frames.find(function (f) {
      var s = attr(f, "data-s");
      return attr(rectOf(f), "y") === y && s >= s0 && s < e0 && nameOf(f) === names[k];
    });
    if (!next) break;
    at = next;
  }
  return at;
}

// Zoom and search live in the URL (?z=PATH&s=REGEX), so that a reload of a graph rewritten
// every few seconds (uscope profile -i) keeps them, and a link shows what its sender saw.
function remember() {
  if (restoring) return;
  var q = new URLSearchParams();
  if (zoomed) q.set("z", pathOf(zoomed));
  if (searching) q.set("s", searching);
  var query = q.toString();
  try {
    history.replaceState(null, "", query ? "?" + query : window.location.pathname);
  } catch (e) {}  // some browsers refuse it for file:// URLs: then nothing is remembered
}

// Highlights frames whose name matches `term` (a regular expression) and shows the share of
// samples under them, each sample counted once however many matching frames it has.
function search(term) {
  var re;
  try { re = new RegExp(term); } catch (e) { alert("not a regular expression: " + e.message); return; }
  var spans = [];
  frames.forEach(function (f) {
    var hit = !f.classList.contains("root") && re.test(nameOf(f));
    f.classList.toggle("match", hit);
    if (hit) spans.push([attr(f, "data-s"), attr(f, "data-s") + attr(f, "data-n")]);
  });
  spans.sort(function (a, b) { return a[0] - b[0]; });
  var covered = 0, end = 0;
  spans.forEach(function (sp) {
    if (sp[1] <= end) return;
    covered += sp[1] - Math.max(sp[0], end);
    end = sp[1];
  });
  searching = term;
  searchButton.textContent = "Reset Search";
  remember();
  // Frames too narrow to draw are not searched: then the share is a lower bound.
  matched.textContent = "Matched " + (DROPPED > 0 ? "\u2265 " : "") + pct(covered) +
      " of samples (" + spans.length + (spans.length === 1 ? " frame" : " frames") + "): " + term;
}

function resetSearch() {
  searching = null;
  frames.forEach(function (f) { f.classList.remove("match"); });
  searchButton.textContent = "Search";
  matched.textContent = " ";
  remember();
}

function askSearch() {
  var term = prompt("Search functions (regular expression)", searching || "");
  if (term) search(term);
}

function init() {
  frames = Array.prototype.slice.call(document.querySelectorAll("g[data-n]"));
  details = document.getElementById("details");
  hint = details.textContent;
  matched = document.getElementById("matched");
  unzoomButton = document.getElementById("unzoom");
  searchButton = document.getElementById("search");
  unzoomButton.addEventListener("click", unzoom);
  searchButton.addEventListener("click", function () { searching ? resetSearch() : askSearch(); });
  matched.addEventListener("click", resetSearch);
  document.addEventListener("click", function (e) {
    var g = e.target.closest && e.target.closest("g[data-n]");
    if (!g) return;
    g.classList.contains("root") ? unzoom() : zoom(g);
  });
  document.addEventListener("mouseover", function (e) {
    var g = e.target.closest && e.target.closest("g[data-n]");
    if (!g) { details.textContent = hint; return; }
    // The tooltip gets the counts the file leaves out to stay small.
    g.querySelector("title").textContent = nameOf(g) + "\n" + countsOf(g);
    details.textContent = nameOf(g) + "  \u2014  " + countsOf(g);
  });
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); askSearch(); }
    else if (e.key === "/") { e.preventDefault(); askSearch(); }
    else if (e.key === "Escape") { unzoom(); resetSearch(); }
  });
  var q = new URLSearchParams(window.location.search), z = q.get("z"), s = q.get("s");
  restoring = true;
  if (z) {
    var g = frameAt(z);
    if (g && !g.classList.contains("root")) zoom(g);
  }
  if (s) search(s);
  restoring = false;
}
window.addEventListener("load", init);
)JS";

}  // namespace uscope
