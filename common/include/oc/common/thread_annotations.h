#pragma once
// Clang thread-safety annotations (-Wthread-safety). They are live only where the standard
// mutexes carry capability attributes (clang with libc++ built with
// _LIBCPP_ENABLE_THREAD_SAFETY_ANNOTATIONS); with libstdc++ (Debian's default, also under
// clang) every OC_GUARDED_BY naming a std::mutex would be an error under -Werror, and under
// other compilers they mean nothing, so there they are no-ops.

#if defined(__clang__) && defined(_LIBCPP_ENABLE_THREAD_SAFETY_ANNOTATIONS)
#define OC_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define OC_THREAD_ANNOTATION_(x)
#endif

#define OC_GUARDED_BY(x) OC_THREAD_ANNOTATION_(guarded_by(x))
#define OC_PT_GUARDED_BY(x) OC_THREAD_ANNOTATION_(pt_guarded_by(x))
#define OC_REQUIRES(...) OC_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define OC_EXCLUDES(...) OC_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
