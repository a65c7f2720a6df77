// util/json_file.h — writing a JSON document to a file, the one way every module does it:
// pretty-printed (cJSON_Print), ended by a newline, replaced atomically (util/fileio.h: temp file,
// fsync, rename), so a reader never sees half a document.
#pragma once
#include <cjson/cJSON.h>

// 0, or -1 + err naming the path (out of memory printing, or the write).
int json_write_atomic(const char *path, const cJSON *j);
