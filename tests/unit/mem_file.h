#pragma once
// A FILE* whose output a test can read back: what sinks print goes through one.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace uscope::test {

class MemFile {
 public:
  MemFile() : f_(open_memstream(&buf_, &len_)) {}
  ~MemFile() {
    std::fclose(f_);
    std::free(buf_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::FILE* get() { return f_; }
  // Everything written so far.
  std::string str() {
    std::fflush(f_);
    return std::string(buf_, len_);
  }

 private:
  char* buf_ = nullptr;
  size_t len_ = 0;
  std::FILE* f_;
};

}  // namespace uscope::test
