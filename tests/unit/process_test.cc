#include "discover/process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "reaped_pid.h"
#include "temp_dir.h"
#include "util/unique_fd.h"

namespace fs = std::filesystem;
using namespace uscope;

namespace {

std::string read_link(const std::string& path) {
  std::error_code ec;
  return fs::read_symlink(path, ec).string();
}

using test::TempDir;

}  // namespace

TEST(proc_maps, parses_all_fields) {
  auto maps = parse_proc_maps(
      "55d4c5a00000-55d4c5a28000 r-xp 00002000 fd:01 1835041                    /usr/bin/bash\n");
  ASSERT_TRUE(maps) << maps.error().message;
  ASSERT_EQ(maps->size(), 1u);
  const Mapping& m = (*maps)[0];
  EXPECT_EQ(m.start, 0x55d4c5a00000u);
  EXPECT_EQ(m.end, 0x55d4c5a28000u);
  EXPECT_EQ(m.offset, 0x2000u);
  EXPECT_EQ(m.perms, "r-xp");
  EXPECT_EQ(m.dev_major, 0xfdu);
  EXPECT_EQ(m.dev_minor, 0x01u);
  EXPECT_EQ(m.inode, 1835041u);
  EXPECT_EQ(m.path, "/usr/bin/bash");
  EXPECT_FALSE(m.deleted);
  EXPECT_TRUE(m.executable());
  EXPECT_TRUE(m.is_file());
}

TEST(proc_maps, parses_path_with_spaces) {
  auto maps = parse_proc_maps(
      "7f0000000000-7f0000001000 r--p 00000000 08:02 42   /home/u/My Files/lib a  b.so\n");
  ASSERT_TRUE(maps) << maps.error().message;
  ASSERT_EQ(maps->size(), 1u);
  EXPECT_EQ((*maps)[0].path, "/home/u/My Files/lib a  b.so");
}

TEST(proc_maps, parses_deleted_mapping) {
  auto maps = parse_proc_maps(
      "7f1c2a000000-7f1c2a001000 r-xp 00001000 00:1f 9999 /tmp/libstapsdt-abc.so (deleted)\n"
      "7f1c2b000000-7f1c2b001000 rw-s 00000000 00:01 1024 /memfd:jit code (deleted)\n");
  ASSERT_TRUE(maps) << maps.error().message;
  ASSERT_EQ(maps->size(), 2u);
  EXPECT_EQ((*maps)[0].path, "/tmp/libstapsdt-abc.so");
  EXPECT_TRUE((*maps)[0].deleted);
  EXPECT_EQ((*maps)[1].path, "/memfd:jit code");
  EXPECT_TRUE((*maps)[1].deleted);
  EXPECT_EQ((*maps)[1].perms, "rw-s");
}

TEST(proc_maps, parses_anonymous_and_special_entries) {
  auto maps = parse_proc_maps(
      "55d4c6b8e000-55d4c6d31000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f1c2c000000-7f1c2c021000 rw-p 00000000 00:00 0 \n"
      "7f1c2d000000-7f1c2d001000 rw-p 00000000 00:00 0\n"
      "7f1c2e000000-7f1c2e001000 r--p 00000000 00:00 0    [anon:glibc malloc]\n"
      "7ffd1b7f6000-7ffd1b7f8000 r-xp 00000000 00:00 0                          [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n");
  ASSERT_TRUE(maps) << maps.error().message;
  ASSERT_EQ(maps->size(), 6u);
  EXPECT_EQ((*maps)[0].path, "[heap]");
  EXPECT_EQ((*maps)[1].path, "");
  EXPECT_EQ((*maps)[2].path, "");
  EXPECT_EQ((*maps)[3].path, "[anon:glibc malloc]");
  EXPECT_EQ((*maps)[4].path, "[vdso]");
  EXPECT_EQ((*maps)[5].start, 0xffffffffff600000u);
  EXPECT_EQ((*maps)[5].perms, "--xp");
  for (const auto& m : *maps) EXPECT_FALSE(m.is_file()) << m.path;
}

