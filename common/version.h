// Provenance of this build, recorded in every trace.
#pragma once

const char *aha_version(void);  // e.g. "0.1.0"
const char *aha_git_rev(void);  // short revision, "-dirty" when uncommitted changes
const char *aha_compiler(void); // first line of `cc --version`
const char *aha_cflags(void);   // the CFLAGS of the build
