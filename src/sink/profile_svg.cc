// A self-contained interactive flame graph: one SVG with its style and script inline (no fonts,
// images or scripts fetched), so that it opens from disk in any browser, offline. Hand-written:
// Brendan Gregg's flamegraph.pl (Perl, not packaged by Debian) defined the behaviour people
// expect (click to zoom, search with the matched share, a details line), not the code.
//
// The root ("all") is at the bottom, each process above it, then its frames root first; identical
// frames on one path merge, siblings are sorted by name so that two profiles compare. Frames
// narrower than 0.1 px are left out (with their callees) and counted in the header, which keeps
// the file small for big profiles. Each frame is <g data-s data-n data-self> (its first sample,
// its samples and those where it is the leaf) holding a <title> (its name: the tooltip), a <rect>
// and its name cut to fit; the script re-lays frames out from data-s/data-n when zooming.
#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <span>
#include <unordered_map>
#include <vector>

#include "sink/profile_stacks.h"
#include "sink/profile_svg_script.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

constexpr double kWidth = 1200, kPad = 10, kFull = kWidth - 2 * kPad;
constexpr double kFrameHeight = 16, kFrameStep = 17;
constexpr double kTop = 84;     // title, subtitle, buttons and legend above the frames
constexpr double kBottom = 34;  // the details line below them
constexpr double kMinWidth = 0.1;
// The details line until the pointer is on a frame.
constexpr const char* kHint =
    "Point at a frame for its samples, click to zoom in, Ctrl+F or / to search, Esc to reset";
// Average advance of a 12 px sans-serif character (DejaVu Sans is among the widest): what fits.
constexpr double kCharWidth = 7.2;

struct FlameNode {
  uint32_t label = 0;   // index into FlameTree::labels
  uint32_t parent = 0;  // < the node's own index: callers are added first
  FrameClass cls = FrameClass::User;
  uint64_t total = 0, self = 0;
};

// The merged call tree: one node per distinct path from the root. Labels are interned and
// children found by hash while adding; finish() then lays each node's children out contiguously,
// sorted by name (a map per node costs too much on a profile of a busy machine).
class FlameTree {
 public:
  FlameTree() { nodes.push_back({intern("all"), 0, FrameClass::Process}); }

  uint32_t intern(const std::string& label) {
    auto [it, added] = label_ids_.try_emplace(label, uint32_t(labels.size()));
    if (added) labels.push_back(label);
    return it->second;
  }

  void add(const std::vector<std::pair<uint32_t, FrameClass>>& path, uint64_t count) {
    uint32_t at = 0;
    nodes[0].total += count;
    for (const auto& [label, cls] : path) {
      uint64_t key = uint64_t(at) << 32 | label;
      auto [it, added] = child_of_.try_emplace(key, uint32_t(nodes.size()));
      if (added) nodes.push_back({label, at, cls});
      at = it->second;
      nodes[at].total += count;
    }
    nodes[at].self += count;
  }

  void finish() {
    child_of_.clear();
    std::vector<uint32_t> by_name(labels.size()), rank(labels.size());
    for (uint32_t i = 0; i < by_name.size(); ++i) by_name[i] = i;
    std::sort(by_name.begin(), by_name.end(),
              [&](uint32_t a, uint32_t b) { return labels[a] < labels[b]; });
    for (uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
    children_.clear();
    for (uint32_t i = 1; i < nodes.size(); ++i) children_.push_back(i);
    std::sort(children_.begin(), children_.end(), [&](uint32_t a, uint32_t b) {
      if (nodes[a].parent != nodes[b].parent) return nodes[a].parent < nodes[b].parent;
      return rank[nodes[a].label] < rank[nodes[b].label];
    });
    first_child_.assign(nodes.size() + 1, 0);
    for (uint32_t c : children_) ++first_child_[nodes[c].parent + 1];
    for (size_t i = 1; i < first_child_.size(); ++i) first_child_[i] += first_child_[i - 1];
  }

  std::span<const uint32_t> children(uint32_t node) const {
    return {children_.data() + first_child_[node], children_.data() + first_child_[node + 1]};
  }
  const std::string& label(uint32_t node) const { return labels[nodes[node].label]; }

  std::vector<std::string> labels;
  std::vector<FlameNode> nodes;

 private:
  std::unordered_map<std::string, uint32_t> label_ids_;
  std::unordered_map<uint64_t, uint32_t> child_of_;  // parent << 32 | label -> child
  std::vector<uint32_t> children_, first_child_;
};

// Text inside XML: escaped, control characters and bytes that are not UTF-8 replaced by U+FFFD
// (a symbol name is bytes; one bad byte would make the whole SVG unreadable).
std::string xml_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!valid || (len == 1 && c < 0x20 && c != '\t')) {
      out += "\xEF\xBF\xBD";
      i += valid ? len : 1;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

// The label cut to `width` px ("long_function_na.."), as the script does after a zoom.
std::string fitted(const std::string& label, double width) {
  auto fits = static_cast<size_t>(std::max(0.0, (width - 6) / kCharWidth));
  if (fits < 3) return "";
  if (label.size() <= fits) return label;
  std::string cut = label.substr(0, fits - 2);
  while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0x80) cut.pop_back();
  if (!cut.empty() && static_cast<unsigned char>(cut.back()) >= 0xC0) cut.pop_back();
  return cut + "..";
}

