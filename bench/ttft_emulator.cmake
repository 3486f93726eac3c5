# ttft_emulator: TTFT of emulated serving nodes through the storage server's pacing path
# (README.md). Builds pacing.cc directly so it needs oc_sched, not the whole oc_storage. Skipped
# until the KV engine's kv.h is in the tree.
if(EXISTS ${PROJECT_SOURCE_DIR}/storage-server/include/oc/storage/kv.h)
  add_executable(ttft_emulator ${CMAKE_CURRENT_SOURCE_DIR}/ttft_emulator.cc
                 ${PROJECT_SOURCE_DIR}/storage-server/src/kv/pacing.cc)
  oc_target_defaults(ttft_emulator)
  target_include_directories(ttft_emulator PRIVATE ${PROJECT_SOURCE_DIR}/storage-server/src
                             ${PROJECT_SOURCE_DIR}/storage-server/include)
  target_link_libraries(ttft_emulator PRIVATE oc_sched oc_descriptor oc_common Threads::Threads)
endif()
