#include "sink/profile_sink.h"

#include <array>
#include <cerrno>
#include <cstring>

#include "sink/profile_writers.h"
#include "util/output_closed.h"

namespace uscope {

std::span<const OutputFormat> profile_formats() {
  static constexpr std::array<OutputFormat, 5> kFormats{OutputFormat::Text, OutputFormat::Folded,
                                                        OutputFormat::Pprof, OutputFormat::Svg,
                                                        OutputFormat::Speedscope};
  return kFormats;
}

Result<void> write_profile(const Profile& profile, OutputFormat format, std::FILE* out,
                           const ProfileSinkOptions& options) {
  Result<void> written;
  switch (format) {
    case OutputFormat::Text:
      written = write_top(profile, out, options);
      break;
    case OutputFormat::Folded:
      written = write_folded(profile, out);
      break;
    case OutputFormat::Pprof:
      written = write_pprof(profile, out);
      break;
    case OutputFormat::Svg:
      written = write_svg(profile, out, options);
      break;
    case OutputFormat::Speedscope:
      written = write_speedscope(profile, out, options);
      break;
    default:
      return fail(
          "a profile cannot be written as {}: use one of text, folded, pprof, svg, "
          "speedscope",
          format_name(format));
  }
  if (!written) throw_if_output_closed(written.error().errnum);
  if (!written) return written;
  if (std::fflush(out) != 0 || std::ferror(out) != 0) {
    int e = errno;
    throw_if_output_closed(e);
    return fail_errno(e, "writing the profile failed: {}", std::strerror(e));
  }
  return {};
}

}  // namespace uscope