TEST(proc_maps, parses_huge_offsets_and_devices) {
  auto maps = parse_proc_maps(
      "7f0000000000-7f0000002000 r--s fffffffffffff000 103:02 18446744073709551615 /dev/mem\n");
  ASSERT_TRUE(maps) << maps.error().message;
  EXPECT_EQ((*maps)[0].offset, 0xfffffffffffff000u);
  EXPECT_EQ((*maps)[0].dev_major, 0x103u);
  EXPECT_EQ((*maps)[0].inode, 18446744073709551615u);
}

TEST(proc_maps, unescapes_newlines_in_paths) {
  auto maps = parse_proc_maps("1000-2000 r--p 00000000 08:01 7 /tmp/a\\012b\n");
  ASSERT_TRUE(maps) << maps.error().message;
  EXPECT_EQ((*maps)[0].path, "/tmp/a\nb");
}

TEST(proc_maps, accepts_empty_text_and_missing_final_newline) {
  auto empty = parse_proc_maps("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
  auto maps = parse_proc_maps("1000-2000 r--p 00000000 08:01 7 /a");
  ASSERT_TRUE(maps);
  EXPECT_EQ((*maps)[0].path, "/a");
}

TEST(proc_maps, malformed_line_is_error_with_line_number) {
  const std::string good = "1000-2000 r--p 00000000 08:01 7 /a\n";
  for (std::string bad : {
           "garbage",
           "1000 r--p 00000000 08:01 7 /a",             // no range
           "2000-1000 r--p 00000000 08:01 7 /a",        // end below start
           "1000-2000 r--p",                            // truncated
           "1000-2000 rwq 00000000 08:01 7 /a",         // bad perms
           "1000-2000 r--p 0000zz00 08:01 7 /a",        // bad offset
           "1000-2000 r--p 00000000 0801 7 /a",         // bad device
           "1000-2000 r--p 00000000 08:01 x /a",        // bad inode
           "1000-2000 r--p 00000000 08:01 7x /a",       // junk after inode
           "10000000000000000-2 r--p 0 08:01 7 /a",     // address overflows 64 bits
           "1000-2000 r--p 00000000 08:100000000 7 /a"  // minor overflows 32 bits
       }) {
    auto maps = parse_proc_maps(good + good + bad + "\n" + good);
    ASSERT_FALSE(maps) << bad;
    EXPECT_NE(maps.error().message.find("line 3"), std::string::npos) << maps.error().message;
  }
}

TEST(proc_maps, groups_objects_by_file) {
  auto p =
      Process::from_maps(4242,
                         "00400000-00401000 r--p 00000000 08:01 100 /usr/bin/app\n"
                         "00401000-00405000 r-xp 00001000 08:01 100 /usr/bin/app\n"
                         "00605000-00606000 rw-p 00005000 08:01 100 /usr/bin/app\n"
                         "00606000-00700000 rw-p 00000000 00:00 0   [heap]\n"
                         "7f0000000000-7f0000028000 r--p 00000000 08:01 200 /lib/libc.so.6\n"
                         "7f0000028000-7f00001bd000 r-xp 00028000 08:01 200 /lib/libc.so.6\n"
                         "7f00001bd000-7f00001be000 rw-p 00000000 00:00 0\n"
                         "7f0000200000-7f0000201000 r-xp 00000000 08:01 300 /tmp/x.so (deleted)\n"
                         "7f0000300000-7f0000301000 r-xp 00000000 08:01 301 /tmp/x.so\n",
                         "/nonexistent-proc");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->pid(), 4242);
  EXPECT_EQ(p->mappings().size(), 9u);
  ASSERT_EQ(p->objects().size(), 4u);
  const auto& app = p->objects()[0];
  EXPECT_EQ(app.path, "/usr/bin/app");
  EXPECT_EQ(app.inode, 100u);
  EXPECT_EQ(app.dev_major, 8u);
  EXPECT_EQ(app.dev_minor, 1u);
  EXPECT_EQ(app.mappings.size(), 3u);
  EXPECT_EQ(p->objects()[1].path, "/lib/libc.so.6");
  EXPECT_EQ(p->objects()[1].mappings.size(), 2u);
  // The same path with another inode is another file: one was replaced after being mapped.
  EXPECT_TRUE(p->objects()[2].deleted);
  EXPECT_FALSE(p->objects()[3].deleted);
  EXPECT_EQ(p->objects()[2].path, p->objects()[3].path);
  // No /proc here: no map_files link, no exe link.
  EXPECT_EQ(app.open_path, "/nonexistent-proc/4242/root/usr/bin/app");
  EXPECT_EQ(p->main_object(), &p->objects()[0]);
  EXPECT_EQ(p->object_containing(0x7f0000030000), &p->objects()[1]);
  EXPECT_EQ(p->object_containing(0x00606000), nullptr);
  EXPECT_EQ(p->comm(), "");
}

