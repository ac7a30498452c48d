// The blog's Redis example for real: createStringObject(ptr, len) traced in a running
// redis-server while a client sends commands.
#include <gtest/gtest.h>
#include <signal.h>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(redis, create_string_object_shows_commands) {
  USCOPE_REQUIRE_ROOT();
  const int port = 16379;
  const std::string cli = "redis-cli -p " + std::to_string(port);
  GatedProcess server({"/usr/bin/redis-server", "--port", std::to_string(port), "--bind",
                       "127.0.0.1", "--save", "", "--appendonly", "no"});
  ASSERT_TRUE(wait_for_port(port)) << "redis-server did not start";

  auto tracer = RunningCommand::uscope(
      {"trace", "-p", std::to_string(server.pid()),
       "p:/usr/bin/redis-server:createStringObject \"%s\", str(arg1, arg2)"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  shell(cli + " set uscope-key festival");
  shell(cli + " get uscope-key");
  // The value is the set command's last argument: once it is printed, so is the key.
  EXPECT_TRUE(tracer.wait_for_output("festival"));
  tracer.signal(SIGTERM);
  auto r = tracer.finish();
  shell(cli + " shutdown nosave");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("createStringObject uscope-key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("festival"), std::string::npos) << r.out;
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
