# kv_bench: descriptor GET delivery (storage-server/src/kv/) over UCX shared memory into client
# memory, layerwise vs chunkwise vs an in-memory body sink, with a memcpy ceiling (README.md).
oc_add_bench(kv_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/kv_bench.cc
             LIBS oc_storage_rocks_internals oc_storage_kv_internals oc_client oc_testutil)
