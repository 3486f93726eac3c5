# ttft_emulator: TTFT of emulated serving nodes fed by the real store, KV engine, UCX data plane,
# client library and pacer (README.md); the engine and pacing headers are private to
# oc_storage_kv (reached through its testing-only seam).
oc_add_bench(ttft_emulator SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/ttft_emulator.cc
             LIBS oc_storage_rocks oc_storage_kv_internals oc_client oc_testutil
                  nlohmann_json::nlohmann_json Threads::Threads)
