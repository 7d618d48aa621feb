/*
 * compat.so — preloaded (LD_PRELOAD) into Debian's ircd-ircu by
 * peers/ircu/start.sh, so that the package's binary starts from
 * peers/ircu/pkg on a machine whose open-file limit is below 1,048,576.
 * It changes two start-up checks and nothing else; see README.md.
 *
 * 1. Debian built ircu with MAXCONNECTIONS = 1,048,572 (configure takes it
 *    from the build machine's `ulimit -Hn`), and at start ircu exits
 *    ("ircd fd table too big") unless the hard RLIMIT_NOFILE is at least
 *    that, a limit only a process with CAP_SYS_RESOURCE can raise. Here
 *    getrlimit(RLIMIT_NOFILE) reports a hard limit of at least 1,048,576,
 *    and setrlimit(RLIMIT_NOFILE) lowers what it is asked to the real hard
 *    limit. ircu then runs with the real limit: accept() fails with EMFILE
 *    past it, as for every other server.
 * 2. ircu exits unless its own program is executable at the path compiled
 *    in (SPATH, /usr/sbin/ircd-ircu, used only by /RESTART). The package is
 *    unpacked into peers/ircu/pkg rather than installed (it conflicts with
 *    ircd-hybrid and ngircd), so access() on that path is answered for
 *    $IRCU_SPATH, the unpacked program.
 *
 * Built by peers/ircu/install.sh: cc -shared -fPIC -O2 -o pkg/compat.so compat.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define WANTED_NOFILE 1048576
#define DEBIAN_SPATH "/usr/sbin/ircd-ircu"

static int real_getrlimit(__rlimit_resource_t resource, struct rlimit *rlim)
{
    static int (*fn)(__rlimit_resource_t, struct rlimit *);
    if (!fn)
        fn = (int (*)(__rlimit_resource_t, struct rlimit *))dlsym(RTLD_NEXT, "getrlimit");
    return fn(resource, rlim);
}

int getrlimit(__rlimit_resource_t resource, struct rlimit *rlim)
{
    int rc = real_getrlimit(resource, rlim);
    if (rc == 0 && resource == RLIMIT_NOFILE && rlim->rlim_max != RLIM_INFINITY
        && rlim->rlim_max < WANTED_NOFILE)
        rlim->rlim_max = WANTED_NOFILE;
    return rc;
}

int setrlimit(__rlimit_resource_t resource, const struct rlimit *rlim)
{
    static int (*fn)(__rlimit_resource_t, const struct rlimit *);
    struct rlimit real, want;
    if (!fn)
        fn = (int (*)(__rlimit_resource_t, const struct rlimit *))dlsym(RTLD_NEXT, "setrlimit");
    if (resource != RLIMIT_NOFILE || real_getrlimit(RLIMIT_NOFILE, &real) != 0)
        return fn(resource, rlim);
    want = *rlim;
    if (real.rlim_max != RLIM_INFINITY) {
        if (want.rlim_max > real.rlim_max)
            want.rlim_max = real.rlim_max;
        if (want.rlim_cur > want.rlim_max)
            want.rlim_cur = want.rlim_max;
    }
    return fn(resource, &want);
}

int access(const char *path, int mode)
{
    static int (*fn)(const char *, int);
    const char *spath = getenv("IRCU_SPATH");
    if (!fn)
        fn = (int (*)(const char *, int))dlsym(RTLD_NEXT, "access");
    if (spath && *spath && strcmp(path, DEBIAN_SPATH) == 0)
        path = spath;
    return fn(path, mode);
}
