// util/faults.h — named fault points, for the tests that prove a run survives crashes and full
// disks (tests/train/test_crash.sh).
//
// FRONTIER_CRASH_AT=NAME[:K]  the K-th time (default 1) the process reaches fault point NAME, it
//                             kills itself with SIGKILL, exactly as `kill -9` at that instant would
//                             (no handler runs, nothing is flushed).
// FRONTIER_SIGINT_AT=NAME[:K][,NAME[:K]...]  (up to 4) the K-th time the process reaches fault
//                             point NAME it sends itself SIGINT, as a Ctrl-C at that instant would
//                             (its handler runs): a second signal inside a save, at a known point.
// FRONTIER_FAIL_AT=NAME[:K]   the K-th time fault_fails(NAME) is asked, it answers 1 and sets errno
//                             to ENOSPC: the caller then fails as it would on a full disk.
// Unset (always, outside tests), each call costs one test of a cached flag.
#pragma once

void fault_point(const char *name);
int fault_fails(const char *name);
