// The target that builds the tests' precompiled header (test_pch.h; tests/unit/CMakeLists.txt).
