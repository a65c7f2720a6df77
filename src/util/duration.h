// util/duration.h — durations as the flags write them: "90s", "5m", "1.5m", "1h", "300" (seconds).
#pragma once
#include <stddef.h>

// The longest duration a setting takes: a year of wall clock (longer is a typo, or 9e18, not a plan).
#define DURATION_MAX_S (365.0 * 86400)

// "90s", "5m", "1.5m", "1h", "300" (seconds) -> seconds, >= 0 and at most DURATION_MAX_S; -1 if
// malformed (not a finite number with one of the units s, m, min, h or none) or out of range.
double duration_parse(const char *s);
// Seconds as duration_parse reads them back, in the largest whole unit: 300 -> "5m", 7200 -> "2h",
// 90 -> "90s", 1.5 -> "1.5s".
void duration_format(double s, char *buf, size_t n);
