/*
 * sprout-box: run one command in fresh namespaces over an overlayfs layer stack.
 *
 * Why a C helper: a shell call must cost milliseconds. Starting a Python
 * interpreter or chaining mount(8) processes per call costs tens of them, and
 * forking a threaded Python process to call unshare(2) is unsafe. This helper
 * does only the kernel plumbing; every decision (which layers, which limits)
 * is made by sprout.sandbox.overlay and passed on the command line.
 *
 * Process shape:  helper --fork--> init (PID 1 of the new PID namespace)
 *                                   --fork--> command
 * When the command exits, init exits, and the kernel kills everything left in
 * the namespace: no process outlives its call. If the helper is killed (a
 * timeout), init gets SIGKILL through PR_SET_PDEATHSIG, with the same effect.
 *
 * Exit status: the command's exit code, 128+N when a signal N ended it, and
 * 125 with a "sprout-box: ..." line on stderr when the sandbox could not be
 * set up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define SETUP_FAILED 125
#define MAX_MASKS 16

struct options {
    const char *layer_root;   /* directory the relative layer names live in */
    const char *lowerdirs;    /* overlay lowerdir value, top first */
    const char *upper;
    const char *work;
    const char *mountpoint;   /* scratch directory: a tmpfs holding the new root goes here */
    const char *workdir;      /* current directory of the command */
    const char *masks[MAX_MASKS];
    int n_masks;
    int userns;               /* rootless: map our uid to 0 in a user namespace */
    int host;                 /* the image is this machine's root filesystem */
    int no_network;
    rlim_t nproc, fsize, cpu, nofile;
    char **argv;
};

static void die(const char *fmt, ...) {
    va_list ap;
    fputs("sprout-box: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (errno) fprintf(stderr, ": %s", strerror(errno));
    fputc('\n', stderr);
    _exit(SETUP_FAILED);
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        die("cannot write %s", path);
    close(fd);
}

static void enter_user_namespace(uid_t uid, gid_t gid) {
    char map[64];
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "0 %u 1", uid);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "0 %u 1", gid);
    write_file("/proc/self/gid_map", map);
}

static void mount_or_die(const char *src, const char *dst, const char *type,
                         unsigned long flags, const char *data) {
    if (mount(src, dst, type, flags, data) < 0)
        die("mount %s on %s", type ? type : src, dst);
}

static void bind_device(const char *name) {
    char host[64], inside[64];
    snprintf(host, sizeof host, "/dev/%s", name);
    snprintf(inside, sizeof inside, "dev/%s", name);
    int fd = open(inside, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) die("create %s", inside);
    close(fd);
    mount_or_die(host, inside, NULL, MS_BIND, NULL);
}

/* A minimal /dev: the harmless character devices, a private devpts and shm.
 * Host block devices never appear because /dev is a fresh tmpfs. */
static void make_dev(void) {
    static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
    mount_or_die("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k");
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++) bind_device(devices[i]);
    if (mkdir("dev/pts", 0755) < 0) die("mkdir dev/pts");
    mount_or_die("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                 "newinstance,ptmxmode=0666,mode=620");
    if (mkdir("dev/shm", 01777) < 0) die("mkdir dev/shm");
    mount_or_die("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    if (symlink("pts/ptmx", "dev/ptmx") < 0 || symlink("/proc/self/fd", "dev/fd") < 0 ||
        symlink("/proc/self/fd/0", "dev/stdin") < 0 ||
        symlink("/proc/self/fd/1", "dev/stdout") < 0 ||
        symlink("/proc/self/fd/2", "dev/stderr") < 0)
        die("symlink in dev");
}

static void loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    if (fd < 0) die("socket");
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) die("get lo flags");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) die("bring lo up");
    close(fd);
}

static void set_limit(int resource, rlim_t value) {
    struct rlimit lim = {value, value};
    if (value == 0) return;  /* 0 means "leave as inherited" */
    if (setrlimit(resource, &lim) < 0) die("setrlimit %d", resource);
}

