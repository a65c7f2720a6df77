// util/fileio.c — files and folders, with atomic replacement (see fileio.h).
#include "util/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/faults.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { err_errno("cannot open %s", path); return NULL; }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode)) {
        fclose(f);
        err_set("cannot read %s: %s", path, S_ISDIR(st.st_mode) ? "is a folder" : "stat failed");
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); err_set("read error on %s", path); return NULL; }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int file_stat(const char *path, int64_t *size, int64_t *mtime_ns) {
    struct stat st;
    if (stat(path, &st) != 0) return err_errno("cannot stat %s", path);
    if (size) *size = st.st_size;
    if (mtime_ns) *mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return 0;
}

int path_exists(const char *path) { struct stat st; return stat(path, &st) == 0; }

int is_dir(const char *path) { struct stat st; return stat(path, &st) == 0 && S_ISDIR(st.st_mode); }

// ---------------------------------------------------------------------------------------------
// Tracked temp paths (for a signal handler that exits at once)
// ---------------------------------------------------------------------------------------------

// Slots are claimed and released by the (one) writing thread; the handler only reads them. A slot
// is published by setting `used` last, so the handler never sees a half-copied path.
static struct {
    char path[PATH_MAX];
    int is_dir;
    volatile sig_atomic_t used;
} g_temps[TEMPS_MAX];

void temps_track(const char *path, int is_dir) {
    if (strlen(path) >= PATH_MAX) return;
    for (int i = 0; i < TEMPS_MAX; i++)
        if (!g_temps[i].used) {
            strcpy(g_temps[i].path, path);
            g_temps[i].is_dir = is_dir;
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            g_temps[i].used = i + 1;  // > 0; also the order of tracking for temps_remove
            return;
        }
}

void temps_untrack(const char *path) {
    for (int i = 0; i < TEMPS_MAX; i++)
        if (g_temps[i].used && !strcmp(g_temps[i].path, path)) { g_temps[i].used = 0; return; }
}

void temps_remove(void) {
    for (int i = 0; i < TEMPS_MAX; i++)
        if (g_temps[i].used && !g_temps[i].is_dir) unlink(g_temps[i].path);
    for (int i = TEMPS_MAX - 1; i >= 0; i--)
        if (g_temps[i].used && g_temps[i].is_dir) rmdir(g_temps[i].path);
}

// ---------------------------------------------------------------------------------------------
// Folder locks
// ---------------------------------------------------------------------------------------------

int dir_lock(const char *dir, int *fd_out) {
    char *path = path_join(dir, ".lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) { err_errno("cannot create %s", path); free(path); return -1; }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        char pid[32] = "";
        ssize_t n = busy ? pread(fd, pid, sizeof pid - 1, 0) : -1;
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        if (busy)
            err_set("%s is in use by another frontier process%s%s%s: wait for it to finish, or stop it first", dir,
                    pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
        else
            err_errno("cannot lock %s", path);
        close(fd);
        free(path);
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        err_errno("cannot write %s", path);
        close(fd);
        free(path);
        return -1;
    }
    free(path);
    *fd_out = fd;
    return 0;
}

void dir_unlock(int fd) {
    if (fd >= 0) close(fd);
}

// ---------------------------------------------------------------------------------------------
// Atomic writing: temp file, fsync, rename, fsync the folder
// ---------------------------------------------------------------------------------------------

static char *parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return xstrdup(".");
    if (slash == path) return xstrdup("/");
    size_t n = (size_t)(slash - path);
    char *d = xmalloc(n + 1);
    memcpy(d, path, n);
    d[n] = 0;
    return d;
}

int fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return err_errno("cannot open folder %s", path);
    int rc = fsync(fd);
    close(fd);
    return rc == 0 ? 0 : err_errno("fsync %s", path);
}

static void atomic_free(AtomicFile *af) {
    if (af->tmp_path) temps_untrack(af->tmp_path);
    free(af->path);
    free(af->tmp_path);
    af->path = af->tmp_path = NULL;
    af->f = NULL;
}

int atomic_open(AtomicFile *af, const char *path) {
    af->path = xstrdup(path);
    size_t n = strlen(path) + 32;
    af->tmp_path = xmalloc(n);
    snprintf(af->tmp_path, n, "%s.tmp-%d", path, (int)getpid());
    temps_track(af->tmp_path, 0);
    af->f = fopen(af->tmp_path, "wb");
    if (!af->f) {
        err_errno("cannot create %s", af->tmp_path);
        atomic_free(af);
        return -1;
    }
    return 0;
}

