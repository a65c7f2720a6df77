// util/fileio.h — files and folders, with atomic replacement.
//
// Contract: every function returns 0 / a valid pointer on success, -1 / NULL with err_set() on
// failure, naming the path. Writers never leave a half-written file in place of a good one:
// data goes to "<path>.tmp-<pid>", is fsync'ed, then renamed over <path>, and the folder is
// fsync'ed so the rename survives a crash.
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Read a whole file into a NUL-terminated buffer (the NUL is not counted in *len).
char *read_file(const char *path, size_t *len);

// Atomically replace `path` with `len` bytes of `data`.
int write_file_atomic(const char *path, const void *data, size_t len);

// Incremental atomic writer for large outputs: open a temp file, write, then commit or abort.
typedef struct {
    FILE *f;         // the temp file
    char *path;      // final path
    char *tmp_path;  // "<path>.tmp-<pid>"
} AtomicFile;
int atomic_open(AtomicFile *af, const char *path);
int atomic_write(AtomicFile *af, const void *data, size_t len);
int atomic_commit(AtomicFile *af);  // flush, fsync, rename, fsync folder; frees af
void atomic_abort(AtomicFile *af);  // remove the temp file; frees af

// Temp paths a signal must not leave behind. atomic_open tracks its temp file (atomic_commit and
// atomic_abort untrack it); a writer that builds a temp folder tracks the folder and each file it
// puts in it. temps_remove() unlinks every tracked file and then removes every tracked folder,
// newest first; it is async-signal-safe (unlink/rmdir only), for a handler that must exit at once.
// At most TEMPS_MAX paths at a time (more are not tracked: a later sweep removes them).
#define TEMPS_MAX 32
void temps_track(const char *path, int is_dir);
void temps_untrack(const char *path);
void temps_remove(void);

// An exclusive advisory lock (flock) on DIR/.lock, held until dir_unlock or the process exits, so
// two processes never write one run folder. The lock file records the holder's pid. -1 + err
// ("DIR is in use by another frontier process (pid N)") when someone else holds it.
int dir_lock(const char *dir, int *fd_out);
void dir_unlock(int fd);

int mkdir_p(const char *path);           // like `mkdir -p`
int remove_tree(const char *path);       // like `rm -rf`; missing path is fine
int fsync_dir(const char *path);
int path_exists(const char *path);       // 1 if it exists (file or folder), else 0
int is_dir(const char *path);            // 1 if a folder
char *path_join(const char *a, const char *b);  // "a/b" (malloc'ed)
const char *path_basename(const char *path);
// A file or folder shipped with frontier (research/space.json, plan/): rel in the current folder,
// else next to the frontier binary. The path to use (malloc'ed): the first candidate if neither.
char *shipped_path(const char *rel);
int path_has_suffix(const char *path, const char *suffix);

// Expand inputs into a sorted list of files: a file is taken as is, a folder contributes its
// files ending in one of `exts` (e.g. {".jsonl", ".txt", NULL}), sorted by name. Errors if a path
// is unreadable or the result is empty.
int expand_inputs(const char *const *paths, int n_paths, const char *const *exts, char ***files_out,
                  int *n_files_out);
void free_string_list(char **list, int n);

// Size and modification time (ns) of a file.
int file_stat(const char *path, int64_t *size, int64_t *mtime_ns);
