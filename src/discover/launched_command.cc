#include "discover/launched_command.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "bpf/pre_exec_comm.h"

namespace uscope {

namespace {

sigset_t start_mask;
bool have_start_mask = false;

// Marks every fd from 3 up close-on-exec, so the command gets none of uscope's (BPF objects, the
// ring buffer, the signalfd) while the exec-status pipe still reports a failed exec. Runs in the
// forked child: system calls only. `max_fd` is computed before the fork for old kernels.
void close_fds_on_exec(int max_fd) {
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (int fd = 3; fd < max_fd; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

// The program's path as the command names it (absolute, symlinks kept): "redis-server" found on
// PATH as /usr/bin/redis-server, whatever file that links to.
std::string typed_path(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (name.front() == '/') return name;
    char cwd[PATH_MAX];
    return getcwd(cwd, sizeof cwd) ? (std::filesystem::path(cwd) / name).lexically_normal().string()
                                   : name;
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;
}

Result<std::string> find_executable(const std::string& name) {
  auto usable = [](const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (!usable(name)) return fail("cannot run '{}': not an executable file", name);
    char buf[PATH_MAX];
    return std::string(realpath(name.c_str(), buf) ? buf : name.c_str());
  }
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (usable(candidate)) {
      char buf[PATH_MAX];
      return std::string(realpath(candidate.c_str(), buf) ? buf : candidate.c_str());
    }
    start = end + 1;
  }
  return fail("cannot run '{}': not found on PATH", name);
}

}  // namespace

void LaunchedCommand::remember_start_state() {
  have_start_mask = sigprocmask(SIG_BLOCK, nullptr, &start_mask) == 0;
}

LaunchedCommand::LaunchedCommand(LaunchedCommand&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      go_fd_(std::exchange(o.go_fd_, -1)),
      exec_fd_(std::exchange(o.exec_fd_, -1)),
      reaped_(o.reaped_),
      executable_(std::move(o.executable_)),
      started_as_(std::move(o.started_as_)) {}

LaunchedCommand& LaunchedCommand::operator=(LaunchedCommand&& o) noexcept {
  if (this != &o) {
    this->~LaunchedCommand();
    new (this) LaunchedCommand(std::move(o));
  }
  return *this;
}

LaunchedCommand::~LaunchedCommand() {
  terminate();
  if (go_fd_ >= 0) close(go_fd_);
  if (exec_fd_ >= 0) close(exec_fd_);
}

Result<LaunchedCommand> LaunchedCommand::prepare(const std::string& command_line) {
  wordexp_t words{};
  int rc = wordexp(command_line.c_str(), &words, WRDE_NOCMD | WRDE_UNDEF);
  if (rc != 0 || words.we_wordc == 0) {
    if (rc == 0) wordfree(&words);
    return fail("cannot parse command '{}': use plain words and quotes, no $(...)", command_line);
  }
  std::vector<std::string> argv(words.we_wordv, words.we_wordv + words.we_wordc);
  wordfree(&words);
  auto exe = find_executable(argv[0]);
  if (!exe) return tl::unexpected(exe.error());

  // Everything the child needs is built before the fork: between fork and exec the child runs
  // uscope's image, so a malloc there would be an event of uscope's (and is unsafe after a fork).
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  sigset_t mask;
  if (have_start_mask)
    mask = start_mask;
  else
    sigprocmask(SIG_BLOCK, nullptr, &mask);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  rlimit nofile{};
  int max_fd = getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 65536
                   ? static_cast<int>(nofile.rlim_cur)
                   : 65536;
  const char* path = exe->c_str();

  int go[2] = {-1, -1}, exec_status[2] = {-1, -1};
  auto close_pipes = [&] {
    for (int fd : {go[0], go[1], exec_status[0], exec_status[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(exec_status, O_CLOEXEC) != 0) {
    int e = errno;
    close_pipes();
    return fail_errno(e, "pipe: {}", std::strerror(e));
  }
  // The child is born named USCOPE_PRE_EXEC_COMM, which tells BPF programs its calls before the
  // exec are uscope's (bpf/target_filter.h); named in the parent, so that no call of the child
  // comes before the name. The exec gives it the command's name.
  char own_name[16] = {};
  prctl(PR_GET_NAME, own_name);
  prctl(PR_SET_NAME, USCOPE_PRE_EXEC_COMM);
  pid_t pid = fork();
  if (pid != 0) prctl(PR_SET_NAME, own_name);
  if (pid < 0) {
    int e = errno;
    close_pipes();
    return fail_errno(e, "fork: {}", std::strerror(e));
  }
  if (pid == 0) {
    close(go[1]);
    close(exec_status[0]);
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(127);  // uscope gave up before releasing us
    // An ignored signal stays ignored across exec (uscope ignores SIGPIPE); handlers do not.
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    close_fds_on_exec(max_fd);
    execve(path, cargv.data(), environ);
    int e = errno;
    (void)!write(exec_status[1], &e, sizeof(e));
    _exit(127);
  }
  close(go[0]);
  close(exec_status[1]);
  LaunchedCommand c;
  c.pid_ = pid;
  c.go_fd_ = go[1];
  c.exec_fd_ = exec_status[0];
  c.executable_ = *exe;
  c.started_as_ = typed_path(argv[0]);
  return c;
}

Result<void> LaunchedCommand::release() {
  char byte = 'g';
  if (write(go_fd_, &byte, 1) != 1) return fail_errno(errno, "cannot start the command");
  close(go_fd_);
  go_fd_ = -1;
  int e = 0;
  ssize_t n = read(exec_fd_, &e, sizeof(e));
  close(exec_fd_);
  exec_fd_ = -1;
  if (n == sizeof(e)) return fail_errno(e, "cannot exec {}: {}", executable_, std::strerror(e));
  return {};
}

void LaunchedCommand::terminate() {
  if (pid_ <= 0 || reaped_) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      reaped_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

}  // namespace uscope
