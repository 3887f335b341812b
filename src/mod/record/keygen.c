/*
 * keygen.c: "egressd record keygen KEY": a new ECDSA P-256 key, KEY (PEM,
 * mode 0600) and KEY.pub (PEM).  Neither file is ever overwritten: both
 * are created with O_EXCL|O_NOFOLLOW, and a KEY made before KEY.pub
 * turned out to exist is removed again.  mbedTLS's CTR-DRBG, seeded from
 * the system's entropy.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record.h"

static int
write_new(const char *path, const void *buf, size_t n, int mode)
{
	int fd, e;
	size_t off = 0;
	ssize_t w;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    mode);
	if (fd == -1)
		return -1;
	while (off < n) {
		w = write(fd, (const char *)buf + off, n - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	e = errno;
	if (fd != -1)
		close(fd);
	unlink(path);
	errno = e;
	return -1;
}

int
rec_keygen_main(int argc, char *argv[])
{
	struct eg_key *pk = NULL;
	char priv[1024], pub[512];
	char err[256], *pubpath;
	size_t plen;
	int rc = 1;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: egressd record keygen KEY\n");
		return 2;
	}
	if ((pubpath = eg_malloc(strlen(argv[1]) + 5)) == NULL)
		return 1;
	sprintf(pubpath, "%s.pub", argv[1]);
	if (access(pubpath, F_OK) == 0 || errno != ENOENT) {
		fprintf(stderr, "egressd: record keygen: %s exists; not "
		    "overwritten\n", pubpath);
		eg_free(pubpath);
		return 1;
	}
	if ((pk = eg_key_generate(err, sizeof(err))) == NULL) {
		fprintf(stderr, "egressd: record keygen: %s\n", err);
		eg_free(pubpath);
		return 1;
	}
	if (eg_key_pem(pk, 1, priv, sizeof(priv)) != 0 ||
	    eg_key_pem(pk, 0, pub, sizeof(pub)) != 0) {
		fprintf(stderr, "egressd: record keygen: cannot make a "
		    "key\n");
		goto out;
	}
	plen = strlen(priv);
	if (write_new(argv[1], priv, plen, 0600) == -1) {
		fprintf(stderr, "egressd: record keygen: %s: %s\n", argv[1],
		    errno == EEXIST ? "exists; not overwritten" :
		    strerror(errno));
		goto out;
	}
	if (write_new(pubpath, pub, strlen(pub), 0644) == -1) {
		fprintf(stderr, "egressd: record keygen: %s: %s\n", pubpath,
		    errno == EEXIST ? "exists; not overwritten" :
		    strerror(errno));
		unlink(argv[1]);
		goto out;
	}
	printf("%s: private key (keep it secret)\n%s: public key\n", argv[1],
	    pubpath);
	rc = 0;
out:
	explicit_bzero(priv, sizeof(priv));
	eg_key_free(pk);
	eg_free(pubpath);
	return rc;
}
