// util/json_file.h — a JSON document to and from a file, the one way every module does it:
// written pretty-printed (cJSON_Print), ended by a newline, replaced atomically (util/fileio.h:
// temp file, fsync, rename), so a reader never sees half a document; read as one JSON object.
#pragma once
#include <cjson/cJSON.h>

// 0, or -1 + err naming the path (out of memory printing, or the write).
int json_write_atomic(const char *path, const cJSON *j);
// The JSON object in the file at path (caller deletes), or NULL + err: "WHAT PATH: not a JSON object"
// (what names where the path came from, e.g. a flag), or the read error prefixed with what.
cJSON *json_read_object(const char *path, const char *what);
// A number / string member of a JSON object: NaN / NULL when absent or of another type.
double jnum(const cJSON *o, const char *key);
const char *jstr(const cJSON *o, const char *key);
