/* fuzz_check.h - invariant checks for fuzz targets. Unlike assert(), they
 * stay on in release builds, where the corpus replay also runs. */
#ifndef KGS_FUZZ_CHECK_H
#define KGS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(c)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #c);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