/* A volatile overlay leaves work/incompat/volatile behind, and the kernel
 * refuses to mount that workdir again until it is gone. */
static void clear_volatile_marker(const char *work) {
    char path[4096];
    snprintf(path, sizeof path, "%s/work/incompat/volatile/dirty", work);
    if (unlink(path) < 0 && errno != ENOENT) die("unlink %s", path);
    snprintf(path, sizeof path, "%s/work/incompat/volatile", work);
    if (rmdir(path) < 0 && errno != ENOENT) die("rmdir %s", path);
    errno = 0;
}

static void assemble_root(const struct options *o) {
    char data[4096], host_view[4200] = "", root[4200];
    int n;

    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
    if (chdir(o->layer_root) < 0) die("chdir %s", o->layer_root);
    clear_volatile_marker(o->work);
    /* Scratch tmpfs: mountpoints for the host view and the new root. */
    mount_or_die("tmpfs", o->mountpoint, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16k");
    snprintf(root, sizeof root, "%s/root", o->mountpoint);
    if (mkdir(root, 0755) < 0) die("mkdir %s", root);
    if (o->host) {
        /* overlayfs refuses a lower layer whose ancestor is another lower layer,
         * and every layer in the store descends from "/". A read-only overlay
         * of "/" is a separate superblock, so the layers no longer descend
         * from a lower layer's root. */
        char empty[4200];
        snprintf(empty, sizeof empty, "%s/empty", o->mountpoint);
        snprintf(host_view, sizeof host_view, "%s/host", o->mountpoint);
        if (mkdir(empty, 0755) < 0 || mkdir(host_view, 0755) < 0) die("mkdir in scratch");
        snprintf(data, sizeof data, "lowerdir=/:%s,redirect_dir=nofollow,index=off,metacopy=off",
                 empty);
        mount_or_die("overlay", host_view, "overlay", MS_RDONLY, data);
    }
    /* volatile: unmounting at namespace teardown must not sync the upper
     * filesystem on every call; checkpoints flush explicitly instead. */
    n = snprintf(data, sizeof data,
                 "lowerdir=%s%s%s,upperdir=%s,workdir=%s,volatile,redirect_dir=nofollow,"
                 "index=off,metacopy=off%s",
                 o->lowerdirs, *o->lowerdirs && o->host ? ":" : "", host_view, o->upper,
                 o->work, o->userns ? ",userxattr" : "");
    if (n < 0 || (size_t)n >= sizeof data) {
        errno = E2BIG;
        die("overlay options longer than one page (%d bytes)", n);
    }
    mount_or_die("overlay", root, "overlay", 0, data);
    if (chdir(root) < 0) die("chdir %s", root);
    for (int i = 0; i < o->n_masks; i++) {
        const char *inside = o->masks[i] + 1; /* relative to the new root */
        if (access(inside, F_OK) == 0)
            mount_or_die("tmpfs", inside, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                         "mode=755,size=4k");
    }
    if (access("proc", F_OK) == 0)
        mount_or_die("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    if (access("dev", F_OK) == 0) make_dev();
    if (syscall(SYS_pivot_root, ".", ".") < 0) die("pivot_root");
    if (umount2(".", MNT_DETACH) < 0) die("detach the old root");
    if (chdir("/") < 0) die("chdir /");
}

static int run_init(const struct options *o, int alive) {
    int status;
    pid_t command, pid;

    /* Our parent lives outside the new PID namespace, so getppid() reads 0
     * and cannot tell whether it died before PR_SET_PDEATHSIG was armed.
     * The helper holds the read end of `alive`: a write fails once it is gone. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) die("prctl");
    signal(SIGPIPE, SIG_IGN);
    if (write(alive, "", 1) != 1) _exit(SETUP_FAILED);
    close(alive);
    signal(SIGPIPE, SIG_DFL);
    assemble_root(o);
    if (sethostname("sprout", 6) < 0) die("sethostname");
    if (o->no_network) loopback_up();

    command = fork();
    if (command < 0) die("fork");
    if (command == 0) {
        set_limit(RLIMIT_NPROC, o->nproc);
        set_limit(RLIMIT_FSIZE, o->fsize);
        set_limit(RLIMIT_CPU, o->cpu);
        set_limit(RLIMIT_NOFILE, o->nofile);
        /* An agent may delete its own workdir; later calls still run, from /. */
        if (chdir(o->workdir) < 0) {
            fprintf(stderr, "sprout-box: cannot enter %s (%s); running in /\n", o->workdir,
                    strerror(errno));
            if (chdir("/") < 0) die("chdir /");
        }
        execvp(o->argv[0], o->argv);
        die("exec %s", o->argv[0]);
    }
    /* PID 1 reaps orphans until the command itself ends. */
    for (;;) {
        pid = waitpid(-1, &status, 0);
        if (pid == command) break;
        if (pid < 0 && errno != EINTR) die("waitpid");
    }
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static rlim_t parse_limit(const char *text) {
    char *end;
    unsigned long long value = strtoull(text, &end, 10);
    if (*end) {
        errno = EINVAL;
        die("bad limit %s", text);
    }
    return (rlim_t)value;
}

static void parse(int argc, char **argv, struct options *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->workdir = "/";
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *flag = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(flag, "--userns")) { o->userns = 1; continue; }
        if (!strcmp(flag, "--no-network")) { o->no_network = 1; continue; }
        if (!strcmp(flag, "--host")) { o->host = 1; continue; }
        if (!value) { errno = EINVAL; die("%s needs a value", flag); }
        i++;
        if (!strcmp(flag, "--layer-root")) o->layer_root = value;
        else if (!strcmp(flag, "--lower")) o->lowerdirs = value;
        else if (!strcmp(flag, "--upper")) o->upper = value;
        else if (!strcmp(flag, "--work")) o->work = value;
        else if (!strcmp(flag, "--mountpoint")) o->mountpoint = value;
        else if (!strcmp(flag, "--workdir")) o->workdir = value;
        else if (!strcmp(flag, "--mask")) {
            if (o->n_masks == MAX_MASKS || value[0] != '/') { errno = EINVAL; die("--mask %s", value); }
            o->masks[o->n_masks++] = value;
        }
        else if (!strcmp(flag, "--nproc")) o->nproc = parse_limit(value);
        else if (!strcmp(flag, "--fsize")) o->fsize = parse_limit(value);
        else if (!strcmp(flag, "--cpu")) o->cpu = parse_limit(value);
        else if (!strcmp(flag, "--nofile")) o->nofile = parse_limit(value);
        else { errno = EINVAL; die("unknown option %s", flag); }
    }
    if (!o->layer_root || !o->lowerdirs || !o->upper || !o->work || !o->mountpoint ||
        i + 1 >= argc) {
        errno = EINVAL;
        die("usage: sprout-box --layer-root D --lower L --upper U --work W --mountpoint M "
            "[--workdir P] [--mask P]... [--host] [--userns] [--no-network] -- COMMAND...");
    }
    o->argv = argv + i + 1;
}

int main(int argc, char **argv) {
    struct options o;
    int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
    uid_t uid = getuid();
    gid_t gid = getgid();
    pid_t init;
    int status, alive[2];

    parse(argc, argv, &o);
    /* If the caller dies (kill -9 of the agent process), the call dies with it:
     * otherwise it would go on writing into a layer that GC will free. */
    pid_t caller = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) die("prctl");
    if (getppid() != caller) return SETUP_FAILED;
    if (o.userns) flags |= CLONE_NEWUSER;
    if (o.no_network) flags |= CLONE_NEWNET;
    if (unshare(flags) < 0) die("unshare");
    if (o.userns) enter_user_namespace(uid, gid);

    if (pipe2(alive, O_CLOEXEC) < 0) die("pipe");
    init = fork();
    if (init < 0) die("fork");
    if (init == 0) {
        close(alive[0]);
        _exit(run_init(&o, alive[1]));
    }
    close(alive[1]);
    while (waitpid(init, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
