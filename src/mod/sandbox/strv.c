/*
 * strv.c: the small helpers every file of the sandbox module uses: the
 * path prefix test and the number of an option (the string vector is
 * src/mod/common/strv.c's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

int
sb_path_under(const char *path, const char *dir)
{
	size_t n;

	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

int
sb_num(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}
