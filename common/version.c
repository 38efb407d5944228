#include "version.h"

// The Makefile rebuilds this file on every build so the values are current.
#ifndef AHA_VERSION
#define AHA_VERSION "unknown"
#endif
#ifndef AHA_GIT_REV
#define AHA_GIT_REV "unknown"
#endif
#ifndef AHA_CC
#define AHA_CC "unknown"
#endif
#ifndef AHA_CFLAGS
#define AHA_CFLAGS "unknown"
#endif

const char *aha_version(void) { return AHA_VERSION; }
const char *aha_git_rev(void) { return AHA_GIT_REV; }
const char *aha_compiler(void) { return AHA_CC; }
const char *aha_cflags(void) { return AHA_CFLAGS; }