// "#rrggbb" of a hue (degrees), saturation and lightness (0..1): shorter than CSS hsl() in a
// file with one fill per frame.
std::string hsl_hex(double hue, double sat, double light) {
  double c = (1 - std::fabs(2 * light - 1)) * sat, h = std::fmod(hue, 360) / 60;
  double x = c * (1 - std::fabs(std::fmod(h, 2) - 1)), m = light - c / 2;
  double r = 0, g = 0, b = 0;
  if (h < 1)
    r = c, g = x;
  else if (h < 2)
    r = x, g = c;
  else if (h < 3)
    g = c, b = x;
  else if (h < 4)
    g = x, b = c;
  else if (h < 5)
    r = x, b = c;
  else
    r = c, b = x;
  auto byte = [&](double v) { return static_cast<int>(std::lround((v + m) * 255)); };
  return fmt::format("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b));
}

// Colors by kind, shaded by the name's hash so that neighbours differ and a function keeps its
// color from one profile to the next.
std::string color(const std::string& label, FrameClass cls, bool root) {
  uint32_t h = 2166136261u;
  for (char c : label) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  double v1 = (h & 0xffff) / 65535.0, v2 = (h >> 16) / 65535.0;
  if (root) return "#cccccc";
  switch (cls) {
    case FrameClass::Process:
      return hsl_hex(265 + 20 * v1, 0.45, 0.72 + 0.06 * v2);
    case FrameClass::User:
      return hsl_hex(5 + 45 * v1, 0.85, 0.58 + 0.08 * v2);
    case FrameClass::Inlined:
      return hsl_hex(175 + 15 * v1, 0.60, 0.58 + 0.08 * v2);
    case FrameClass::Kernel:
      return hsl_hex(205 + 20 * v1, 0.65, 0.65 + 0.08 * v2);
    case FrameClass::Jit:
      return hsl_hex(95 + 35 * v1, 0.55, 0.55 + 0.08 * v2);
    case FrameClass::Unknown:
      return hsl_hex(0, 0, 0.70 + 0.10 * v2);
  }
  return "#888888";
}

struct LegendEntry {
  FrameClass cls;
  const char* name;
};
constexpr LegendEntry kLegend[] = {
    {FrameClass::Process, "process"}, {FrameClass::User, "user"}, {FrameClass::Inlined, "inlined"},
    {FrameClass::Kernel, "kernel"},   {FrameClass::Jit, "JIT"},   {FrameClass::Unknown, "unknown"}};

class SvgWriter {
 public:
  SvgWriter(const FlameTree& tree, std::string& out) : tree_(tree), out_(out) {
    // Subtree sizes, for counting what is left out: children come after their parents.
    subtree_.assign(tree.nodes.size(), 1);
    for (size_t i = tree.nodes.size(); i-- > 1;) subtree_[tree.nodes[i].parent] += subtree_[i];
  }

  // How many rows above the root the frames wide enough to draw reach.
  uint32_t drawn_depth() const {
    std::vector<uint32_t> depth(tree_.nodes.size(), 0);
    std::vector<bool> drawn(tree_.nodes.size(), true);
    uint32_t deepest = 0;
    for (size_t i = 1; i < tree_.nodes.size(); ++i) {
      uint32_t parent = tree_.nodes[i].parent;
      drawn[i] = drawn[parent] && width(i) >= kMinWidth;
      depth[i] = depth[parent] + 1;
      if (drawn[i]) deepest = std::max(deepest, depth[i]);
    }
    return deepest;
  }

  // `node`'s frame and its callees', at `depth` rows above the root (drawn at `base_y`), from
  // sample `start`.
  void frames(uint32_t index, uint32_t depth, uint64_t start, double base_y) {
    const FlameNode& node = tree_.nodes[index];
    double w = width(index);
    if (w < kMinWidth) {
      dropped_ += subtree_[index];
      return;
    }
    double x = kPad + static_cast<double>(start) / static_cast<double>(total()) * kFull;
    double y = base_y - depth * kFrameStep;
    bool root = index == 0;
    const std::string& label = tree_.label(index);
    // The counts in the tooltip and details line come from data-n and data-self (the script
    // writes them): a frame costs ~130 bytes, and big profiles draw tens of thousands.
    out_ += fmt::format("<g{} data-s=\"{}\" data-n=\"{}\"", root ? " class=\"root\"" : "", start,
                        node.total);
    if (node.self > 0) out_ += fmt::format(" data-self=\"{}\"", node.self);
    out_ += fmt::format(
        "><title>{}</title><rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" "
        "fill=\"{}\"/>",
        xml_text(label), x, y, w, kFrameHeight, color(label, node.cls, root));
    // Too narrow for a name: no <text> (the script adds one when a zoom widens the frame).
    std::string fit = fitted(label, w);
    if (!fit.empty())
      out_ +=
          fmt::format("<text x=\"{:.2f}\" y=\"{:.0f}\">{}</text>", x + 3, y + 12, xml_text(fit));
    out_ += "</g>\n";
    present_[static_cast<size_t>(node.cls)] |= !root;
    for (uint32_t child : tree_.children(index)) {
      frames(child, depth + 1, start, base_y);
      start += tree_.nodes[child].total;
    }
  }

  size_t dropped() const { return dropped_; }
  bool present(FrameClass cls) const { return present_[static_cast<size_t>(cls)]; }

 private:
  uint64_t total() const { return tree_.nodes[0].total; }
  double width(uint32_t index) const {
    return static_cast<double>(tree_.nodes[index].total) / static_cast<double>(total()) * kFull;
  }

  const FlameTree& tree_;
  std::string& out_;
  std::vector<size_t> subtree_;
  size_t dropped_ = 0;
  bool present_[6] = {};
};

FlameTree flame_tree(const Profile& profile) {
  FlameTree tree;
  std::vector<std::pair<uint32_t, FrameClass>> path;
  for (const auto& sample : profile.samples) {
    if (sample.count == 0) continue;
    path.clear();
    path.emplace_back(tree.intern(process_label(sample)), FrameClass::Process);
    for (const auto& f : root_first_frames(profile, sample))
      path.emplace_back(tree.intern(f.label), f.cls);
    tree.add(path, sample.count);
  }
  tree.finish();
  return tree;
}

}  // namespace

