# oc_add_unit_tests(NAME name SOURCES ... LIBS ...): one GoogleTest binary per module,
# registered with ctest as one test per TEST() (gtest_discover_tests).
include(GoogleTest OPTIONAL)

function(oc_add_unit_tests)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(OC_FUZZ)
    return()
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  oc_target_defaults(${ARG_NAME})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} oc_testutil GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
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
