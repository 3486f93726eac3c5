# data_plane_bench: UCX puts into a client buffer (shm and TCP, flush vs fence ordering) against
# memcpy of the same bytes. The server's data plane through the testing-only
# oc_storage_kv_internals, the client's through its public DataPlane.
oc_add_bench(data_plane_bench
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/data_plane_bench.cc
  LIBS oc_storage_kv_internals oc_client Threads::Threads)
