# ttft_emulator: TTFT of emulated serving nodes through the storage server's pacing path
# (README.md), which lives in oc_storage (src/kv/pacing.cc, a private header).
add_executable(ttft_emulator ${CMAKE_CURRENT_SOURCE_DIR}/ttft_emulator.cc)
oc_target_defaults(ttft_emulator)
target_include_directories(ttft_emulator PRIVATE ${PROJECT_SOURCE_DIR}/storage-server/src)
target_link_libraries(ttft_emulator PRIVATE oc_storage Threads::Threads)
