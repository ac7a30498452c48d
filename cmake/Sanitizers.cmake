# USCOPE_SANITIZE=address,undefined builds uscope and its tests with those sanitizers (scripts/test.sh
# builds build-asan this way), at -O1 -g1: quick to build, fast enough to run, file:line in
# reports. Programs that tests or benchmarks trace (tests/fixtures, demo/, bench/) stay as in any
# other build: ASan replaces malloc and friends, so probes on libc's would see other calls.
set(USCOPE_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list for uscope and its tests")
if(USCOPE_SANITIZE)
  set(_ours "$<OR:$<PATH:IS_PREFIX,${CMAKE_SOURCE_DIR}/src,$<TARGET_PROPERTY:SOURCE_DIR>>,$<PATH:IS_PREFIX,${CMAKE_SOURCE_DIR}/tests/unit,$<TARGET_PROPERTY:SOURCE_DIR>>,$<PATH:IS_PREFIX,${CMAKE_SOURCE_DIR}/tests/e2e,$<TARGET_PROPERTY:SOURCE_DIR>>>")
  add_compile_options("$<${_ours}:-O1;-g1;-fsanitize=${USCOPE_SANITIZE};-fno-omit-frame-pointer;-fno-sanitize-recover=all>")
  add_link_options("$<${_ours}:-fsanitize=${USCOPE_SANITIZE}>")
endif()
