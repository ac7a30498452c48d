// pprof's profile.proto (Debian's golang-github-google-pprof-dev ships the schema; protoc
// compiles it), gzipped as `go tool pprof`, Pyroscope and Parca read it. Ids are the model's
// indices + 1; two sample values: samples/count and cpu/nanoseconds (count x the period the
// frequency implies). Labels pid, tid, comm and user_stack (complete, truncated, missing) allow
// `pprof -tagfocus`; the summary and every loss go into the comments.
#include <fmt/core.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include "profile.pb.h"
#include "sink/profile_pprof.h"
#include "sink/profile_writers.h"

namespace uscope {

namespace {

namespace pp = perftools::profiles;

class StringTable {
 public:
  explicit StringTable(pp::Profile& out) : out_(out) { index(""); }
  int64_t index(const std::string& s) {
    auto [it, added] = indices_.try_emplace(s, static_cast<int64_t>(indices_.size()));
    if (added) out_.add_string_table(s);
    return it->second;
  }

 private:
  pp::Profile& out_;
  std::unordered_map<std::string, int64_t> indices_;
};

void add_label(pp::Sample& sample, StringTable& strings, const std::string& key, int64_t num) {
  pp::Label* label = sample.add_label();
  label->set_key(strings.index(key));
  label->set_num(num);
}

void add_label(pp::Sample& sample, StringTable& strings, const std::string& key,
               const std::string& str) {
  pp::Label* label = sample.add_label();
  label->set_key(strings.index(key));
  label->set_str(strings.index(str));
}

pp::Profile to_proto(const Profile& profile) {
  pp::Profile out;
  StringTable strings(out);
  auto add_type = [&](pp::ValueType* t, const char* type, const char* unit) {
    t->set_type(strings.index(type));
    t->set_unit(strings.index(unit));
  };
  // A profile of time has one value, its nanoseconds (as Go's block profile has delay).
  const char* time_type = profile.measure == ProfileMeasure::OffCpuTime ? "off_cpu" : "wall";
  int64_t period =
      profile.frequency_hz == 0 ? 0 : static_cast<int64_t>(1'000'000'000 / profile.frequency_hz);
  if (profile.counts_bytes()) {
    // As Go's heap profile has its in-use values: blocks, then bytes.
    add_type(out.add_sample_type(), "inuse_objects", "count");
    add_type(out.add_sample_type(), "inuse_space", "bytes");
    add_type(out.mutable_period_type(), "space", "bytes");
    period = profile.sample_bytes ? static_cast<int64_t>(profile.sample_bytes) : 1;
  } else if (profile.counts_time()) {
    add_type(out.add_sample_type(), time_type, "nanoseconds");
    add_type(out.mutable_period_type(), time_type, "nanoseconds");
    period = 1;
  } else {
    add_type(out.add_sample_type(), "samples", "count");
    add_type(out.add_sample_type(), "cpu", "nanoseconds");
    add_type(out.mutable_period_type(), "cpu", "nanoseconds");
  }
  out.set_period(period);
  out.set_time_nanos(profile.start_unix_ns);
  out.set_duration_nanos(profile.duration_ns);

  std::vector<bool> inlined(profile.mappings.size());
  for (const auto& loc : profile.locations)
    if (loc.lines.size() > 1 && loc.mapping > 0 && loc.mapping <= inlined.size())
      inlined[loc.mapping - 1] = true;
  for (size_t i = 0; i < profile.mappings.size(); ++i) {
    const ProfileMapping& m = profile.mappings[i];
    pp::Mapping* pm = out.add_mapping();
    pm->set_id(i + 1);
    pm->set_memory_start(m.start);
    pm->set_memory_limit(m.limit);
    pm->set_file_offset(m.file_offset);
    pm->set_filename(strings.index(m.file));
    pm->set_build_id(strings.index(m.build_id));
    pm->set_has_functions(m.has_functions);
    pm->set_has_filenames(m.has_lines);
    pm->set_has_line_numbers(m.has_lines);
    pm->set_has_inline_frames(inlined[i]);
  }
  for (size_t i = 0; i < profile.functions.size(); ++i) {
    const ProfileFunction& f = profile.functions[i];
    pp::Function* pf = out.add_function();
    pf->set_id(i + 1);
    pf->set_name(strings.index(f.name));
    pf->set_system_name(strings.index(f.system_name.empty() ? f.name : f.system_name));
    pf->set_filename(strings.index(f.file));
  }
  for (size_t i = 0; i < profile.locations.size(); ++i) {
    const ProfileLocation& l = profile.locations[i];
    pp::Location* pl = out.add_location();
    pl->set_id(i + 1);
    if (l.mapping <= profile.mappings.size()) pl->set_mapping_id(l.mapping);
    pl->set_address(l.address);
    for (const auto& line : l.lines) {
      if (line.function >= profile.functions.size()) continue;
      pp::Line* pline = pl->add_line();
      pline->set_function_id(line.function + 1);
      pline->set_line(line.line);
    }
  }
  for (const auto& s : profile.samples) {
    if (s.count == 0) continue;
    pp::Sample* ps = out.add_sample();
    for (uint32_t loc : s.locations)
      if (loc < profile.locations.size()) ps->add_location_id(loc + 1);
    if (profile.counts_bytes()) ps->add_value(static_cast<int64_t>(s.blocks));
    ps->add_value(static_cast<int64_t>(s.count));
    if (!profile.counts_time() && !profile.counts_bytes())
      ps->add_value(static_cast<int64_t>(s.count) * period);
    add_label(*ps, strings, "pid", s.pid);
    if (s.tid != 0) add_label(*ps, strings, "tid", s.tid);
    if (!s.comm.empty()) add_label(*ps, strings, "comm", s.comm);
    if (profile.user_frames)
      add_label(*ps, strings, "user_stack",
                s.user_stack_missing ? "missing"
                : s.complete         ? "complete"
                                     : "truncated");
  }
  out.add_comment(strings.index("uscope profile: " + profile_summary(profile)));
  for (const auto& [cause, n] : profile.losses)
    out.add_comment(strings.index(fmt::format("lost {}: {}", cause, n)));
  return out;
}

// gzip (RFC 1952) of `data`.
Result<std::string> gzipped(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return fail("cannot compress the pprof profile: zlib would not start");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return fail("cannot compress the pprof profile: zlib failed ({})", rc);
  return out;
}

}  // namespace

Result<std::string> pprof_gzip(const Profile& profile) {
  std::string bytes;
  if (!to_proto(profile).SerializeToString(&bytes))
    return fail("cannot encode the pprof profile (over protobuf's 2 GB limit?)");
  return gzipped(bytes);
}

Result<void> write_pprof(const Profile& profile, std::FILE* out) {
  auto bytes = pprof_gzip(profile);
  if (!bytes) return tl::unexpected(bytes.error());
  if (std::fwrite(bytes->data(), 1, bytes->size(), out) != bytes->size()) {
    int e = errno;
    return fail_errno(e, "writing the pprof profile failed: {}", std::strerror(e));
  }
  return {};
}

}  // namespace uscope
