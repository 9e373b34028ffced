/*
 * /bin/sh of the busybox stand-in images: busybox's ash, except that `sh -c "<one simple command>"`
 * execs that command directly, as bash does. Debian's busybox 1.35 ash drops environment variables
 * whose names are not shell identifiers (`p-data-1`), which Kubernetes' ConfigMap and Secret specs
 * read with `sh -c env`; other specs expect ash's own error messages, so ash stays the shell.
 */
#include <ctype.h>
#include <string.h>
#include <unistd.h>

#define MAX_WORDS 64

/* Words of letters, digits and `_./=-:,+@%` only: nothing a shell would expand or redirect. */
static int simple(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr(" _./=-:,+@%", *s)) return 0;
  return 1;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "-c") == 0 && simple(argv[2])) {
    char buf[4096];
    char *words[MAX_WORDS + 1];
    int n = 0;
    strncpy(buf, argv[2], sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    for (char *w = strtok(buf, " "); w && n < MAX_WORDS; w = strtok(NULL, " ")) words[n++] = w;
    words[n] = NULL;
    /* `NAME=value cmd` is an assignment the shell must make */
    if (n > 0 && !strchr(words[0], '=')) execvp(words[0], words);
  }
  execv("/bin/busybox", argv);
  return 127;
}
