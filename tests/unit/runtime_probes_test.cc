// The runtime descriptions (plan/runtime.h) and gc's pairing model: each runtime's probes are the
// ones its Debian build carries (readelf -n is the other reader), its files are told by name, and
// collections pair up per thread and phase with every unpaired probe counted.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "bpf/trace.h"
#include "model/runtime_gc.h"
#include "plan/keyed_plan.h"
#include "plan/runtime.h"
#include "sink/runtime_stat_output.h"
#include "util/output_buffer.h"

namespace uscope {
namespace {

// "provider:name" of every stapsdt note readelf -n prints for `path` (each location once in
// `locations`, when given).
std::set<std::string> readelf_probes(const std::string& path,
                                     std::map<std::string, int>* locations = nullptr) {
  std::set<std::string> out;
  std::string cmd = "readelf -n --wide '" + path + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char line[4096];
  std::string provider;
  while (fgets(line, sizeof line, p)) {
    std::string l(line);
    if (auto at = l.find("Provider: "); at != std::string::npos) {
      provider = l.substr(at + 10);
      provider.erase(provider.find_last_not_of(" \n") + 1);
    } else if (auto n = l.find("Name: "); n != std::string::npos && !provider.empty()) {
      std::string name = l.substr(n + 6);
      name.erase(name.find_last_not_of(" \n") + 1);
      out.insert(provider + ":" + name);
      if (locations) ++(*locations)[provider + ":" + name];
      provider.clear();
    }
  }
  pclose(p);
  return out;
}

struct Carrier {
  const Runtime& runtime;
  std::string path;  // Debian's file that carries its probes
};

TEST(runtime_probes, every_probe_named_is_in_the_debian_build) {
  const Carrier carriers[] = {
      {java_runtime(), "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"},
      {python_runtime(), "/usr/bin/python3.11"},
      {ruby_runtime(), "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"},
      {php_runtime(), "/usr/bin/php8.2"},
  };
  for (const auto& c : carriers) {
    const auto notes = readelf_probes(c.path);
    ASSERT_FALSE(notes.empty()) << c.path << ": readelf shows no stapsdt note";
    EXPECT_TRUE(c.runtime.carries_probes(c.path.substr(c.path.rfind('/') + 1))) << c.path;
    for (const RuntimeProbe& p : c.runtime.probes) {
      EXPECT_EQ(p.provider, c.runtime.provider);
      EXPECT_TRUE(notes.contains(std::string(p.provider) + ":" + std::string(p.name)))
          << c.path << " has no " << p.provider << ":" << p.name;
    }
  }
}

TEST(runtime_probes, runtimes_are_told_by_their_files_names) {
  const std::string files[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6",
                               "/usr/bin/ruby3.1",
                               "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1",
                               "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
                               "/usr/bin/python3.11d",
                               "/usr/bin/python3-config",
                               "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
                               "/usr/sbin/php-fpm8.2"};
  using V = std::vector<std::string>;
  EXPECT_EQ(runtime_carriers(ruby_runtime(), files),
            (V{"/usr/bin/ruby3.1", "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"}));
  EXPECT_EQ(runtime_carriers(python_runtime(), files),
            (V{"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "/usr/bin/python3.11d"}));
  EXPECT_EQ(runtime_carriers(java_runtime(), files),
            (V{"/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"}));
  EXPECT_EQ(runtime_carriers(php_runtime(), files), (V{"/usr/sbin/php-fpm8.2"}));
  // Detection's order: a process that maps several runtimes' files is taken as the first's.
  ASSERT_EQ(runtimes().size(), 4u);
  EXPECT_EQ(runtimes()[0]->name, "java");
}

TEST(runtime_probes, only_the_probes_that_slow_every_call_are_per_call) {
  for (const Runtime* r : runtimes())
    for (const RuntimeProbe& p : r->probes) {
      const bool every_call = p.event == RuntimeEvent::MethodEntry ||
                              p.event == RuntimeEvent::MethodReturn ||
                              p.event == RuntimeEvent::ObjectNew;
      if (every_call) {
        EXPECT_TRUE(p.per_call) << r->name << " " << p.name;
      }
      if (p.event == RuntimeEvent::GcBegin || p.event == RuntimeEvent::GcEnd) {
        EXPECT_FALSE(p.per_call) << r->name << " " << p.name;
      }
    }
}

TEST(runtime_probes, every_call_and_object_probe_names_what_it_counts) {
  for (const Runtime* r : runtimes())
    for (const RuntimeProbe& p : r->probes) {
      if (p.event != RuntimeEvent::MethodEntry && p.event != RuntimeEvent::MethodReturn &&
          p.event != RuntimeEvent::ObjectNew)
        continue;
      auto keys = parse_aggregate_keys(p.key, ProbeKind::Usdt);
      ASSERT_TRUE(keys) << r->name << " " << p.name << ": " << keys.error().message;
      for (const AggregateKey& k : *keys)
        EXPECT_EQ(k.kind, AggregateKey::Kind::String) << r->name << " " << p.name << " " << k.name;
    }
  const std::vector<std::string> java{"java/lang/String", "hashCode"};
  EXPECT_EQ(runtime_name(java_runtime(), java), "java/lang/String.hashCode");
  const std::vector<std::string> php_method{"Widget", "::", "work"}, php_function{"", "", "f"};
  EXPECT_EQ(runtime_name(php_runtime(), php_method), "Widget::work");
  EXPECT_EQ(runtime_name(php_runtime(), php_function), "f");
  const std::vector<std::string> ruby{"Integer", "times"};
  EXPECT_EQ(runtime_name(ruby_runtime(), ruby), "Integer#times");
}

// calls -L on Ruby: a site per location of its method and C-method return probes (readelf -n
// counts them), each taking the call its thread entered last and timing it into one table, then
// a site per entry location that records the call: the returns first, so that they are in
// before any call is recorded.
TEST(runtime_tally, timed_calls_pair_returns_by_depth_and_attach_them_first) {
  const std::string libruby = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";
  std::map<std::string, int> locations;
  readelf_probes(libruby, &locations);
  TargetContext ctx{nullptr, libruby, 0};
  ObjectCache cache(ctx);
  auto plan = plan_runtime_tally(cache, ctx, "ruby", RuntimeTally::TimedCalls, "calls");
  ASSERT_TRUE(plan) << plan.error().message;
  const int returns = locations["ruby:method__return"] + locations["ruby:cmethod__return"];
  const int entries = locations["ruby:method__entry"] + locations["ruby:cmethod__entry"];
  ASSERT_GT(returns, 0);
  ASSERT_EQ(plan->plan.sites.size(), static_cast<size_t>(returns + entries));
  ASSERT_EQ(plan->plan.slots.size(), 1u);
  for (size_t i = 0; i < plan->plan.sites.size(); ++i) {
    const PlannedSite& s = plan->plan.sites[i];
    const uscope_recipe& r = plan->plan.recipes[i];
    EXPECT_EQ(s.attach.cookie, i);
    EXPECT_TRUE(r.flags & TRACE_F_DEPTH) << i;
    if (i < static_cast<size_t>(returns)) {
      EXPECT_TRUE(s.label.ends_with("method__return")) << s.label;
      EXPECT_EQ(r.flags & (TRACE_F_RETURN | TRACE_F_AGGREGATE | TRACE_F_HISTOGRAM),
                TRACE_F_RETURN | TRACE_F_AGGREGATE | TRACE_F_HISTOGRAM);
      EXPECT_EQ(r.agg_slot, 0u);
    } else {
      EXPECT_TRUE(s.label.ends_with("method__entry")) << s.label;
      EXPECT_EQ(r.flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY | TRACE_F_DEPTH));
      EXPECT_EQ(s.role, SiteRole::LatencyEntry);
    }
  }
}

// Python 3.11's function__entry fires for almost no call: calls are counted where they return,
// and timing them is refused with what would work.
TEST(runtime_tally, python_calls_are_counted_at_their_returns) {
  TargetContext ctx{nullptr, "/usr/bin/python3.11", 0};
  ObjectCache cache(ctx);
  auto counted = plan_runtime_tally(cache, ctx, "", RuntimeTally::Calls, "calls");
  ASSERT_TRUE(counted) << counted.error().message;
  ASSERT_EQ(counted->probes.size(), 1u);
  EXPECT_EQ(counted->probes[0], "function__return");
  auto timed = plan_runtime_tally(cache, ctx, "", RuntimeTally::TimedCalls, "calls");
  ASSERT_FALSE(timed);
  EXPECT_NE(timed.error().message.find("uscope calls without -L counts every call (at "
                                       "function__return)"),
            std::string::npos)
      << timed.error().message;
  auto objects = plan_runtime_tally(cache, ctx, "", RuntimeTally::Objects, "objnew");
  ASSERT_FALSE(objects);
  EXPECT_NE(objects.error().message.find("mark no object creation"), std::string::npos);
}

TEST(runtime_gc, collections_pair_per_thread_and_phase) {
  GcPairing g;
  g.begin(1, 10, "", 100, "generation 2");
  g.begin(1, 11, "", 150, "generation 0");  // another thread's, meanwhile
  auto young = g.end(1, 11, "", 160, "3 collected");
  ASSERT_TRUE(young);
  EXPECT_EQ(young->kind, "generation 0");
  EXPECT_EQ(young->said, "3 collected");
  EXPECT_EQ(young->duration_ns(), 10u);
  auto old = g.end(1, 10, "", 400, "");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->duration_ns(), 300u);
  // Ruby's phases nest on one thread: a sweep inside a mark.
  g.begin(2, 20, "mark", 1000, "");
  g.begin(2, 20, "sweep", 1100, "");
  auto sweep = g.end(2, 20, "sweep", 1150, "");
  auto mark = g.end(2, 20, "mark", 1300, "");
  ASSERT_TRUE(sweep && mark);
  EXPECT_EQ(sweep->kind, "sweep");
  EXPECT_EQ(mark->duration_ns(), 300u);
  EXPECT_EQ(g.collections(), 4u);
  EXPECT_EQ(g.totals().at("generation 2").total_ns, 300u);
  EXPECT_EQ(g.totals().at("mark").max_ns, 300u);
}

TEST(runtime_gc, what_cannot_be_paired_is_counted_not_guessed) {
  GcPairing g;
  EXPECT_FALSE(g.end(1, 10, "", 50, ""));  // begun before the probes went in
  g.begin(1, 10, "", 100, "full");
  g.begin(1, 10, "", 200, "full");  // its end lost: replaced
  g.begin(1, 12, "", 300, "full");  // still running at the stop
  auto c = g.end(1, 10, "", 250, "");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->duration_ns(), 50u);
  EXPECT_EQ(g.unmatched_ends(), 1u);
  EXPECT_EQ(g.unmatched_begins(), 1u);
  EXPECT_EQ(g.open(), 1u);
  EXPECT_EQ(g.collections(), 1u);
}

// stat on Ruby: a collection is a mark phase; GC time is the time any phase is open on a thread,
// once (its sweeps nest in the mark, or run lazily after it).
TEST(runtime_stat, nested_phases_count_their_time_once) {
  const Runtime& ruby = ruby_runtime();
  RuntimePlan plan;
  plan.runtime = &ruby;
  for (size_t i = 0; i < 4; ++i) plan.probe_of.push_back(&ruby.probes[i]);
  ASSERT_EQ(ruby.probes[0].name, "gc__mark__begin");
  ASSERT_EQ(ruby.probes[3].name, "gc__sweep__end");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  {
    OutputBuffer out(fds[1]);
    RuntimeStatOutput stat(plan, OutputFormat::Json, out);
    stat.header();
    auto hit = [&](uint32_t probe, uint64_t ts) {
      DecodedEvent ev;
      ev.header.probe_id = probe;
      ev.header.tgid = 7;
      ev.header.tid = 7;
      ev.header.ts = ts;
      stat.event(ev, {});
    };
    hit(0, 100);  // mark
    hit(2, 150);  //   sweep inside it
    hit(3, 170);
    hit(1, 300);
    hit(2, 400);  // a lazy sweep after it
    hit(3, 450);
    hit(0, 500);  // a mark still open at the interval's end: not counted yet
    stat.interval();
    ASSERT_TRUE(out.flush_until(std::chrono::steady_clock::now() + std::chrono::seconds(1)));
  }
  close(fds[1]);
  char buf[4096];
  const ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  ASSERT_GT(n, 0);
  auto j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)));
  EXPECT_EQ(j["gc"], 1);
  EXPECT_EQ(j["gc_ns"], 250);
  // Columns of events the plan has no probe for are left out.
  EXPECT_FALSE(j.contains("exceptions"));
  EXPECT_FALSE(j.contains("threads_started"));
}

}  // namespace
}  // namespace uscope
