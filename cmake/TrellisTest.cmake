# trellis_add_test(NAME SOURCES ... LIBS ...): one GoogleTest executable,
# registered with CTest test by test. TRELLIS_TEST_DATA points at tests/data,
# TRELLIS_SOURCE_DIR at the repository root (fixture model under models/).
function(trellis_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${name} PRIVATE
    TRELLIS_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
    TRELLIS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  include(GoogleTest)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endfunction()