Result<void> write_svg(const Profile& profile, std::FILE* out, const ProfileSinkOptions& options) {
  FlameTree tree = flame_tree(profile);
  uint64_t total = tree.nodes[0].total;

  // Frames first, to learn the height; the root's row is at the bottom.
  std::string body;
  SvgWriter writer(tree, body);
  double height = kTop + kBottom + 2 * kFrameStep;
  if (total > 0) {
    uint32_t depth = writer.drawn_depth();
    height = kTop + (depth + 1) * kFrameStep + kBottom;
    writer.frames(0, 0, 0, kTop + depth * kFrameStep);
  }

  std::string title = options.title.empty() ? "CPU flame graph" : options.title;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
      "<svg version=\"1.1\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" "
      "xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<!-- uscope profile: a flame graph. Click a frame to zoom, Ctrl+F or Search to find "
      "functions, Esc to reset. -->\n"
      "<defs><linearGradient id=\"bg\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
      "<stop stop-color=\"#f8f8f8\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" offset=\"95%\"/>"
      "</linearGradient></defs>\n"
      "<style>{2}</style>\n"
      "<script><![CDATA[\nvar PAD = {3}, FULL = {4}, ROW = {12}, TOTAL = {5}, CHARW = {6}, DROPPED "
      "= {7}, TIME = {13}, BYTES = {14};\n"
      "{8}]]></script>\n"
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"url(#bg)\"/>\n"
      "<text id=\"title\" x=\"{9:.0f}\" y=\"24\">{10}</text>\n"
      "<text id=\"subtitle\" x=\"{9:.0f}\" y=\"44\">{11}</text>\n",
      kWidth, height, kFlameGraphStyle, kPad, kFull, total, kCharWidth, writer.dropped(),
      kFlameGraphScript, kWidth / 2, xml_text(title), xml_text(profile_summary(profile)),
      kFrameStep, profile.counts_time() ? "true" : "false",
      profile.counts_bytes() ? "true" : "false");

  // Controls and legend on one row above the frames.
  double row = kTop - 14;
  svg += fmt::format(
      "<text id=\"unzoom\" class=\"button hide\" x=\"{:.0f}\" y=\"{:.0f}\">Reset Zoom</text>\n"
      "<text id=\"search\" class=\"button\" x=\"{:.0f}\" y=\"{:.0f}\">Search</text>\n",
      kPad, row, kWidth - kPad, row);
  double lx = 120;
  for (const auto& entry : kLegend) {
    if (!writer.present(entry.cls)) continue;
    svg += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        lx, row - 10, color(entry.name, entry.cls, false), lx + 16, row, entry.name);
    lx += 30 + 7.5 * std::strlen(entry.name);
  }
  if (writer.dropped() > 0)
    svg += fmt::format(
        "<text class=\"note\" x=\"{:.0f}\" y=\"{:.0f}\">{} frames narrower than 0.1 px not "
        "drawn</text>\n",
        kWidth - kPad - 110, row, grouped(writer.dropped()));
  if (total == 0)
    svg += fmt::format("<text class=\"empty\" x=\"{:.0f}\" y=\"{:.0f}\">no samples</text>\n",
                       kWidth / 2, kTop + kFrameStep);
  svg += body;
  svg += fmt::format(
      "<text id=\"details\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n"
      "<text id=\"matched\" class=\"button\" x=\"{:.0f}\" y=\"{:.0f}\"> </text>\n</svg>\n",
      kPad, height - 12, total > 0 ? kHint : "", kWidth - kPad, height - 12);
  if (std::fwrite(svg.data(), 1, svg.size(), out) != svg.size())
    return fail_errno(errno, "writing the flame graph failed: {}", std::strerror(errno));
  return {};
}

}  // namespace uscope