int atomic_write(AtomicFile *af, const void *data, size_t len) {
    fault_point("write");
    if (fault_fails("write") || (len && fwrite(data, 1, len, af->f) != len))
        return err_errno("write error on %s", af->tmp_path);
    return 0;
}

void atomic_abort(AtomicFile *af) {
    if (af->f) fclose(af->f);
    if (af->tmp_path) unlink(af->tmp_path);
    atomic_free(af);
}

int atomic_commit(AtomicFile *af) {
    if (fflush(af->f) != 0 || fsync(fileno(af->f)) != 0) {
        err_errno("cannot flush %s", af->tmp_path);
        atomic_abort(af);
        return -1;
    }
    if (fclose(af->f) != 0) {
        af->f = NULL;
        err_errno("cannot close %s", af->tmp_path);
        atomic_abort(af);
        return -1;
    }
    af->f = NULL;
    fault_point("rename");
    if (rename(af->tmp_path, af->path) != 0) {
        err_errno("cannot rename %s to %s", af->tmp_path, af->path);
        atomic_abort(af);
        return -1;
    }
    char *dir = parent_dir(af->path);
    int rc = fsync_dir(dir);
    free(dir);
    atomic_free(af);
    return rc;
}

int write_file_atomic(const char *path, const void *data, size_t len) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return -1;
    if (atomic_write(&af, data, len) != 0) { atomic_abort(&af); return -1; }
    return atomic_commit(&af);
}

// ---------------------------------------------------------------------------------------------
// Folders and paths
// ---------------------------------------------------------------------------------------------

int mkdir_p(const char *path) {
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) { err_errno("cannot create folder %s", p); free(p); return -1; }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = err_errno("cannot create folder %s", p);
    else if (!is_dir(p)) rc = err_set("cannot create folder %s: a file of that name exists", p);
    free(p);
    return rc;
}

int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : err_errno("cannot stat %s", path);
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) return err_errno("cannot open folder %s", path);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *child = path_join(path, e->d_name);
            int rc = remove_tree(child);
            free(child);
            if (rc) { closedir(d); return -1; }
        }
        closedir(d);
        if (rmdir(path) != 0) return err_errno("cannot remove folder %s", path);
        return 0;
    }
    return unlink(path) == 0 ? 0 : err_errno("cannot remove %s", path);
}

char *path_join(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *p = xmalloc(na + nb + 2);
    memcpy(p, a, na);
    size_t k = na;
    if (na && a[na - 1] != '/') p[k++] = '/';
    memcpy(p + k, b, nb + 1);
    return p;
}

const char *path_basename(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int path_has_suffix(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix);
    return n >= m && memcmp(path + n - m, suffix, m) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has_any_suffix(const char *name, const char *const *exts) {
    for (int i = 0; exts[i]; i++)
        if (path_has_suffix(name, exts[i])) return 1;
    return 0;
}

int expand_inputs(const char *const *paths, int n_paths, const char *const *exts, char ***files_out,
                  int *n_files_out) {
    char **files = NULL;
    size_t cap = 0, n = 0;
    for (int i = 0; i < n_paths; i++) {
        struct stat st;
        if (stat(paths[i], &st) != 0) {
            err_errno("input %s", paths[i]);
            free_string_list(files, (int)n);
            return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (access(paths[i], R_OK) != 0) { err_errno("input %s", paths[i]); free_string_list(files, (int)n); return -1; }
            GROW(files, cap, n + 1);
            files[n++] = xstrdup(paths[i]);
            continue;
        }
        DIR *d = opendir(paths[i]);
        if (!d) { err_errno("cannot open folder %s", paths[i]); free_string_list(files, (int)n); return -1; }
        size_t first = n;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' || !has_any_suffix(e->d_name, exts)) continue;
            GROW(files, cap, n + 1);
            files[n++] = path_join(paths[i], e->d_name);
        }
        closedir(d);
        if (n > first) qsort(files + first, n - first, sizeof *files, cmp_str);
    }
    if (n == 0) {
        err_set("no input files found in %s (expected files ending in %s%s%s)", n_paths ? paths[0] : "(none)",
                exts[0], exts[1] ? " or " : "", exts[1] ? exts[1] : "");
        free(files);
        return -1;
    }
    *files_out = files;
    *n_files_out = (int)n;
    return 0;
}

void free_string_list(char **list, int n) {
    if (!list) return;
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
}

char *shipped_path(const char *rel) {
    if (path_exists(rel)) return xstrdup(rel);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            char *p = path_join(exe, rel);
            if (path_exists(p)) return p;
            free(p);
        }
    }
    return xstrdup(rel);
}
