// A self-contained interactive flame graph: one SVG with its style and script inline (no fonts,
// images or scripts fetched), so that it opens from disk in any browser, offline. Hand-written:
// Brendan Gregg's flamegraph.pl (Perl, not packaged by Debian) defined the behaviour people
// expect (click to zoom, search with the matched share, a details line), not the code.
//
// The root ("all") is at the bottom, each process above it, then its frames root first; identical
// frames on one path merge, siblings are sorted by name so that two profiles compare. Frames
// narrower than 0.1 px are left out (with their callees) and counted in the header, which keeps
// the file small for big profiles. Each frame is <g data-s data-n> (its first sample and its
// samples) holding a <title> (the tooltip), a <rect> and its name truncated to fit; the script
// re-lays frames out from data-s/data-n when zooming.
#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <map>

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
// Average advance of a 12 px sans-serif character (DejaVu Sans is among the widest): what fits.
constexpr double kCharWidth = 7.2;

struct FlameNode {
  FlameNode(std::string l, FrameClass c) : label(std::move(l)), cls(c) {}
  std::string label;
  FrameClass cls = FrameClass::User;
  uint64_t total = 0, self = 0;
  std::map<std::string, uint32_t> children;  // by label: sorted siblings
};

struct FlameTree {
  std::vector<FlameNode> nodes{FlameNode{"all", FrameClass::Process}};

  void add(const std::vector<std::pair<std::string, FrameClass>>& path, uint64_t count) {
    uint32_t at = 0;
    nodes[0].total += count;
    for (const auto& [label, cls] : path) {
      auto [it, added] = nodes[at].children.try_emplace(label, uint32_t(nodes.size()));
      if (added) nodes.push_back(FlameNode{label, cls});
      at = it->second;
      nodes[at].total += count;
    }
    nodes[at].self += count;
  }
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

// Colors by kind, shaded by the name's hash so that neighbours differ and a function keeps its
// color from one profile to the next.
std::string color(const FlameNode& node, bool root) {
  uint32_t h = 2166136261u;
  for (char c : node.label) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  double v1 = (h & 0xffff) / 65535.0, v2 = (h >> 16) / 65535.0;
  auto hsl = [](double hue, double sat, double light) {
    return fmt::format("hsl({:.0f},{:.0f}%,{:.0f}%)", hue, sat, light);
  };
  if (root) return "hsl(0,0%,80%)";
  switch (node.cls) {
    case FrameClass::Process:
      return hsl(265 + 20 * v1, 45, 72 + 6 * v2);
    case FrameClass::User:
      return hsl(5 + 45 * v1, 85, 58 + 8 * v2);
    case FrameClass::Inlined:
      return hsl(175 + 15 * v1, 60, 58 + 8 * v2);
    case FrameClass::Kernel:
      return hsl(205 + 20 * v1, 65, 65 + 8 * v2);
    case FrameClass::Jit:
      return hsl(95 + 35 * v1, 55, 55 + 8 * v2);
    case FrameClass::Unknown:
      return hsl(0, 0, 70 + 10 * v2);
  }
  return "gray";
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
  SvgWriter(const FlameTree& tree, std::string& out) : tree_(tree), out_(out) {}

  // `node`'s frame and its callees', at `depth` rows above the root (drawn at `base_y`), from
  // sample `start`.
  void frames(uint32_t index, uint32_t depth, uint64_t start, double base_y) {
    const FlameNode& node = tree_.nodes[index];
    double width = static_cast<double>(node.total) / static_cast<double>(total()) * kFull;
    if (width < kMinWidth) {
      dropped_ += subtree_size(index);
      return;
    }
    double x = kPad + static_cast<double>(start) / static_cast<double>(total()) * kFull;
    double y = base_y - depth * kFrameStep;
    bool root = index == 0;
    std::string label = xml_text(node.label);
    out_ += fmt::format(
        "<g class=\"f{}\" data-s=\"{}\" data-n=\"{}\"><title>{}\n{} samples, {}\nself: {} samples, "
        "{}</title><rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" "
        "fill=\"{}\" rx=\"2\"/><text x=\"{:.2f}\" y=\"{:.1f}\">{}</text></g>\n",
        root ? " root" : "", start, node.total, label, grouped(node.total), share(node.total),
        grouped(node.self), share(node.self), x, y, width, kFrameHeight, color(node, root), x + 3,
        y + 12, xml_text(fitted(node.label, width)));
    present_[static_cast<size_t>(node.cls)] |= !root;
    for (const auto& [name, child] : node.children) {
      frames(child, depth + 1, start, base_y);
      start += tree_.nodes[child].total;
    }
  }

  size_t dropped() const { return dropped_; }
  bool present(FrameClass cls) const { return present_[static_cast<size_t>(cls)]; }

 private:
  uint64_t total() const { return tree_.nodes[0].total; }
  std::string share(uint64_t n) const {
    return fmt::format("{:.2f}%", 100.0 * static_cast<double>(n) / static_cast<double>(total()));
  }
  size_t subtree_size(uint32_t index) const {
    size_t n = 1;
    for (const auto& [name, child] : tree_.nodes[index].children) n += subtree_size(child);
    return n;
  }

  const FlameTree& tree_;
  std::string& out_;
  size_t dropped_ = 0;
  bool present_[6] = {};
};

// How many rows above the root the frames wide enough to draw reach.
uint32_t drawn_depth(const FlameTree& tree, uint32_t index) {
  uint32_t depth = 0;
  for (const auto& [name, child] : tree.nodes[index].children)
    if (static_cast<double>(tree.nodes[child].total) / static_cast<double>(tree.nodes[0].total) *
            kFull >=
        kMinWidth)
      depth = std::max(depth, 1 + drawn_depth(tree, child));
  return depth;
}

FlameTree flame_tree(const Profile& profile) {
  FlameTree tree;
  std::vector<std::pair<std::string, FrameClass>> path;
  for (const auto& sample : profile.samples) {
    if (sample.count == 0) continue;
    path.clear();
    path.emplace_back(process_label(sample), FrameClass::Process);
    for (auto& f : root_first_frames(profile, sample)) path.emplace_back(std::move(f.label), f.cls);
    tree.add(path, sample.count);
  }
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
    uint32_t depth = drawn_depth(tree, 0);
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
      "<script><![CDATA[\nvar PAD = {3}, FULL = {4}, TOTAL = {5}, CHARW = {6}, DROPPED = {7};\n"
      "{8}]]></script>\n"
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"url(#bg)\"/>\n"
      "<text id=\"title\" x=\"{9:.0f}\" y=\"24\">{10}</text>\n"
      "<text id=\"subtitle\" x=\"{9:.0f}\" y=\"44\">{11}</text>\n",
      kWidth, height, kFlameGraphStyle, kPad, kFull, total, kCharWidth, writer.dropped(),
      kFlameGraphScript, kWidth / 2, xml_text(title), xml_text(profile_summary(profile)));

