// The JVM's USDT probes for real: openjdk-17's libjvm.so is dlopen()ed by the java launcher after
// uscope attached by path (-c), and hotspot:thread__start gives each thread's name as a
// pointer + length pair.
#include <gtest/gtest.h>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(jvm, thread_start_probe_names_every_jvm_thread) {
  USCOPE_REQUIRE_ROOT();
  const std::string libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";
  auto r = uscope({"trace", "-c", "java -version",
                   "u:" + libjvm + ":hotspot:thread__start \"%s\", str(arg1, arg2)"},
                  120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("thread__start    Reference Handler"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Signal Dispatcher"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("C2 CompilerThread0"), std::string::npos) << r.out;
  EXPECT_EQ(summary_count(r.err, " lost"), 0) << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
