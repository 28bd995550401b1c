/* tests/unit/smbd/fuzz_replay.c — runs a fuzz target's committed corpus
 * through its entry point in an ordinary build (no libFuzzer), so every CI
 * run replays the seeds and the crashers we kept.  Usage: replay DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	uint8_t *buf = malloc(1 << 20);
	size_t n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	/* an exact-size copy, so ASan sees any read past the input */
	uint8_t *exact = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		exact[i] = buf[i];
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			errors++;
			continue;
		}
		for (struct dirent *e; (e = readdir(d));) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			errors += replay_file(path);
			files++;
		}
		closedir(d);
	}
	fprintf(stderr, "replayed %d inputs\n", files);
	return errors || !files ? 1 : 0;
}
