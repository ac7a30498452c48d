// The agent's continuous profiles end to end without a kernel: two cumulative snapshots in, each
// period's per-process profiles pushed to a Pyroscope stand-in (libmicrohttpd decodes the
// multipart body) and written to a directory, the pprof decoded and read by `go tool pprof`.
#include "export/profile_export.h"
#include "model/profile_period.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pprof_decode.h"
#include "profile_fixture.h"
#include "pyroscope_receiver.h"
#include "temp_dir.h"
#include "tool_output.h"

namespace uscope {
namespace {

using test::sample_profile;
using ::testing::HasSubstr;

ProfileSource source_of(pid_t pid, const std::string& comm) {
  return {pid == 42 ? "app-svc" : "",
          {{"process", comm}, {"pid", std::to_string(pid)}, {"host", "node-1"}}};
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Two periods of one session, 10 s each: the second holds 7 samples of app's syscall stack and 3
// of worker's recursion.
std::pair<Profile, Profile> two_periods() {
  Profile first = sample_profile();
  first.duration_ns = 10'000'000'000;
  const size_t added[] = {0, 3};
  Profile second = profile_subset(first, added);
  second.samples[0].count = 7;
  second.samples[1].count = 3;
  second.start_unix_ns = first.start_unix_ns + first.duration_ns;
  second.losses = {{"user_stack_failed", 5}, {"stack_collided", 0}};
  return {first, second};
}

TEST(profile_export, pushes_and_writes_each_process_of_each_period) {
  test::PyroscopeReceiver rx;
  test::TempDir dir;
  auto e = ProfileExport::open({rx.url(), dir.str() + "/profiles"}, source_of);
  ASSERT_TRUE(e) << e.error().message;
  auto [first, second] = two_periods();
  ASSERT_TRUE((*e)->export_period(first));
  ASSERT_TRUE((*e)->export_period(second));
  (*e)->drain();
  EXPECT_EQ((*e)->push_counters().sent, 4u);
  EXPECT_EQ((*e)->push_counters().failed, 0u) << (*e)->push_counters().last_error;
  EXPECT_EQ((*e)->counters().periods, 2u);
  EXPECT_EQ((*e)->counters().profiles, 4u);
  EXPECT_EQ((*e)->counters().files_written, 4u);

  const std::vector<test::Ingest> pushes = rx.received();
  ASSERT_EQ(pushes.size(), 4u);
  // Period 1 [1700000000, 1700000010): app (42) and worker (43), everything so far.
  // Period 2 [1700000010, 1700000020): only what it added.
  const int64_t t0 = 1'700'000'000;
  struct Want {
    std::string name;
    int64_t from;
    std::map<std::string, int64_t> stacks;
  };
  const std::vector<Want> want = {
      {"app-svc{service_name=app-svc,process=app,pid=42,host=node-1}",
       t0,
       {{"_start;main;outer;inner;do_syscall_64", 5},
        {"_start;main;outer;inner", 3},
        {"[unknown: no symbols in libfoo.so];Interpreter", 2}}},
      {"worker{service_name=worker,process=worker,pid=43,host=node-1}",
       t0,
       {{"_start;main;recurse;recurse;recurse", 1},
        {"_start;main;std::vector<int>::push_back(int&&)", 1}}},
      {"app-svc{service_name=app-svc,process=app,pid=42,host=node-1}",
       t0 + 10,
       {{"_start;main;outer;inner;do_syscall_64", 7}}},
      {"worker{service_name=worker,process=worker,pid=43,host=node-1}",
       t0 + 10,
       {{"_start;main;recurse;recurse;recurse", 3}}},
  };
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const test::Ingest& in = pushes[i];
    EXPECT_EQ(in.path, "/ingest");
    EXPECT_THAT(in.content_type, HasSubstr("multipart/form-data"));
    EXPECT_EQ(in.query.at("name"), want[i].name);
    EXPECT_EQ(in.query.at("from"), std::to_string(want[i].from));
    EXPECT_EQ(in.query.at("until"), std::to_string(want[i].from + 10));
    EXPECT_EQ(in.query.at("sampleRate"), "49");
    EXPECT_EQ(in.query.at("spyName"), "uscope");
    EXPECT_EQ(in.query.at("format"), "pprof");
    ASSERT_TRUE(in.parts.contains("profile"));
    EXPECT_EQ(in.filenames.at("profile"), "profile.pprof");
    const perftools::profiles::Profile p = test::pprof_decoded(in.parts.at("profile"));
    EXPECT_EQ(test::pprof_stacks(p), want[i].stacks);
    EXPECT_EQ(p.time_nanos(), want[i].from * 1'000'000'000);
    EXPECT_EQ(p.duration_nanos(), 10'000'000'000);

    // The same bytes in the directory, 0640, named service-pid-from.
    const pid_t pid = i % 2 == 0 ? 42 : 43;
    const auto file =
        std::filesystem::path(dir.str()) / "profiles" /
        fmt::format("{}-{}-{}.pb.gz", pid == 42 ? "app-svc" : "worker", pid, want[i].from);
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(file_bytes(file), in.parts.at("profile"));
    struct stat st {};
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
  }
  // Nothing but those four files.
  size_t files = 0;
  for ([[maybe_unused]] const auto& f :
       std::filesystem::directory_iterator(std::filesystem::path(dir.str()) / "profiles"))
    ++files;
  EXPECT_EQ(files, 4u);
  struct stat st {};
  ASSERT_EQ(stat((dir.str() + "/profiles").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);

  // The consumer people use reads what was pushed: Debian's golang-go's pprof.
  const std::string saved = dir.str() + "/pushed.pb.gz";
  std::ofstream(saved, std::ios::binary) << pushes[2].parts.at("profile");
  const std::string raw =
      test::command_output("cd " + dir.str() + " && HOME=" + dir.str() + " GOCACHE=" + dir.str() +
                           "/gocache go tool pprof -raw " + saved + " 2>&1");
  EXPECT_THAT(raw, HasSubstr("PeriodType: cpu nanoseconds")) << raw;
  for (const char* f : {"do_syscall_64", "inner", "outer", "main", "_start"})
    EXPECT_THAT(raw, HasSubstr(f)) << raw;
  EXPECT_THAT(raw, ::testing::Not(HasSubstr("recurse"))) << raw;
  const std::string top =
      test::command_output("cd " + dir.str() + " && HOME=" + dir.str() + " GOCACHE=" + dir.str() +
                           "/gocache go tool pprof -top -sample_index=samples " + saved + " 2>&1");
  EXPECT_THAT(top, ::testing::ContainsRegex("\\b7 +100% +100% +7 +100% +do_syscall_64")) << top;
}

TEST(profile_export, caps_stacks_per_period_and_counts_what_it_cut) {
  test::TempDir dir;
  ProfileExportOptions o;
  o.directory = dir.str();
  o.max_stacks = 2;
  auto e = ProfileExport::open(o, source_of);
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_TRUE((*e)->export_period(sample_profile()));
  EXPECT_EQ((*e)->counters().stacks_dropped, 3u);
  EXPECT_EQ((*e)->counters().samples_dropped, 4u);
  EXPECT_EQ((*e)->counters().profiles, 1u);  // worker's stacks were the ones cut
  const auto file = std::filesystem::path(dir.str()) / "app-svc-42-1700000000.pb.gz";
  EXPECT_EQ(test::pprof_stacks(test::pprof_decoded(file_bytes(file))),
            (std::map<std::string, int64_t>{{"_start;main;outer;inner;do_syscall_64", 5},
                                            {"_start;main;outer;inner", 3}}));
  EXPECT_EQ((*e)->push_counters().sent, 0u);  // no push URL: nothing pushed
}

TEST(profile_export, writes_only_new_files_inside_its_directory) {
  EXPECT_EQ(profile_file_name("../../etc/passwd", 7, 1), "_._.._etc_passwd-7-1.pb.gz");
  EXPECT_EQ(profile_file_name("redis-server", 7, 1), "redis-server-7-1.pb.gz");
  EXPECT_EQ(profile_file_name("", 7, 1), "unknown-7-1.pb.gz");

  test::TempDir dir;
  // A link planted where a profile will go is neither followed nor replaced.
  const std::string target = dir.str() + "/elsewhere";
  std::ofstream(target) << "keep";
  std::filesystem::create_directory(dir.str() + "/p");
  std::filesystem::create_symlink(target, dir.str() + "/p/app-svc-42-1700000000.pb.gz");
  auto e = ProfileExport::open({"", dir.str() + "/p"}, source_of);
  ASSERT_TRUE(e) << e.error().message;
  auto r = (*e)->export_period(sample_profile());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("cannot write " + dir.str() + "/p/app-svc-42-"));
  EXPECT_EQ(file_bytes(target), "keep");
  EXPECT_EQ((*e)->counters().files_failed, 1u);
  EXPECT_EQ((*e)->counters().files_written, 1u);  // worker's, beside it
  EXPECT_TRUE(std::filesystem::exists(dir.str() + "/p/worker-43-1700000000.pb.gz"));
}

TEST(profile_export, refuses_what_it_cannot_push_to_or_write_into) {
  auto url = ProfileExport::open({"file:///etc/passwd", ""}, source_of);
  ASSERT_FALSE(url);
  EXPECT_THAT(url.error().message, HasSubstr("http:// or https:// only"));
  test::TempDir dir;
  auto parent = ProfileExport::open({"", dir.str() + "/no/such"}, source_of);
  ASSERT_FALSE(parent);
  EXPECT_THAT(parent.error().message,
              HasSubstr("cannot make the profile directory " + dir.str() + "/no/such"));
  std::ofstream(dir.str() + "/file") << "x";
  auto file = ProfileExport::open({"", dir.str() + "/file"}, source_of);
  ASSERT_FALSE(file);
  EXPECT_THAT(file.error().message, HasSubstr("cannot open the profile directory"));
}

}  // namespace
}  // namespace uscope
