// Minimal test harness: each CHECK prints nothing when it holds; each TEST
// prints one "PASS name" or "FAIL name: why" line that tests/run.sh counts.
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failed_;   // failures inside the current test
static int check_total_failed_;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            if (!check_failed_++) {                                           \
                printf("  %s:%d: ", __FILE__, __LINE__);                      \
                printf(__VA_ARGS__);                                          \
                printf("\n");                                                 \
            }                                                                 \
        }                                                                     \
    } while (0)

// |a - b| <= tol + |b| * rel (llm.c style; b is the reference).
#define CHECK_CLOSE(a, b, tol, rel)                                           \
    CHECK(fabs((double)(a) - (double)(b)) <= (tol) + fabs((double)(b)) * (rel), \
          "%s = %.8g, want %.8g", #a, (double)(a), (double)(b))

// A prefix on every line, e.g. "[cpu emulator] " for the emulated GPU tests.
#ifndef TEST_PREFIX
#define TEST_PREFIX ""
#endif

// The body is variadic so that it may hold commas.
#define TEST(name, ...)                                                       \
    do {                                                                      \
        check_failed_ = 0;                                                    \
        __VA_ARGS__;                                                          \
        if (check_failed_) {                                                  \
            printf("FAIL %s%s\n", TEST_PREFIX, name);                         \
            check_total_failed_++;                                            \
        } else {                                                              \
            printf("PASS %s%s\n", TEST_PREFIX, name);                         \
        }                                                                     \
        fflush(stdout);                                                       \
    } while (0)

#define TEST_EXIT() return check_total_failed_ ? 1 : 0
