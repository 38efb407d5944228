// The trace reader's open files. A trace read from a file holds it open only
// while it is read: at most a few dozen at once (fewer under a low descriptor
// limit), the least recently read closed first and opened again when next
// read, so a command reads any number of shards without running out of
// descriptors. A file replaced meanwhile (another device or inode) is an
// error, never read as the one that was checked.
#pragma once
#include <hdf5.h>

#include "trace_tr.h"

// tr's file, just opened as f (tr->path, tr->dev, tr->ino set), into the
// pool: tr gets its serial.
void trace_files_add(aha_tr *tr, hid_t f);
// tr's open file (an image's: tr->file), opened again where it was closed;
// -1 with a message naming the trace.
hid_t trace_files_get(const aha_tr *tr);
// Close tr's file, if open.
void trace_files_drop(const aha_tr *tr);
