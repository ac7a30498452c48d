#pragma once
// The style and script inlined into the SVG flame graph (profile_svg.cc). The script expects
// PAD, FULL (px of the frames' row), TOTAL (samples), CHARW (px per character) and DROPPED
// (frames left out) defined before it, frames as <g class="f" data-s data-n> with a <title>
// whose first line is the frame's name, and the #unzoom, #search, #details and #matched texts.

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
g.f { cursor: pointer; }
g.f text { pointer-events: none; }
g.f:hover rect { stroke: #222; stroke-width: 0.7; }
g.f.match rect { fill: rgb(230, 0, 230) !important; }
.hide { display: none; }
.parent { opacity: 0.55; }
)CSS";

inline constexpr const char* kFlameGraphScript = R"JS(
"use strict";
var frames = [], zoomed = null, searching = null;
var details, matched, unzoomButton, searchButton;

function attr(e, name) { return +e.getAttribute(name); }
function rectOf(g) { return g.querySelector("rect"); }
function nameOf(g) { return g.querySelector("title").textContent.split("\n")[0]; }
function pct(n) { return (100 * n / TOTAL).toFixed(2) + "%"; }

// Places a frame at x with width w (px) and cuts its name to what fits.
function place(g, x, w) {
  var r = rectOf(g), t = g.querySelector("text");
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
}

function unzoom() {
  zoomed = null;
  frames.forEach(function (f) {
    f.classList.remove("hide", "parent");
    place(f, PAD + attr(f, "data-s") / TOTAL * FULL, attr(f, "data-n") / TOTAL * FULL);
  });
  unzoomButton.classList.add("hide");
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
  // Frames too narrow to draw are not searched: then the share is a lower bound.
  matched.textContent = "Matched " + (DROPPED > 0 ? "\u2265 " : "") + pct(covered) +
      " of samples (" + spans.length + (spans.length === 1 ? " frame" : " frames") + "): " + term;
}

function resetSearch() {
  searching = null;
  frames.forEach(function (f) { f.classList.remove("match"); });
  searchButton.textContent = "Search";
  matched.textContent = " ";
}

function askSearch() {
  var term = prompt("Search functions (regular expression)", searching || "");
  if (term) search(term);
}

function init() {
  frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  details = document.getElementById("details");
  matched = document.getElementById("matched");
  unzoomButton = document.getElementById("unzoom");
  searchButton = document.getElementById("search");
  unzoomButton.addEventListener("click", unzoom);
  searchButton.addEventListener("click", function () { searching ? resetSearch() : askSearch(); });
  matched.addEventListener("click", resetSearch);
  document.addEventListener("click", function (e) {
    var g = e.target.closest && e.target.closest("g.f");
    if (!g) return;
    g.classList.contains("root") ? unzoom() : zoom(g);
  });
  document.addEventListener("mouseover", function (e) {
    var g = e.target.closest && e.target.closest("g.f");
    details.textContent = g ? g.querySelector("title").textContent.split("\n").join("  \u2014  ") : " ";
  });
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); askSearch(); }
    else if (e.key === "/") { e.preventDefault(); askSearch(); }
    else if (e.key === "Escape") { unzoom(); resetSearch(); }
  });
  // "graph.svg?s=REGEX" opens with that search done (a link that shows a function's share).
  var s = new URLSearchParams(window.location.search).get("s");
  if (s) search(s);
}
window.addEventListener("load", init);
)JS";

}  // namespace uscope
