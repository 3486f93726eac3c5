# scheduler_bench: Allocate per policy and size, and Pacer::Next per flow count (README.md).
oc_add_bench(scheduler_bench SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/scheduler_bench.cc LIBS oc_sched)