  // Controls and legend on one row above the frames.
  double row = kTop - 14;
  svg += fmt::format(
      "<text id=\"unzoom\" class=\"button hide\" x=\"{:.0f}\" y=\"{:.0f}\">Reset Zoom</text>\n"
      "<text id=\"search\" class=\"button\" x=\"{:.0f}\" y=\"{:.0f}\">Search</text>\n",
      kPad, row, kWidth - kPad, row);
  double lx = 120;
  for (const auto& entry : kLegend) {
    if (!writer.present(entry.cls)) continue;
    FlameNode sample{entry.name, entry.cls};
    svg += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" rx=\"2\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        lx, row - 10, color(sample, false), lx + 16, row, entry.name);
    lx += 30 + 7.5 * std::strlen(entry.name);
  }
  if (writer.dropped() > 0)
    svg += fmt::format(
        "<text class=\"note\" x=\"{:.0f}\" y=\"{:.0f}\">{} frames narrower than 0.1 px not "
        "drawn</text>\n",
        kWidth - kPad - 70, row, grouped(writer.dropped()));
  if (total == 0)
    svg += fmt::format("<text class=\"empty\" x=\"{:.0f}\" y=\"{:.0f}\">no samples</text>\n",
                       kWidth / 2, kTop + kFrameStep);
  svg += body;
  svg += fmt::format(
      "<text id=\"details\" x=\"{:.0f}\" y=\"{:.0f}\"> </text>\n"
      "<text id=\"matched\" class=\"button\" x=\"{:.0f}\" y=\"{:.0f}\"> </text>\n</svg>\n",
      kPad, height - 12, kWidth - kPad, height - 12);
  if (std::fwrite(svg.data(), 1, svg.size(), out) != svg.size())
    return fail_errno(errno, "writing the flame graph failed: {}", std::strerror(errno));
  return {};
}

}  // namespace uscope
