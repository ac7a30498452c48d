// The blog's Redis example for real: createStringObject(ptr, len) traced in a running
// redis-server while a client sends commands.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(redis, create_string_object_shows_commands) {
  USCOPE_REQUIRE_ROOT();
  const std::string port = "16379";
  GatedProcess server({"/usr/bin/redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no"});
  bool ready = false;
  for (int i = 0; i < 100 && !ready; ++i) {
    ready = shell("redis-cli -p " + port + " ping 2>/dev/null").find("PONG") != std::string::npos;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(ready) << "redis-server did not start";

  CommandResult r;
  std::thread tracer([&] {
    r = uscope({"trace", "-p", std::to_string(server.pid()), "-d", "2",
                "p:/usr/bin/redis-server:createStringObject \"%s\", str(arg1, arg2)"});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  shell("redis-cli -p " + port + " set uscope-key festival");
  shell("redis-cli -p " + port + " get uscope-key");
  tracer.join();
  shell("redis-cli -p " + port + " shutdown nosave");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("createStringObject   uscope-key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("festival"), std::string::npos) << r.out;
  EXPECT_TRUE(bpf_links_of_programs("trace_").empty());
}

}  // namespace
}  // namespace uscope::e2e
