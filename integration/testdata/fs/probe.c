// probe: the compiled program of the filesystem tests (filesystem_linux_test.go).
//
//   probe write PATH...           mkdir -p the parent, then open(O_WRONLY|O_CREAT|O_APPEND)
//                                 and write a line: "WROTE PATH" or "refused PATH errno=N"
//   probe read PATH...            open and read: "READ PATH: CONTENT" or "refused read PATH errno=N"
//   probe unshare-read PATH...    unshare(CLONE_NEWUSER|CLONE_NEWNS), umount2(MNT_DETACH) each
//                                 PATH, then read each PATH
//   probe handle PATH             print PATH's file handle: "TYPE HEX" (name_to_handle_at)
//   probe byhandle DIR TYPE HEX   open_by_handle_at on DIR's filesystem and read the file
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void mkparents(const char *p) {
	char buf[4096];
	snprintf(buf, sizeof buf, "%s", p);
	for (char *s = buf + 1; *s; s++) {
		if (*s == '/') {
			*s = 0;
			mkdir(buf, 0755);
			*s = '/';
		}
	}
}

static void readfd(const char *what, int fd) {
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n < 0) {
		printf("refused read %s errno=%d\n", what, errno);
		return;
	}
	buf[n] = 0;
	printf("READ %s: %s\n", what, buf);
}

static void readfile(const char *p) {
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		printf("refused read %s errno=%d\n", p, errno);
		return;
	}
	readfd(p, fd);
	close(fd);
}

struct handle {
	struct file_handle fh;
	unsigned char buf[MAX_HANDLE_SZ];
};

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	if (!strcmp(mode, "write")) {
		for (int i = 2; i < argc; i++) {
			mkparents(argv[i]);
			int fd = open(argv[i], O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd < 0) {
				printf("refused %s errno=%d\n", argv[i], errno);
				continue;
			}
			if (write(fd, "pwned\n", 6) != 6)
				printf("short write %s errno=%d\n", argv[i], errno);
			close(fd);
			printf("WROTE %s\n", argv[i]);
		}
		return 0;
	}
	if (!strcmp(mode, "read")) {
		for (int i = 2; i < argc; i++)
			readfile(argv[i]);
		return 0;
	}
	if (!strcmp(mode, "unshare-read")) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
			printf("unshare refused errno=%d\n", errno);
		} else {
			printf("UNSHARED\n");
			for (int i = 2; i < argc; i++) {
				if (umount2(argv[i], MNT_DETACH) == 0)
					printf("UMOUNTED %s\n", argv[i]);
				else
					printf("umount refused %s errno=%d\n", argv[i], errno);
			}
		}
		for (int i = 2; i < argc; i++)
			readfile(argv[i]);
		return 0;
	}
	if (!strcmp(mode, "handle") && argc == 3) {
		struct handle h;
		int mnt;
		h.fh.handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, argv[2], &h.fh, &mnt, 0) != 0) {
			perror("name_to_handle_at");
			return 1;
		}
		printf("%d ", h.fh.handle_type);
		for (unsigned i = 0; i < h.fh.handle_bytes; i++)
			printf("%02x", h.fh.f_handle[i]);
		printf("\n");
		return 0;
	}
	if (!strcmp(mode, "byhandle") && argc == 5) {
		struct handle h;
		const char *hex = argv[4];
		size_t n = strlen(hex) / 2;
		if (n > MAX_HANDLE_SZ)
			return 2;
		h.fh.handle_type = atoi(argv[3]);
		h.fh.handle_bytes = n;
		for (size_t i = 0; i < n; i++) {
			unsigned v;
			sscanf(hex + 2 * i, "%2x", &v);
			h.fh.f_handle[i] = v;
		}
		int mfd = open(argv[2], O_RDONLY | O_DIRECTORY);
		if (mfd < 0) {
			printf("refused open %s errno=%d\n", argv[2], errno);
			return 0;
		}
		int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY);
		if (fd < 0) {
			printf("refused byhandle errno=%d\n", errno);
			return 0;
		}
		readfd("byhandle", fd);
		return 0;
	}
	fprintf(stderr, "probe: bad arguments\n");
	return 2;
}
