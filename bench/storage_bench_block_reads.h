#pragma once
// storage_bench's raw object reads (BM_BlockRead, issue 7's experiment 1): a store of their own,
// whole-object reads by T threads, cold or warm. storage_bench_block_reads.cc lists the counters
// and flags. Called from storage_bench's main only, on one thread.

namespace oc::bench {

// Takes the --block_* flags out of argv (Google Benchmark refuses unknown ones); false (after
// printing the flag to stderr) if one is malformed.
bool ParseBlockFlags(int* argc, char** argv);

// Registers BM_BlockRead for every block size, thread count and cold/warm, per the flags.
void RegisterBlockReads();

// Closes the store and removes its temp dir, if any.
void CloseBlockStore();

}  // namespace oc::bench