TEST(proc_maps, converts_offsets_and_addresses) {
  auto p = Process::from_maps(1,
                              "7f0000000000-7f0000028000 r--p 00000000 08:01 200 /lib/libc.so.6\n"
                              "7f0000028000-7f00001bd000 r-xp 00028000 08:01 200 /lib/libc.so.6\n"
                              "7f00001bd000-7f00001c1000 r--p 001bc000 08:01 200 /lib/libc.so.6\n"
                              "7f1000000000-7f1000001000 r--p fffffffffffff000 08:01 5 /dev/x\n",
                              "/nonexistent-proc");
  ASSERT_TRUE(p) << p.error().message;
  const auto& libc = p->objects()[0];
  EXPECT_EQ(libc.address_of_offset(0x100), 0x7f0000000100u);
  EXPECT_EQ(libc.address_of_offset(0x29000), 0x7f0000029000u);
  // 0x1bc000..0x1bd000 is mapped twice (end of text, start of relro): code wins.
  EXPECT_EQ(libc.address_of_offset(0x1bc100), 0x7f00001bc100u);
  EXPECT_EQ(libc.address_of_offset(0x1bffff), 0x7f00001c0fffu);
  EXPECT_EQ(libc.address_of_offset(0x1c0000), std::nullopt);
  EXPECT_EQ(libc.offset_of_address(0x7f0000029000), 0x29000u);
  EXPECT_EQ(libc.offset_of_address(0x7f00001bd010), 0x1bc010u);
  EXPECT_EQ(libc.offset_of_address(0x7f00001c1000), std::nullopt);
  EXPECT_EQ(libc.offset_of_address(0x1000), std::nullopt);
  const auto& dev = p->objects()[1];
  EXPECT_EQ(dev.address_of_offset(0xfffffffffffff010), 0x7f1000000010u);
  EXPECT_EQ(dev.address_of_offset(0x10), std::nullopt);
  EXPECT_EQ(dev.offset_of_address(0x7f1000000fff), 0xffffffffffffffffu);
}

TEST(proc_maps, uses_map_files_exe_and_comm_under_proc_root) {
  TempDir root;
  fs::create_directories(root.path() / "77/map_files");
  std::ofstream(root.path() / "77/map_files/7f0000000000-7f0000001000") << "x";
  std::ofstream(root.path() / "77/comm") << "worker\n";
  fs::create_symlink("/opt/app (deleted)", root.path() / "77/exe");
  auto p =
      Process::from_maps(77,
                         "7f0000000000-7f0000001000 r--p 00000000 08:01 9 /lib/liba.so\n"
                         "7f0000001000-7f0000002000 r-xp 00001000 08:01 9 /lib/liba.so\n"
                         "7f0000100000-7f0000101000 r-xp 00000000 08:01 8 /opt/app (deleted)\n",
                         root.path().string());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->objects().size(), 2u);
  EXPECT_EQ(p->objects()[0].open_path,
            (root.path() / "77/map_files/7f0000000000-7f0000001000").string());
  EXPECT_EQ(p->objects()[1].open_path, root.path().string() + "/77/root/opt/app");
  ASSERT_NE(p->main_object(), nullptr);
  EXPECT_EQ(p->main_object()->path, "/opt/app");
  EXPECT_EQ(p->comm(), "worker");
}

