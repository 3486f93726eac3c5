# Warnings and sanitizers applied to every first-party target through oc_target_defaults().
add_library(oc_build_flags INTERFACE)
target_compile_options(oc_build_flags INTERFACE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(OC_WERROR)
  target_compile_options(oc_build_flags INTERFACE -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(oc_build_flags INTERFACE -Wthread-safety)
endif()
if(OC_FUZZ)
  # Instrument every first-party library for coverage so libFuzzer can steer; the fuzz
  # executables add the libFuzzer runtime itself (oc_add_fuzz).
  target_compile_options(oc_build_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                                                  -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(oc_build_flags INTERFACE -fsanitize=address,undefined)
endif()
if(OC_SANITIZE)
  target_compile_options(oc_build_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(oc_build_flags INTERFACE -fsanitize=address,undefined)
endif()

function(oc_target_defaults target)
  target_link_libraries(${target} PRIVATE oc_build_flags)
endfunction()
