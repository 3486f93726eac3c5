#pragma once
// Clang thread-safety annotations (-Wthread-safety); no-ops under other compilers.

#if defined(__clang__)
#define OC_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define OC_THREAD_ANNOTATION_(x)
#endif

#define OC_GUARDED_BY(x) OC_THREAD_ANNOTATION_(guarded_by(x))
#define OC_PT_GUARDED_BY(x) OC_THREAD_ANNOTATION_(pt_guarded_by(x))
#define OC_REQUIRES(...) OC_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define OC_EXCLUDES(...) OC_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