TEST(process, opens_own_process) {
  auto p = Process::open(getpid());
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->pid(), getpid());
  EXPECT_FALSE(p->mappings().empty());
  ASSERT_NE(p->main_object(), nullptr);
  EXPECT_EQ(p->main_object()->path, read_link("/proc/self/exe"));

  // Code of this test is in the main object, and offsets round-trip through the mappings.
  auto here = reinterpret_cast<uint64_t>(&read_link);
  EXPECT_EQ(p->object_containing(here), p->main_object());
  auto off = p->main_object()->offset_of_address(here);
  ASSERT_TRUE(off);
  EXPECT_EQ(p->main_object()->address_of_offset(*off), here);

  std::string comm;
  std::getline(std::ifstream("/proc/self/comm"), comm);
  EXPECT_EQ(p->comm(), comm);

  for (const auto& o : p->objects()) {
    EXPECT_FALSE(o.mappings.empty());
    EXPECT_TRUE(o.open_path.starts_with(fmt::format("/proc/{}/", getpid()))) << o.open_path;
    // Whichever route was chosen, it must reach the file.
    UniqueFd fd(::open(o.open_path.c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_TRUE(fd.valid()) << o.open_path;
  }
}

TEST(process, missing_pid_is_clear_error) {
  pid_t pid = test::reaped_pid();
  auto p = Process::open(pid);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message, fmt::format("no process with PID {}", pid));
  EXPECT_FALSE(process_alive(pid));
  EXPECT_TRUE(process_alive(getpid()));
  EXPECT_FALSE(Process::open(0));
}

TEST(process, unreadable_maps_names_capability) {
  // Needs a process we may not ptrace: as root, drop to nobody in a child and look at our parent.
  pid_t target = getpid();
  pid_t child = fork();
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(2);
    auto p = Process::open(geteuid() == 0 ? target : 1);
    if (p) _exit(geteuid() == 0 ? 3 : 5);
    auto want = fmt::format("cannot read /proc/{}/maps: permission denied (need CAP_SYS_PTRACE)",
                            geteuid() == 0 ? target : 1);
    _exit(p.error().message == want ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 5) GTEST_SKIP() << "PID 1 is readable without privileges here";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(process, lists_dlopened_deleted_library_with_readable_open_path) {
  std::string fixture = std::string(USCOPE_FIXTURE_DIR) + "/process/libprocess_tiny.so";
  TempDir dir;
  fs::path copy = dir.path() / "libuscope-dyn-probes.so";
  fs::copy_file(fixture, copy);
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  fs::remove(copy);
  auto answer = reinterpret_cast<int (*)()>(dlsym(handle, "uscope_tiny_answer"));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer(), 42);

  auto p = Process::open(getpid());
  ASSERT_TRUE(p) << p.error().message;
  const MappedObject* found = nullptr;
  for (const auto& o : p->objects())
    if (o.path == copy.string()) found = &o;
  ASSERT_NE(found, nullptr);
  EXPECT_TRUE(found->deleted);
  EXPECT_EQ(p->object_containing(reinterpret_cast<uint64_t>(answer)), found);

  std::string map_files = fmt::format("/proc/{}/map_files/", getpid());
  UniqueFd probe(::open(
      (map_files + fmt::format("{:x}-{:x}", found->mappings[0].start, found->mappings[0].end))
          .c_str(),
      O_RDONLY | O_CLOEXEC));
  if (!probe.valid()) {
    dlclose(handle);
    GTEST_SKIP() << "map_files links need CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE";
  }
  EXPECT_TRUE(found->open_path.starts_with(map_files)) << found->open_path;
  UniqueFd fd(::open(found->open_path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd.valid()) << found->open_path;
  char magic[4] = {};
  ASSERT_EQ(::pread(fd.get(), magic, sizeof magic, 0), 4);
  EXPECT_EQ(std::string(magic, 4),
            "\x7f"
            "ELF");
  dlclose(handle);
}

TEST(process, exited_process_is_error_not_crash) {
  // A zombie has a /proc entry but no memory left: what a process that exits mid-read looks like.
  pid_t child = fork();
  if (child == 0) _exit(0);
  std::string state;
  for (int i = 0; i < 1000 && state != "Z"; ++i) {
    std::ifstream stat(fmt::format("/proc/{}/stat", child));
    std::string pid, comm;
    stat >> pid >> comm >> state;
    if (state != "Z") usleep(1000);
  }
  auto p = Process::open(child);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(state, "Z");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find(std::to_string(child)), std::string::npos) << p.error().message;
}

