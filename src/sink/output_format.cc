#include "sink/output_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "util/output_closed.h"

namespace uscope {

namespace {

struct Named {
  OutputFormat format;
  std::string_view name;
};
constexpr std::array<Named, 6> kNames{{{OutputFormat::Text, "text"},
                                       {OutputFormat::Json, "json"},
                                       {OutputFormat::Folded, "folded"},
                                       {OutputFormat::Pprof, "pprof"},
                                       {OutputFormat::Svg, "svg"},
                                       {OutputFormat::Speedscope, "speedscope"}}};

// Longest suffixes first, so that ".speedscope.json" wins over ".json".
struct Extension {
  std::string_view suffix;
  OutputFormat format;
};
constexpr std::array<Extension, 11> kExtensions{{{".speedscope.json", OutputFormat::Speedscope},
                                                 {".pb.gz", OutputFormat::Pprof},
                                                 {".pprof", OutputFormat::Pprof},
                                                 {".pb", OutputFormat::Pprof},
                                                 {".folded", OutputFormat::Folded},
                                                 {".collapsed", OutputFormat::Folded},
                                                 {".svg", OutputFormat::Svg},
                                                 {".jsonl", OutputFormat::Json},
                                                 {".json", OutputFormat::Json},
                                                 {".txt", OutputFormat::Text},
                                                 {".log", OutputFormat::Text}}};

std::string names_of(std::span<const OutputFormat> formats) {
  std::string out;
  for (OutputFormat f : formats) {
    if (!out.empty()) out += ", ";
    out += format_name(f);
  }
  return out;
}

// The extension -o should have for `f` (".txt" for text: format_name is not always one).
std::string_view extension_of(OutputFormat f) {
  for (const auto& e : kExtensions)
    if (e.format == f) return e.suffix;
  return "";
}

}  // namespace

std::string_view format_name(OutputFormat f) {
  for (const auto& n : kNames)
    if (n.format == f) return n.name;
  return "?";
}

std::optional<OutputFormat> parse_format_name(std::string_view name) {
  for (const auto& n : kNames)
    if (n.name == name) return n.format;
  return std::nullopt;
}

std::optional<OutputFormat> format_of_path(std::string_view path) {
  for (const auto& e : kExtensions)
    if (path.size() > e.suffix.size() && path.ends_with(e.suffix)) return e.format;
  return std::nullopt;
}

Result<OutputFormat> choose_format(std::string_view format_flag, std::string_view output_path,
                                   std::span<const OutputFormat> allowed, OutputFormat fallback) {
  auto is_allowed = [&](OutputFormat f) {
    for (OutputFormat a : allowed)
      if (a == f) return true;
    return false;
  };
  std::optional<OutputFormat> by_path;
  if (!output_path.empty()) by_path = format_of_path(output_path);
  if (!format_flag.empty()) {
    auto f = parse_format_name(format_flag);
    if (!f) return fail("unknown format '{}': use one of {}", format_flag, names_of(allowed));
    if (!is_allowed(*f))
      return fail("this command does not write {}: use one of {}", format_flag, names_of(allowed));
    if (by_path && *by_path != *f && is_allowed(*by_path))
      return fail("--format {} but -o {} names {}: drop one of them", format_flag, output_path,
                  format_name(*by_path));
    return *f;
  }
  if (!output_path.empty()) {
    if (!by_path)
      return fail("cannot tell the format from -o {}: add --format ({}), or name the file *{}",
                  output_path, names_of(allowed), extension_of(fallback));
    if (!is_allowed(*by_path))
      return fail("this command does not write {} (-o {}): use one of {}", format_name(*by_path),
                  output_path, names_of(allowed));
    return *by_path;
  }
  return fallback;
}

Result<OutputFile> OutputFile::open(const std::string& path, mode_t mode) {
  if (path.empty() || path == "-") return OutputFile(stdout, "");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return fail_errno(errno, "cannot write {}: {}", path, std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "w");
  if (f == nullptr) {
    int e = errno;
    ::close(fd);
    return fail_errno(e, "cannot write {}: {}", path, std::strerror(e));
  }
  return OutputFile(f, path);
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : file_(std::exchange(o.file_, nullptr)), path_(std::move(o.path_)) {}

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
  if (this != &o) {
    if (file_ != nullptr && file_ != stdout) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
    path_ = std::move(o.path_);
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

Result<void> OutputFile::close() {
  if (file_ == nullptr) return {};
  std::FILE* f = std::exchange(file_, nullptr);
  bool failed = std::fflush(f) != 0 || std::ferror(f) != 0;
  int e = errno;
  if (f != stdout && std::fclose(f) != 0 && !failed) {
    failed = true;
    e = errno;
  }
  if (failed) throw_if_output_closed(e);
  if (failed)
    return fail_errno(e, "writing {} failed: {}", path_.empty() ? "stdout" : path_,
                      std::strerror(e));
  return {};
}

Result<void> replace_file(const std::string& path, mode_t mode,
                          const std::function<Result<void>(std::FILE*)>& write) {
  std::string tmp = path + ".tmp";
  auto out = OutputFile::open(tmp, mode);
  if (!out) return tl::unexpected(out.error());
  auto written = write(out->get());
  auto closed = out->close();
  if (!written || !closed) {
    ::unlink(tmp.c_str());
    return tl::unexpected(!written ? written.error() : closed.error());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return fail_errno(e, "cannot replace {}: {}", path, std::strerror(e));
  }
  return {};
}

}  // namespace uscope
