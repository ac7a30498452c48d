// The interpreter in an ELF object: Debian's static python3.11, its debug build, and
// libpython3.11.so, checked against nm (addresses, sizes, the .cold part in the debug file found
// by build-id) and against the interpreter's own sys.version_info; an object that holds no
// interpreter is not one.
#include "discover/python_runtime.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "discover/elf_file.h"
#include "tool_output.h"

namespace uscope {
namespace {

using test::command_output;
using test::nm_sized_symbols;

PythonVersion version_of(const std::string& python) {
  std::istringstream in(command_output(python + " -c 'import sys; print(*sys.version_info[:3])'"));
  PythonVersion v;
  in >> v.major >> v.minor >> v.micro;
  return v;
}

std::string debug_file_of(const std::string& path) {
  auto elf = ElfFile::open(path);
  auto id = elf ? elf->build_id() : std::nullopt;
  if (!id) return "";
  return "/usr/lib/debug/.build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug";
}

void expect_object(const std::string& path, const std::string& python, bool debug,
                   const std::string& cold_from) {
  auto elf = ElfFile::open(path);
  ASSERT_TRUE(elf) << elf.error().message;
  auto info = python_object_info(*elf);
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_TRUE(info->has_value()) << path;
  const PythonObjectInfo& i = **info;
  EXPECT_EQ(i.version, version_of(python)) << path;
  EXPECT_EQ(i.version_source, "Py_Version");
  EXPECT_EQ(i.debug, debug);

  auto dyn = nm_sized_symbols("-D " + path);
  ASSERT_EQ(dyn.count("_PyRuntime"), 1u);
  EXPECT_EQ(i.runtime_addr, dyn.find("_PyRuntime")->second.addr);
  EXPECT_EQ(i.code_type_addr, dyn.find("PyCode_Type")->second.addr);
  const auto& eval = dyn.find("_PyEval_EvalFrameDefault")->second;
  EXPECT_EQ(i.eval_start[0], eval.addr);
  EXPECT_EQ(i.eval_end[0], eval.addr + eval.size);
  if (cold_from.empty()) {
    EXPECT_EQ(i.eval_start[1], 0u);
    EXPECT_EQ(i.eval_end[1], 0u);
  } else {
    auto all = nm_sized_symbols(cold_from);
    ASSERT_EQ(all.count("_PyEval_EvalFrameDefault.cold"), 1u) << cold_from;
    const auto& cold = all.find("_PyEval_EvalFrameDefault.cold")->second;
    EXPECT_EQ(i.eval_start[1], cold.addr);
    EXPECT_EQ(i.eval_end[1], cold.addr + cold.size);
  }
}

TEST(python_runtime, finds_the_interpreter_in_debians_static_python3_11) {
  // Stripped; its .cold part is named by python3.11-dbg's debug file.
  expect_object("/usr/bin/python3.11", "/usr/bin/python3.11", false,
                debug_file_of("/usr/bin/python3.11"));
}

TEST(python_runtime, finds_the_interpreter_in_the_debug_build) {
  // Not split hot and cold (-O0 -g): no .cold part; _Py_RefTotal says Py_DEBUG.
  expect_object("/usr/bin/python3.11d", "/usr/bin/python3.11d", true, "");
}

TEST(python_runtime, finds_the_interpreter_in_libpython) {
  const std::string lib = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
  expect_object(lib, "/usr/bin/python3.11", false, debug_file_of(lib));
}

TEST(python_runtime, finds_the_version_string_where_there_is_no_py_version) {
  // What versions before 3.11 are read by: PY_VERSION in .rodata, whatever the file's name.
  for (const std::string path :
       {"/usr/bin/python3.11", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"}) {
    auto elf = ElfFile::open(path);
    ASSERT_TRUE(elf) << elf.error().message;
    auto v = python_version_string(*elf);
    ASSERT_TRUE(v) << path;
    EXPECT_EQ(*v, version_of("/usr/bin/python3.11")) << path;
    EXPECT_FALSE(python_version_string(*elf, PythonVersion{3, 10, 0})) << path;
  }
}

TEST(python_runtime, an_object_without_an_interpreter_is_none) {
  auto elf = ElfFile::open("/bin/true");
  ASSERT_TRUE(elf) << elf.error().message;
  auto info = python_object_info(*elf);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_FALSE(info->has_value());
}

}  // namespace
}  // namespace uscope