namespace {

// A child running /bin/sleep through `argv0` (a symlink, perhaps relative to `cwd`), stopped
// before it sleeps long: the caller reads its maps, then kills it.
pid_t sleep_as(const std::string& argv0, const std::string& cwd) {
  pid_t child = fork();
  if (child == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(2);
    execl(argv0.c_str(), argv0.c_str(), "30", static_cast<char*>(nullptr));
    _exit(3);
  }
  return child;
}

// Until the child has exec'd, its program is mapped and its arguments are set: its exe is no
// longer ours, its maps show that exe's code, and its cmdline reads. exec changes the exe first,
// maps the program's segments next and sets the arguments' bounds last (create_elf_tables): a
// read in between finds no main object, or no argv[0] to name it by (both failed once in a fresh
// root).
bool wait_for_exec(pid_t pid) {
  for (int i = 0; i < 5000; ++i) {
    const std::string exe = read_link(fmt::format("/proc/{}/exe", pid));
    if (exe != read_link("/proc/self/exe")) {
      bool mapped = false;
      std::ifstream maps(fmt::format("/proc/{}/maps", pid));
      for (std::string line; std::getline(maps, line);)
        mapped = mapped || (line.find(" r-xp ") != std::string::npos && line.ends_with(" " + exe));
      std::ifstream cmdline(fmt::format("/proc/{}/cmdline", pid));
      if (mapped && cmdline.get() != std::ifstream::traits_type::eof()) return true;
    }
    usleep(1000);
  }
  return false;
}

}  // namespace

TEST(process, names_the_main_executable_as_started_through_a_symlink) {
  TempDir dir;
  const std::string sleep_file = fs::canonical("/bin/sleep").string();
  fs::create_symlink(sleep_file, dir.path() / "napper");
  for (const std::string& argv0 : {(dir.path() / "napper").string(), std::string("./napper")}) {
    pid_t child = sleep_as(argv0, dir.path().string());
    ASSERT_TRUE(wait_for_exec(child));
    auto p = Process::open(child);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    ASSERT_TRUE(p) << p.error().message;
    ASSERT_NE(p->main_object(), nullptr);
    EXPECT_EQ(p->main_object()->path, sleep_file);  // what the kernel shows
    EXPECT_EQ(p->main_object()->started_as, (dir.path() / "napper").string()) << argv0;
  }
  // Started by its own name: nothing to add.
  pid_t child = sleep_as(sleep_file, dir.path().string());
  ASSERT_TRUE(wait_for_exec(child));
  auto p = Process::open(child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(p && p->main_object());
  EXPECT_EQ(p->main_object()->started_as, "");
}

TEST(process, from_mappings_names_its_main_object_only_by_the_same_file) {
  struct stat st;
  ASSERT_EQ(stat("/bin/sleep", &st), 0);
  const std::string sleep_file = fs::canonical("/bin/sleep").string();
  Mapping m;
  m.start = 0x1000;
  m.end = 0x2000;
  m.perms = "r-xp";
  m.dev_major = major(st.st_dev);
  m.dev_minor = minor(st.st_dev);
  m.inode = st.st_ino;
  m.path = sleep_file;
  Process p = Process::from_mappings(test::reaped_pid(), {m});
  ASSERT_NE(p.main_object(), nullptr);
  p.name_started_as("/bin/true");  // another file
  EXPECT_EQ(p.main_object()->started_as, "");
  TempDir dir;
  fs::create_symlink(sleep_file, dir.path() / "napper");
  p.name_started_as((dir.path() / "napper").string());
  EXPECT_EQ(p.main_object()->started_as, (dir.path() / "napper").string());
}
