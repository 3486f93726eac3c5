# oc_add_unit_tests(NAME name SOURCES ... LIBS ...): one GoogleTest binary per module,
# registered with ctest as one test per TEST() (gtest_discover_tests).
#
# Tests that need the throw-away Ceph cluster (docs/design.md, "RADOS test cluster"): every
# gtest whose full name contains `Rados` and every integration test file named *rados*. They
# require the CTest fixture `rados_cluster` (tests `rados_cluster.up` / `rados_cluster.down`,
# tests/CMakeLists.txt: one cluster per ctest run in OC_RADOS_TEST_DIR), carry the label
# `rados` and get OC_RADOS_TEST_ENV; every other test runs without the cluster.
include(GoogleTest OPTIONAL)

set(OC_RADOS_TEST_DIR ${PROJECT_BINARY_DIR}/rados-test)
set(OC_RADOS_TEST_ENV
    "OC_TEST_CEPH_CONF=${OC_RADOS_TEST_DIR}/ceph.conf"
    "OC_TEST_RADOS_POOL=oc-test")

function(oc_add_unit_tests)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(OC_FUZZ)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  oc_target_defaults(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} oc_testutil GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "-*Rados*"
                       PROPERTIES LABELS unit)
  # The second discovery lists the *Rados* tests in ${ARG_NAME}_RADOS_TESTS; their properties
  # are set by a file ctest reads after the discovered tests, because list values (two labels,
  # two variables) do not survive gtest_discover_tests' PROPERTIES.
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 TEST_FILTER "*Rados*"
                       TEST_LIST ${ARG_NAME}_RADOS_TESTS)
  set(props ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_rados_properties.cmake)
  file(WRITE ${props}
       "foreach(t IN LISTS ${ARG_NAME}_RADOS_TESTS)\n"
       "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"unit;rados\"\n"
       "    FIXTURES_REQUIRED rados_cluster ENVIRONMENT \"${OC_RADOS_TEST_ENV}\")\n"
       "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${props})
endfunction()

# oc_add_fuzz(NAME name SOURCES ... LIBS ...): under OC_FUZZ=ON (clang) a libFuzzer binary with
# ASan+UBSan; otherwise the same source linked with a replay main that runs every file of
# tests/fuzz/corpus/<name>/ once, registered as a ctest.
function(oc_add_fuzz)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  oc_target_defaults(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS})
  set(corpus ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${ARG_NAME})
  if(OC_FUZZ)
    target_compile_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer,address,undefined
                                               -fno-sanitize-recover=all)
    target_link_options(${ARG_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
  else()
    target_link_libraries(${ARG_NAME} PRIVATE oc_fuzz_replay_main)
    add_test(NAME fuzz_replay.${ARG_NAME} COMMAND ${ARG_NAME} ${corpus})
    set_tests_properties(fuzz_replay.${ARG_NAME} PROPERTIES LABELS fuzz)
  endif()
endfunction()
