# ctest cmake.python_dependencies (tests/CMakeLists.txt): with OC_BUILD_PYTHON=ON (the default)
# a missing pybind11 or a missing Python with its development headers fails the configure with
# the one message python/CMakeLists.txt gives, instead of dropping the package and its tests;
# with OC_BUILD_PYTHON=OFF the same tree configures without them. Configure only (nothing is
# built), into throw-away directories under WORK_DIR, with tests, benchmarks and RADOS off so
# each configure stays short.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -DCC=... -P python_dependencies_test.cmake
foreach(var SOURCE_DIR WORK_DIR CXX CC)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "python_dependencies_test.cmake: ${var} is not set")
  endif()
endforeach()

# Configures the tree with `args`; sets ${out_rc} and ${out_log} (stdout and stderr together).
function(configure name out_rc out_log)
  set(dir ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${dir})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${dir} -G Ninja
            -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_BUILD_TYPE=Release
            -DOC_BUILD_TESTS=OFF -DOC_BUILD_BENCH=OFF -DOC_WITH_RADOS=OFF ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  file(REMOVE_RECURSE ${dir})
  set(${out_rc} ${rc} PARENT_SCOPE)
  # CMake wraps long messages: compare with every run of blanks and newlines as one space.
  string(REGEX REPLACE "[ \n]+" " " out "${out}")
  set(${out_log} "${out}" PARENT_SCOPE)
endfunction()

# The last 1500 characters of `text` (the end of a configure log says what happened).
function(tail_of text out)
  string(LENGTH "${text}" n)
  if(n GREATER 1500)
    math(EXPR from "${n} - 1500")
    string(SUBSTRING "${text}" ${from} -1 text)
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(failures "")
# Each row: a name, the message the configure must fail with, the arguments that take the
# dependency away.
foreach(row "no-pybind11|pybind11 \\(Debian's pybind11-dev\\) was not found|-DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON"
            "no-python-dev|Python 3 \\([^)]*\\) with its development headers \\(Python.h, Debian's python3-dev\\) was not found|-DCMAKE_DISABLE_FIND_PACKAGE_Python=ON")
  string(REPLACE "|" ";" fields "${row}")
  list(GET fields 0 name)
  list(GET fields 1 want)
  list(GET fields 2 arg)
  configure(${name} rc full ${arg})
  tail_of("${full}" log)
  if(rc EQUAL 0)
    string(APPEND failures "${name}: the configure succeeded (the package dropped silently)\n${log}\n")
  elseif(NOT full MATCHES "OC_BUILD_PYTHON is ON but ${want}")
    string(APPEND failures "${name}: failed without the message /${want}/:\n${log}\n")
  else()
    message(STATUS "${name}: configure failed with the expected message")
  endif()
endforeach()

configure(python-off rc full -DOC_BUILD_PYTHON=OFF -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_Python=ON)
tail_of("${full}" log)
if(NOT rc EQUAL 0)
  string(APPEND failures "python-off: OC_BUILD_PYTHON=OFF did not configure:\n${log}\n")
else()
  message(STATUS "python-off: configured")
endif()

if(failures)
  message(FATAL_ERROR "${failures}")
endif()
