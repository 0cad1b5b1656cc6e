/*
 * sprout-box: run one command in a jail over an overlayfs layer stack.
 *
 * Why a C helper: a shell call must cost milliseconds. Starting a Python
 * interpreter or chaining mount(8) processes per call costs tens of them, and
 * forking a threaded Python process to call unshare(2) is unsafe. This helper
 * does only the kernel plumbing; every decision (which layers, which limits,
 * which host paths the image shows) is made by sprout.sandbox and passed on
 * the command line.
 *
 * Two ways in, one jail:
 *   --idmap HOST:COUNT  (run as root) the helper mounts everything as host
 *       root in namespaces that host root owns, then the command joins a user
 *       namespace mapping sandbox ids 0..COUNT-1 to host ids HOST.. . Because
 *       the mount, UTS, IPC, network and PID namespaces belong to the host's
 *       user namespace, root inside holds no capability over any of them: it
 *       cannot mount, unmount, set the hostname or touch host sysctls.
 *   --rootless  (not root) the helper maps its own uid to 0 in a new user
 *       namespace and mounts inside it (overlayfs with userxattr). With a
 *       network (--netns-fd and --userns-fd, both of a --hold-network
 *       --rootless holder), it first joins the holder's user and network
 *       namespaces and makes its user namespace inside the holder's: root
 *       inside then holds no capability over the network, whose owner is the
 *       holder's namespace, not its own.
 * Either way the command then runs with a container engine's default
 * capability set, no_new_privs and a seccomp filter, in cgroups the caller
 * made, with /proc masked as runc masks it and a minimal /dev; with --user, as
 * that uid, gid and groups (the image's USER), without capabilities when not 0.
 *
 * Process shape (no exec but the command's: the launcher is this program):
 *   as root:   launcher --clone--> call, PID 1 of a new PID namespace (its init)
 *                                  --fork--> command
 *   rootless:  launcher --fork--> call --fork--> init (PID 1 of the new PID namespace)
 *                                                --fork--> command
 *   without the launcher:  sprout-box --fork--> init --fork--> command
 * The launcher (--launcher, below) is the sandbox's one process inside its cgroups, so
 * that a call joins none; as root it also holds the sandbox's user namespace, made once
 * (sandbox_users). The first call after a checkpoint mounts the sandbox's root (its
 * layers' overlay, the image, /dev: build_root) in a mount namespace whose descriptor it
 * hands the launcher; the calls after it enter that namespace (enter_view) and mount only
 * what is theirs alone: /proc, /dev/pts and /dev/shm, in a mount, IPC and PID namespace of
 * their own. When the command exits, init exits, and the kernel kills everything left in the
 * namespace: no process outlives its call. The call's mounts go after its status is sent:
 * the launcher holds its mount namespace until then (send_call_mounts). If the call is killed (a timeout), init gets
 * SIGKILL through PR_SET_PDEATHSIG, with the same effect. Without the launcher (an
 * interactive shell), one process does all of it: `sprout-box OPTIONS -- COMMAND`.
 *
 * The command's text comes as an inherited, sealed memfd (--script-fd), which
 * the shell runs as the script /proc/self/fd/3: Linux caps one argument at
 * 128 KiB, and the memfd lies on no filesystem the sandbox writes.
 *
 * Exit status: the command's exit code, 128+N when a signal N ended it, and
 * 125 with a "sprout-box: ..." line on stderr when the sandbox could not be
 * set up.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#ifdef SPROUT_SECCOMP
#include <seccomp.h>
#endif

#define SETUP_FAILED 125
#define MAX_CGROUPS 8
#define PATH_LEN 4200
#define SCRIPT_FD 3 /* where --script-fd puts the command's script: /proc/self/fd/3 */
#define MAX_GROUPS 64

struct options {
    const char *layer_root;   /* directory the relative layer names live in */
    const char *lowerdirs;    /* overlay lowerdir value, top first, relative to layer_root */
    const char *upper;
    const char *work;
    const char *scratch;      /* empty directory, relative to layer_root: a tmpfs goes here */
    const char *workdir;      /* current directory of the command */
    const char *image;        /* root-filesystem directory under the layers, or NULL */
    int host;                 /* the image is this machine's root filesystem */
    unsigned long map_host, map_count; /* --idmap */
    int rootless;
    int no_network;
    int netns_fd;             /* --netns-fd: the sandbox's network namespace, or -1 */
    int userns_fd;            /* --userns-fd (rootless): the user namespace owning it, or -1 */
    const char *seccomp;      /* a BPF program from --write-seccomp */
    const char *cgroups[MAX_CGROUPS];
    int n_cgroups;
    int in_cgroups;           /* --in-cgroup: started inside them (by the launcher), checked */
    rlim_t nproc, fsize, cpu, nofile;
    int script_fd;            /* --script-fd: an inherited fd, moved to SCRIPT_FD, or -1 */
    int timings_fd;           /* --timings-fd: where each phase's end is written, or -1 */
    int has_user;             /* --user: run the command as these ids, not the sandbox's root */
    uid_t uid;
    gid_t gid;
    gid_t groups[MAX_GROUPS];
    size_t n_groups;
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

/* --timings-fd: "PHASE NANOSECONDS\n" (CLOCK_MONOTONIC, as Python's time.monotonic_ns) when
 * a phase of the call ends, for `sprout bench sandbox` to say where a call's time goes. One
 * write(2) per line, so the lines of init and the command never interleave. */
static int timings_fd = -1;

static void mark(const char *phase) {
    struct timespec now;
    char line[96];
    int n;
    if (timings_fd < 0) return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    n = snprintf(line, sizeof line, "%s %lld\n", phase,
                 (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
    if (write(timings_fd, line, (size_t)n) < 0) timings_fd = -1;
}

static void mount_or_die(const char *src, const char *dst, const char *type,
                         unsigned long flags, const char *data) {
    if (mount(src, dst, type, flags, data) < 0)
        die("mount %s on %s", type ? type : src, dst);
}

/* ---- user namespaces ------------------------------------------------------------- */

static void map_self_to_root(void) {
    char map[64];
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER) < 0) die("unshare a user namespace");
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "0 %u 1", uid);
    write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "0 %u 1", gid);
    write_file("/proc/self/gid_map", map);
}

/* A user namespace mapping 0..count-1 to host ids host.., held by an fd.
 * A short-lived child creates it; we write its maps (only a process outside
 * may map more than its own id) and keep a reference to it. */
static int make_user_namespace(unsigned long host, unsigned long count) {
    int ready[2], done[2], fd;
    char path[64], map[64], byte = 0;
    pid_t child;

    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0) die("pipe");
    child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        close(ready[0]);
        close(done[1]);
        if (unshare(CLONE_NEWUSER) < 0) _exit(1);
        if (write(ready[1], &byte, 1) != 1) _exit(1);
        if (read(done[0], &byte, 1) < 0) _exit(1); /* returns at EOF: the parent is done */
        _exit(0);
    }
    close(ready[1]);
    close(done[0]);
    if (read(ready[0], &byte, 1) != 1) {
        errno = EPERM;
        die("could not create a user namespace");
    }
    snprintf(map, sizeof map, "0 %lu %lu", host, count);
    snprintf(path, sizeof path, "/proc/%d/uid_map", child);
    write_file(path, map);
    snprintf(path, sizeof path, "/proc/%d/gid_map", child);
    write_file(path, map);
    snprintf(path, sizeof path, "/proc/%d/ns/user", child);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open %s", path);
    close(done[1]);
    close(ready[0]);
    while (waitpid(child, NULL, 0) < 0)
        if (errno != EINTR) die("waitpid");
    return fd;
}

/* As root, the sandbox's user namespace, made once by its launcher (`--launcher --idmap`)
 * and inherited by each call, so that the root built after each checkpoint joins it rather
 * than making another (a short-lived child and its maps: most of a millisecond on every
 * turn). It maps the store's id range, one for the machine, and holds nothing a call could
 * leave to the next: every namespace a call makes inside it goes with the call's processes,
 * and the calls between two checkpoints already shared it. -1 in a helper of its own (an
 * interactive shell), or rootless, where each root's user namespace is the call's own. */
static struct {
    int fd;
    unsigned long host, count;
} sandbox_users = {-1, 0, 0};

/* The user namespace for a root with the ids `o` maps: the launcher's when it maps them.
 * A launcher's call runs as PID 1 of its own namespace (start_call) and may not make one:
 * make_user_namespace names its child in the host's /proc by a pid of the call's. */
static int user_namespace_for(const struct options *o) {
    if (sandbox_users.fd >= 0 && sandbox_users.host == o->map_host &&
        sandbox_users.count == o->map_count)
        return sandbox_users.fd;
    if (sandbox_users.fd >= 0) {
        errno = EINVAL;
        die("--idmap %lu:%lu: the launcher maps %lu:%lu", o->map_host, o->map_count,
            sandbox_users.host, sandbox_users.count);
    }
    return make_user_namespace(o->map_host, o->map_count);
}

/* ---- the root filesystem ----------------------------------------------------------- */

/* A detached copy of the mount at `source` (not its submounts) placed at `target`;
 * with a user namespace fd, ids on disk read as that namespace maps them, so an
 * image owned by host root is owned by the sandbox's root. */
static void clone_mount(const char *source, const char *target, int userns, int read_only) {
    struct mount_attr attr = {0};
    int tree = open_tree(AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0) die("clone the mount of %s", source);
    if (userns >= 0) {
        attr.attr_set |= MOUNT_ATTR_IDMAP;
        attr.userns_fd = userns;
    }
    if (read_only) attr.attr_set |= MOUNT_ATTR_RDONLY;
    attr.attr_set |= MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID;
    if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
        die("set attributes on the mount of %s", source);
    if (move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        die("attach %s at %s", source, target);
    close(tree);
}

static void make_dir(const char *path, mode_t mode) {
    if (mkdir(path, mode) < 0) die("mkdir %s", path);
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

/* A minimal /dev, owned by the sandbox's root: the harmless character devices, and the
 * folders of a devpts and a shm that each call mounts afresh (call_dev). Host block devices
 * never appear because /dev is a fresh tmpfs; it is read-only, since it outlives a call (it
 * is part of the root the launcher keeps) and what one call left there must not reach the
 * next. */
static void make_dev(unsigned long root_id) {
    static const char *devices[] = {"null", "zero", "full", "random", "urandom", "tty"};
    char options[128];
    snprintf(options, sizeof options, "mode=755,size=64k,uid=%lu,gid=%lu", root_id, root_id);
    mount_or_die("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, options);
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++) bind_device(devices[i]);
    make_dir("dev/pts", 0755);
    make_dir("dev/shm", 01777);
    if (symlink("pts/ptmx", "dev/ptmx") < 0 || symlink("/proc/self/fd", "dev/fd") < 0 ||
        symlink("/proc/self/fd/0", "dev/stdin") < 0 ||
        symlink("/proc/self/fd/1", "dev/stdout") < 0 ||
        symlink("/proc/self/fd/2", "dev/stderr") < 0)
        die("symlink in dev");
    mount_or_die(NULL, "dev", NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL);
}

/* As root, the /dev of every root a launcher's calls build: make_dev's, made once when the
 * launcher starts (make_dev_template) and kept as a detached mount. A root attaches a clone
 * of it, two calls instead of a tmpfs mounted and filled (about twenty); they share one
 * read-only tmpfs, as the calls between two checkpoints already did. -1 without the
 * launcher, rootless, or where the kernel cannot clone a detached mount (older kernels
 * refuse to): each root then makes its own. */
static int dev_template = -1;

static void attach_dev_template(void) {
    int tree = open_tree(dev_template, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                               AT_EMPTY_PATH);
    if (tree < 0) die("clone the sandbox's /dev");
    if (move_mount(tree, "", AT_FDCWD, "dev", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        die("attach the sandbox's /dev");
    close(tree);
}

/* A call's own devpts and shm under the sandbox's /dev (when its image has one): no
 * terminal or shared memory of one call is seen by the next. */
static void call_dev(unsigned long root_id) {
    char options[128];
    if (access("dev/pts", F_OK) != 0) return;
    mount_or_die("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                 "newinstance,ptmxmode=0666,mode=620");
    snprintf(options, sizeof options, "mode=1777,uid=%lu,gid=%lu", root_id, root_id);
    mount_or_die("tmpfs", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options);
}

/* A volatile overlay leaves work/incompat/volatile behind, and the kernel
 * refuses to mount that workdir again until it is gone. */
static void clear_volatile_marker(const char *work) {
    char path[PATH_LEN];
    snprintf(path, sizeof path, "%s/work/incompat/volatile/dirty", work);
    if (unlink(path) < 0 && errno != ENOENT) die("unlink %s", path);
    snprintf(path, sizeof path, "%s/work/incompat/volatile", work);
    if (rmdir(path) < 0 && errno != ENOENT) die("rmdir %s", path);
    errno = 0;
}

/* Mounts the sandbox's root at SCRATCH/root and leaves the current directory there.
 * Every path in overlay options is relative to the layer root, so that
 * /proc/self/mountinfo inside names no host path. */
static void assemble_root(const struct options *o, int userns) {
    char data[4096], lowers[4096], path[PATH_LEN];
    int n;

    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
    if (chdir(o->layer_root) < 0) die("chdir %s", o->layer_root);
    clear_volatile_marker(o->work);
    mount_or_die("tmpfs", o->scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16k");
    n = snprintf(lowers, sizeof lowers, "%s", o->lowerdirs);
    if (o->image) {
        snprintf(path, sizeof path, "%s/image", o->scratch);
        make_dir(path, 0755);
        clone_mount(o->image, path, userns, 1);
        n = snprintf(lowers, sizeof lowers, "%s%s%s", o->lowerdirs, *o->lowerdirs ? ":" : "",
                     path);
    } else if (o->host) {
        /* overlayfs refuses a lower layer whose ancestor is another lower layer,
         * and the layers may live inside "/". A read-only overlay of "/" is a
         * separate superblock, so the layers no longer descend from it. */
        char host_root[1024], empty[1024];
        snprintf(host_root, sizeof host_root, "%s/hostroot", o->scratch);
        snprintf(empty, sizeof empty, "%s/empty", o->scratch);
        snprintf(path, sizeof path, "%s/host", o->scratch);
        make_dir(host_root, 0755);
        make_dir(empty, 0755);
        make_dir(path, 0755);
        clone_mount("/", host_root, userns, 1);
        snprintf(data, sizeof data,
                 "lowerdir=%s:%s,redirect_dir=nofollow,index=off,metacopy=off", host_root,
                 empty);
        mount_or_die("overlay", path, "overlay", MS_RDONLY, data);
        n = snprintf(lowers, sizeof lowers, "%s%s%s", o->lowerdirs, *o->lowerdirs ? ":" : "",
                     path);
    }
    if (n < 0 || (size_t)n >= sizeof lowers) {
        errno = E2BIG;
        die("lower layer list longer than one page");
    }
    /* volatile: unmounting at namespace teardown must not sync the upper
     * filesystem on every call; checkpoints flush explicitly instead. */
    n = snprintf(data, sizeof data,
                 "lowerdir=%s,upperdir=%s,workdir=%s,volatile,redirect_dir=nofollow,"
                 "index=off,metacopy=off%s",
                 lowers, o->upper, o->work, o->rootless ? ",userxattr" : "");
    if (n < 0 || (size_t)n >= sizeof data) {
        errno = E2BIG;
        die("overlay options longer than one page (%d bytes)", n);
    }
    snprintf(path, sizeof path, "%s/root", o->scratch);
    make_dir(path, 0755);
    mount_or_die("overlay", path, "overlay", MS_NODEV, data);
    if (chdir(path) < 0) die("chdir %s", path);
    if (access("dev", F_OK) == 0) {
        if (dev_template >= 0) attach_dev_template();
        else make_dev(o->map_host); /* 0 when rootless: root inside */
    }
}

/* runc's defaults: what /proc tells about the host, or lets anyone change in it. */
static const char *const proc_masked[] = {
    "proc/acpi", "proc/asound", "proc/interrupts", "proc/kcore", "proc/keys",
    "proc/latency_stats", "proc/timer_list", "proc/timer_stats", "proc/sched_debug",
    "proc/scsi",
};
static const char *const proc_read_only[] = {
    "proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger",
};

static void mount_proc(void) {
    struct stat st;
    if (access("proc", F_OK) != 0) return;
    mount_or_die("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    for (size_t i = 0; i < sizeof proc_masked / sizeof *proc_masked; i++) {
        const char *path = proc_masked[i];
        if (lstat(path, &st) < 0) continue;
        if (S_ISDIR(st.st_mode))
            mount_or_die("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                         "size=0");
        else
            mount_or_die("/dev/null", path, NULL, MS_BIND, NULL);
    }
    for (size_t i = 0; i < sizeof proc_read_only / sizeof *proc_read_only; i++) {
        const char *path = proc_read_only[i];
        if (lstat(path, &st) < 0) continue;
        mount_or_die(path, path, NULL, MS_BIND | MS_REC, NULL);
        mount_or_die(NULL, path, NULL,
                     MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    }
    errno = 0;
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

/* --hold-network: a network namespace of host root's with loopback up, kept as long as
 * standard input stays open. Every call of a sandbox joins it (--netns-fd), so its network
 * (the user-mode stack's device, the firewall sprout wrote) outlives each call and dies
 * with the sandbox: when sprout closes the pipe, or its process ends. With --rootless, the
 * namespace belongs to a user namespace of the holder's, mapping its uid to 0, in which
 * sprout writes the firewall and whose child each call's user namespace is. */
static int hold_network(int rootless) {
    char byte;
    if (rootless) map_self_to_root();
    if (unshare(CLONE_NEWNET) < 0) die("unshare a network namespace");
    loopback_up();
    if (write(STDOUT_FILENO, "ready\n", 6) != 6) die("say ready");
    while (read(STDIN_FILENO, &byte, 1) > 0 || errno == EINTR) errno = 0;
    return 0;
}

/* ---- what the command may do ----------------------------------------------------- */

/* A container engine's default capability set (Docker's and Podman's). */
static const int default_caps[] = {
    CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID, CAP_SETUID,
    CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_CHROOT, CAP_MKNOD, CAP_AUDIT_WRITE,
    CAP_SETFCAP,
};

static void set_capabilities(int keep_defaults) {
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    unsigned long long keep = 0;
    if (keep_defaults)
        for (size_t i = 0; i < sizeof default_caps / sizeof *default_caps; i++)
            keep |= 1ULL << default_caps[i];
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
        if (!(keep & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            die("drop capability %d from the bounding set", cap);
    /* Inheritable stays empty, as Docker's since CVE-2022-24769: with it, a file's
     * inheritable capabilities would be granted to a non-root user's exec of it. */
    memset(data, 0, sizeof data);
    data[0].effective = data[0].permitted = (__u32)keep;
    data[1].effective = data[1].permitted = (__u32)(keep >> 32);
    if (syscall(SYS_capset, &header, data) < 0) die("capset");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) die("clear ambient caps");
    errno = 0;
}

#ifdef SPROUT_SECCOMP
/* Denied with EPERM, as a container engine's default profile denies them: they
 * reach the kernel's most privileged or least hardened corners. Names this
 * libseccomp does not know are skipped. */
static const char *const denied_syscalls[] = {
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "create_module", "query_module", "get_kernel_syms", "bpf", "perf_event_open",
    "open_by_handle_at", "name_to_handle_at", "keyctl", "add_key", "request_key",
    "userfaultfd", "reboot", "swapon", "swapoff", "syslog", "acct", "settimeofday",
    "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "adjtimex", "stime",
    "quotactl", "quotactl_fd", "nfsservctl", "lookup_dcookie", "vhangup", "iopl", "ioperm",
    "uselib", "_sysctl", "pciconfig_read", "pciconfig_write", "pciconfig_iobase", "vm86",
    "vm86old", "fanotify_init", "kcmp", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "sethostname", "setdomainname", "process_madvise", "move_pages",
    "mbind", "set_mempolicy", "migrate_pages",
};

/* Denied unless the sandbox asked for user namespaces of its own: inside one,
 * these act on the new namespaces only, never on the jail's. */
static const char *const namespace_syscalls[] = {
    "mount", "umount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
};

static const unsigned long namespace_flags[] = {
    CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP,
    CLONE_NEWUSER, 0x00000080 /* CLONE_NEWTIME */,
};

static void deny_all(scmp_filter_ctx ctx, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR) continue;
        /* A syscall absent from every ABI of the filter cannot be called anyway. */
        (void)seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
}

/* clone(2) and unshare(2) may not make namespaces: each would bring a fresh
 * set of capabilities and the kernel code that only namespace owners reach. */
static void deny_namespace_flags(scmp_filter_ctx ctx, int syscall_nr) {
    for (size_t i = 0; i < sizeof namespace_flags / sizeof *namespace_flags; i++) {
        unsigned long flag = namespace_flags[i];
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), syscall_nr, 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)) < 0)
            die("seccomp rule on namespace flags");
    }
}

static int listed(const char *name, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

/* An allow-list, as Docker's default profile is since it answers ENOSYS for what it does
 * not name: every syscall this libseccomp knows for the filter's ABIs is allowed unless
 * denied above, and any other (one added to the kernel after libseccomp's table) answers
 * ENOSYS, so libc takes its fallback. clone and unshare are allowed only without
 * namespace flags (EPERM with them) unless `nested_userns`; clone3 answers ENOSYS. */
static void allow_known(scmp_filter_ctx ctx, const uint32_t *arches, size_t n_arches,
                        int nested_userns) {
    size_t n_denied = sizeof denied_syscalls / sizeof *denied_syscalls;
    size_t n_ns = sizeof namespace_syscalls / sizeof *namespace_syscalls;
    unsigned long any_flag = 0;
    for (size_t i = 0; i < sizeof namespace_flags / sizeof *namespace_flags; i++)
        any_flag |= namespace_flags[i];
    for (size_t a = 0; a < n_arches; a++) {
        for (int nr = 0; nr < 1024; nr++) {
            char *name = seccomp_syscall_resolve_num_arch(arches[a], nr);
            if (!name) continue;
            int known = seccomp_syscall_resolve_name(name);
            int guarded = !strcmp(name, "clone") || !strcmp(name, "unshare");
            int skip = listed(name, denied_syscalls, n_denied) ||
                       (!nested_userns && (listed(name, namespace_syscalls, n_ns) || guarded ||
                                           !strcmp(name, "clone3")));
            free(name);
            if (known == __NR_SCMP_ERROR || skip) continue;
            (void)seccomp_rule_add(ctx, SCMP_ACT_ALLOW, known, 0); /* -EEXIST: named twice */
        }
    }
    if (nested_userns) return;
    if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, any_flag, 0)) < 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(unshare), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, any_flag, 0)) < 0)
        die("seccomp rules on clone and unshare");
}

/* Compiles the filter once (libseccomp takes milliseconds) and writes its BPF
 * program to `path`; each call then loads the program as it is. */
static int write_seccomp(const char *path, int nested_userns) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
    uint32_t native = seccomp_arch_native();
    uint32_t arches[3] = {native, 0, 0};
    size_t n_arches = 1;
    int fd;
    if (!ctx) die("seccomp_init");
    /* A binary tree of syscall numbers: the allow-list costs a few comparisons a call. */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0) die("seccomp optimize");
    /* An ABI the filter does not list (x32's, below) answers ENOSYS: never a kill. */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS)) < 0)
        die("seccomp action for other ABIs");
    /* The native ABI's rules also cover the compat ABI a binary could switch to. Not x32's:
     * a copy of the x86-64 rules, a third of the program and of the time every call takes
     * to load it, for an ABI that Debian's kernels leave off unless booted with
     * syscall.x32=y (its calls answer ENOSYS, as an unknown syscall's). */
    if (native == SCMP_ARCH_X86_64) {
        if (seccomp_arch_add(ctx, SCMP_ARCH_X86) < 0) die("seccomp compat architectures");
        arches[n_arches++] = SCMP_ARCH_X86;
    } else if (native == SCMP_ARCH_AARCH64) {
        if (seccomp_arch_add(ctx, SCMP_ARCH_ARM) < 0) die("seccomp compat architectures");
        arches[n_arches++] = SCMP_ARCH_ARM;
    }
    allow_known(ctx, arches, n_arches, nested_userns);
    deny_all(ctx, denied_syscalls, sizeof denied_syscalls / sizeof *denied_syscalls);
    if (!nested_userns) {
        deny_all(ctx, namespace_syscalls, sizeof namespace_syscalls / sizeof *namespace_syscalls);
        /* clone3 passes its flags in memory a filter cannot read: it is left out of the
         * allow-list, so it reports ENOSYS and libc falls back to clone. */
        deny_namespace_flags(ctx, SCMP_SYS(clone));
        deny_namespace_flags(ctx, SCMP_SYS(unshare));
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) die("create %s", path);
    if (seccomp_export_bpf(ctx, fd) < 0 || close(fd) < 0) die("write %s", path);
    seccomp_release(ctx);
    return 0;
}
#endif

/* A BPF program that --write-seccomp wrote, read before the root changes. */
static struct sock_filter seccomp_program[BPF_MAXINSNS];
static struct sock_fprog seccomp_filter;

static void read_seccomp(const char *path) {
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open %s", path);
    n = read(fd, seccomp_program, sizeof seccomp_program);
    close(fd);
    if (n <= 0 || n % sizeof *seccomp_program) {
        errno = EINVAL;
        die("%s: not a seccomp program", path);
    }
    seccomp_filter.len = (unsigned short)(n / sizeof *seccomp_program);
    seccomp_filter.filter = seccomp_program;
}

/* The image's USER, as `docker exec` runs as it: its groups, gid and uid, switched last, in
 * the jail. A non-root user keeps the bounding set but no capability (Docker gives a
 * non-root exec an empty effective set); the kernel clears permitted and effective when
 * the uid leaves 0 (inheritable is empty already). The switch would make the process
 * non-dumpable, and /proc/self (the script at /proc/self/fd/3) root's: it is set back. */
static void become_user(const struct options *o) {
    if (setgroups(o->n_groups, o->groups) < 0) die("setgroups for uid %u", (unsigned)o->uid);
    if (setresgid(o->gid, o->gid, o->gid) < 0) die("become gid %u", (unsigned)o->gid);
    if (setresuid(o->uid, o->uid, o->uid) < 0)
        die("become uid %u (outside the sandbox's id range?)", (unsigned)o->uid);
    if (o->uid != 0) {
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct none[2];
        memset(none, 0, sizeof none);
        if (syscall(SYS_capset, &header, none) < 0) die("drop capabilities");
    }
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) die("prctl dumpable");
}

static void set_limit(int resource, rlim_t value) {
    struct rlimit lim = {value, value};
    if (value == 0) return; /* 0 means "leave as inherited" */
    if (setrlimit(resource, &lim) < 0) die("setrlimit %d", resource);
}

/* Whether this process is in every one of the sandbox's cgroups: they all have one name,
 * which ends one line of /proc/self/cgroup per hierarchy. */
static int inside_cgroups(const struct options *o) {
    char text[4096], suffix[512];
    const char *name = strrchr(o->cgroups[0], '/') + 1;
    int found = 0;
    ssize_t n;
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (fd < 0) die("open /proc/self/cgroup");
    n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) die("read /proc/self/cgroup");
    text[n] = 0;
    snprintf(suffix, sizeof suffix, "/%s", name);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t length = strlen(line);
        if (length >= strlen(suffix) && !strcmp(line + length - strlen(suffix), suffix)) found++;
    }
    for (int i = 1; i < o->n_cgroups; i++)
        if (strcmp(strrchr(o->cgroups[i], '/') + 1, name)) return 0;
    return found == o->n_cgroups;
}

/* With --cgroup, the call joins the cgroups; with --in-cgroup it was started inside them
 * (the launcher's child) and only makes sure: a call never runs outside its limits. */
static void enter_cgroups(const struct options *o) {
    char path[PATH_LEN];
    if (o->in_cgroups && o->n_cgroups && !inside_cgroups(o)) {
        errno = EPERM;
        die("not inside the sandbox's cgroups (%s)", o->cgroups[0]);
    }
    for (int i = 0; i < o->n_cgroups && !o->in_cgroups; i++) {
        snprintf(path, sizeof path, "%s/cgroup.procs", o->cgroups[i]);
        write_file(path, "0");
    }
    /* Inside, /proc/self/cgroup reads "/": no host cgroup path shows. */
    if (o->n_cgroups && unshare(CLONE_NEWCGROUP) < 0) die("unshare a cgroup namespace");
}

static void run_command(const struct options *o, int userns) {
    if (userns >= 0) {
        if (setns(userns, CLONE_NEWUSER) < 0) die("join the sandbox's user namespace");
        if (setgroups(0, NULL) < 0) die("setgroups");
    }
    /* The command's text comes as a sealed, read-only memfd rather than an argument
     * (which Linux caps at 128 KiB): one fixed number, so that $0 is the same in
     * every call. Whatever held that number was close-on-exec (the userns fd). */
    if (o->script_fd >= 0 && o->script_fd != SCRIPT_FD) {
        if (dup2(o->script_fd, SCRIPT_FD) < 0) die("move the script to fd %d", SCRIPT_FD);
        close(o->script_fd);
    }
    if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0) die("become root of the sandbox");
    set_limit(RLIMIT_NPROC, o->nproc);
    set_limit(RLIMIT_FSIZE, o->fsize);
    set_limit(RLIMIT_CPU, o->cpu);
    set_limit(RLIMIT_NOFILE, o->nofile);
    set_capabilities(1);
    if (o->has_user) become_user(o);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
    mark("limits");
    if (seccomp_filter.len && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &seccomp_filter, 0, 0) < 0)
        die("load the seccomp filter %s", o->seccomp);
    mark("seccomp");
    /* An agent may delete its own workdir; later calls still run, from /. */
    if (chdir(o->workdir) < 0) {
        fprintf(stderr, "sprout-box: cannot enter %s (%s); running in /\n", o->workdir,
                strerror(errno));
        if (chdir("/") < 0) die("chdir /");
    }
    if (o->script_fd >= 0 && access("/proc/self/fd/3", R_OK) < 0)
        die("the shell cannot read its script at /proc/self/fd/3 (an image without /proc?)");
    mark("exec");
    if (timings_fd >= 0) close(timings_fd);
    execvp(o->argv[0], o->argv);
    die("exec %s", o->argv[0]);
}

/* Makes the current directory (the sandbox's root) this process's root, with nothing of the
 * host's mount tree left in its mount namespace. */
static void pivot_here(void) {
    if (syscall(SYS_pivot_root, ".", ".") < 0) die("pivot_root");
    if (umount2(".", MNT_DETACH) < 0) die("detach the old root");
    if (chdir("/") < 0) die("chdir /");
}

static int run_init(const struct options *o, int alive, int userns) {
    int status;
    pid_t command, pid;

    /* Our parent lives outside the new PID namespace, so getppid() reads 0
     * and cannot tell whether it died before PR_SET_PDEATHSIG was armed.
     * The helper holds the read end of `alive`: a write fails once it is gone.
     * -1: the launcher's call itself is init, and call_main checked its launcher. */
    if (alive >= 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) die("prctl");
        signal(SIGPIPE, SIG_IGN);
        if (write(alive, "", 1) != 1) _exit(SETUP_FAILED);
        close(alive);
        signal(SIGPIPE, SIG_DFL);
    }
    /* init stays outside the sandbox's user namespace: nothing inside may
     * trace it or read its /proc entries. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) die("prctl dumpable");
    /* The call's mount namespace (call_main made it) gets the /proc of its PID namespace,
     * in the sandbox's root: the current directory (build_root or enter_view left it
     * there). A user namespace may mount a proc only where one is fully visible already:
     * rootless, the host's tree stays until then, and goes now. */
    mount_proc();
    call_dev(o->map_host); /* 0 when rootless: root inside */
    if (o->rootless) pivot_here();
    mark("proc");

    command = fork();
    if (command < 0) die("fork");
    if (command == 0) run_command(o, userns);
    if (userns >= 0) close(userns);
    if (o->script_fd >= 0) close(o->script_fd);
    set_capabilities(0);
    /* PID 1 reaps orphans until the command itself ends. */
    for (;;) {
        pid = waitpid(-1, &status, 0);
        if (pid == command) break;
        if (pid < 0 && errno != EINTR) die("waitpid");
    }
    mark("command");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---- the sandbox's root, built once per stack ------------------------------------------ */

/* The namespaces of a sandbox's root as build_root left them, kept by its launcher (below)
 * so that the sandbox's next calls enter them rather than build them again: the user
 * namespace (as root, the one the command joins; rootless, the one that owns the mounts),
 * and the mount and UTS namespaces, whose root is the overlay of the sandbox's layers (each
 * call has an IPC namespace, /proc, /dev/pts and /dev/shm of its own).
 * `key` says which layers, image and ids: a call for other ones builds its own. */
#define KEY_LEN 16384
static struct view {
    int user, mnt, uts;
    char key[KEY_LEN];
} view = {-1, -1, -1, ""};

/* What a call's root is made of; 0 when it does not fit (that call builds, and shares nothing). */
static int view_key(const struct options *o, char *key, size_t size) {
    struct stat network_owner = {0};
    int n;
    if (o->userns_fd >= 0 && fstat(o->userns_fd, &network_owner) < 0) return 0;
    n = snprintf(key, size, "%s\n%s\n%s\n%s\n%s\n%s\n%d\n%lu:%lu\n%d\n%lu", o->layer_root,
                 o->lowerdirs, o->upper, o->work, o->scratch, o->image ? o->image : "", o->host,
                 o->map_host, o->map_count, o->rootless, (unsigned long)network_owner.st_ino);
    return n > 0 && (size_t)n < size;
}

static int open_namespace(const char *name) {
    char path[64];
    int fd;
    snprintf(path, sizeof path, "/proc/self/ns/%s", name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) die("open %s", path);
    return fd;
}

/* `size` bytes of `data` and `n` (at most 4) descriptors, in one message on `socket_fd`;
 * -1 when it could not be sent whole. */
static int send_fds(int socket_fd, const void *data, size_t size, const int *fds, int n) {
    struct iovec iov = {(void *)data, size};
    union { char buf[CMSG_SPACE(sizeof(int) * 4)]; struct cmsghdr align; } control;
    struct msghdr message;
    struct cmsghdr *header;
    memset(&message, 0, sizeof message);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buf;
    message.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
    header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(header), fds, sizeof(int) * (size_t)n);
    return sendmsg(socket_fd, &message, MSG_NOSIGNAL) == (ssize_t)size ? 0 : -1;
}

/* One message of `send_fds` from `socket_fd` without waiting: its text (NUL-terminated,
 * in `data` of `size` bytes) and up to 3 descriptors in `fds`; their number, or -1 when
 * none came whole (descriptors that came with a bad message are closed). */
static int receive_fds(int socket_fd, char *data, size_t size, int fds[3]) {
    union { char buf[CMSG_SPACE(sizeof(int) * 3)]; struct cmsghdr align; } control;
    struct iovec iov = {data, size};
    struct msghdr message;
    struct cmsghdr *part;
    ssize_t n;
    int n_fds;
    memset(&message, 0, sizeof message);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buf;
    message.msg_controllen = sizeof control.buf;
    n = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
    if (n < 0) die("receive descriptors on socket %d", socket_fd);
    part = CMSG_FIRSTHDR(&message);
    if (!part || part->cmsg_type != SCM_RIGHTS || part->cmsg_len < CMSG_LEN(sizeof(int)))
        return -1;
    n_fds = (int)((part->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    memcpy(fds, CMSG_DATA(part), sizeof(int) * (size_t)n_fds);
    if (n == 0 || data[n - 1] || message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        for (int i = 0; i < n_fds; i++) close(fds[i]);
        return -1;
    }
    return n_fds;
}

/* The namespaces `fds` (user, mnt, uts) and their key, to the launcher's view socket. */
static void send_view(int share, const char *key, const int fds[3]) {
    if (send_fds(share, key, strlen(key) + 1, fds, 3) < 0) die("share the sandbox's root");
}

/* The sandbox's root, made here: its user namespace (as root, made for it; rootless, this
 * process's own, mapping its uid to 0), then mount and UTS namespaces holding the
 * overlay of its layers and /dev and nothing of the host's; the process's root and current
 * directory end up there. With `share` (the launcher's view socket, or -1) the namespaces
 * go to the launcher, keyed by `key`, for the sandbox's next calls. */
static void build_root(const struct options *o, int *userns, int share, const char *key) {
    int fds[3] = {-1, -1, -1};
    if (o->rootless) map_self_to_root(); /* inside the network's user namespace, if any */
    else *userns = user_namespace_for(o);
    if (unshare(CLONE_NEWNS | CLONE_NEWUTS) < 0) die("unshare");
    if (share >= 0) {
        fds[0] = o->rootless ? open_namespace("user") : *userns;
        fds[1] = open_namespace("mnt");
        fds[2] = open_namespace("uts");
    }
    if (sethostname("sprout", 6) < 0) die("sethostname");
    assemble_root(o, *userns);
    if (!o->rootless) pivot_here(); /* rootless: in each call, once its /proc is mounted */
    if (share < 0) return;
    send_view(share, key, fds);
    for (int i = o->rootless ? 0 : 1; i < 3; i++) close(fds[i]);
}

/* Enters the root the launcher keeps for `key`, as build_root would have left this process
 * (setns of a mount namespace moves the root and current directory to its root; rootless,
 * that is the host's, and the sandbox's root is where assemble_root mounted it); 0 when
 * it keeps none for it. */
static int enter_view(const struct options *o, int *userns, const char *key) {
    char path[PATH_LEN];
    if (view.mnt < 0 || strcmp(view.key, key)) return 0;
    if (o->rootless) {
        if (setns(view.user, CLONE_NEWUSER) < 0) die("join the sandbox's user namespace");
    } else {
        *userns = view.user;
    }
    if (setns(view.mnt, CLONE_NEWNS) < 0) die("join the sandbox's mount namespace");
    if (setns(view.uts, CLONE_NEWUTS) < 0) die("join the sandbox's UTS namespace");
    snprintf(path, sizeof path, "%s/%s/root", o->layer_root, o->scratch);
    if (o->rootless && chdir(path) < 0) die("chdir %s", path);
    return 1;
}

/* This call's mount namespace, to the launcher's view socket `share`, named by this
 * process's id (the launcher's child: the id it knows). `self` is this process's folder in
 * the host's /proc, opened before the root changed: the sandbox's has no /proc yet. */
static void send_call_mounts(int share, int self) {
    char key[32];
    int fd = openat(self, "ns/mnt", O_RDONLY | O_CLOEXEC);
    int n = snprintf(key, sizeof key, "call %d", (int)getpid());
    if (fd < 0) die("open the call's mount namespace");
    if (send_fds(share, key, (size_t)n + 1, &fd, 1) < 0) die("hand the call's mounts over");
    close(fd);
}

/* The launcher, as its calls see it (pidfd_open): readable once it has exited. */
static int launcher_pidfd = -1;

/* One call: the sandbox's root (entered, or built and shared through `share` when that is
 * not -1), a network namespace when it has none of its own, then a PID namespace whose
 * init runs the command (run_init). `as_init`: the launcher started this process as PID 1
 * of new PID and IPC namespaces (start_call), so it is that init itself. Returns the
 * command's exit status. */
static int call_main(struct options *o, int share, int as_init) {
    char key[KEY_LEN];
    int userns = -1, status, alive[2], shared = share >= 0 && view_key(o, key, sizeof key);
    int self = -1;
    pid_t init, caller;

    timings_fd = o->timings_fd;
    mark("start");
    if (o->seccomp) read_seccomp(o->seccomp);
    /* If the caller dies (kill -9 of the agent process), the call dies with it:
     * otherwise it would go on writing into a layer that GC will free. */
    caller = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) die("prctl");
    if (as_init && o->rootless) {
        errno = EINVAL;
        die("--rootless: this launcher holds a user namespace of host ids (--idmap)");
    }
    if (as_init) {
        /* getppid() reads 0 from inside the PID namespace: the launcher's pidfd says. */
        struct pollfd gone = {launcher_pidfd, POLLIN, 0};
        if (poll(&gone, 1, 0) != 0) return SETUP_FAILED;
    } else if (getppid() != caller) {
        return SETUP_FAILED;
    }
    if (o->userns_fd >= 0) {
        if (setns(o->userns_fd, CLONE_NEWUSER) < 0) die("join the network's user namespace");
        close(o->userns_fd);
    }
    if (o->netns_fd >= 0) {
        if (setns(o->netns_fd, CLONE_NEWNET) < 0) die("join the sandbox's network namespace");
        close(o->netns_fd);
    }
    enter_cgroups(o); /* while the host's /proc and cgroup folders are in view */
    if (share >= 0 && (self = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        die("open /proc/self");
    if (shared && enter_view(o, &userns, key)) {
        mark("root-entered");
    } else {
        build_root(o, &userns, shared ? share : -1, key);
        mark("root-built");
    }
    if (o->no_network) {
        if (unshare(CLONE_NEWNET) < 0) die("unshare a network namespace");
        loopback_up();
    }
    /* The call's own mount namespace too, which its init fills (/proc, /dev/pts, /dev/shm):
     * made here rather than in init, it goes to the launcher, which drops it once it has
     * sent the call's status (reap_calls). Unmounting it then comes after the status, not
     * in init's exit or this process's, before it. */
    if (unshare(as_init ? CLONE_NEWNS : CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNS) < 0)
        die("unshare IPC, PID and mount namespaces");
    if (share >= 0) {
        send_call_mounts(share, self);
        close(share);
        close(self);
    }
    if (as_init) return run_init(o, -1, userns);

    if (pipe2(alive, O_CLOEXEC) < 0) die("pipe");
    init = fork();
    if (init < 0) die("fork");
    if (init == 0) {
        close(alive[0]);
        _exit(run_init(o, alive[1], userns));
    }
    close(alive[1]);
    while (waitpid(init, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    mark("init");
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* ---- command line ------------------------------------------------------------------- */

static unsigned long long parse_number(const char *flag, const char *text) {
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || end == text || *end) {
        errno = EINVAL;
        die("%s %s: expected a number", flag, text);
    }
    return value;
}

/* An inherited descriptor's number: never a standard stream. */
static int parse_fd(const char *flag, const char *text) {
    unsigned long long fd = parse_number(flag, text);
    if (fd <= 2 || fd > 1 << 20) { errno = EINVAL; die("%s %s", flag, text); }
    return (int)fd;
}

/* A descriptor's number in a call's helper: the standard streams too. */
static int parse_fd_number(const char *text) {
    unsigned long long fd = parse_number("a call's descriptor", text);
    if (fd > 1 << 20) { errno = EINVAL; die("a call's descriptor %s", text); }
    return (int)fd;
}

static void parse_idmap(const char *text, struct options *o) {
    char host[32];
    const char *colon = strchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host) {
        errno = EINVAL;
        die("--idmap %s: expected HOST:COUNT", text);
    }
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    o->map_host = parse_number("--idmap", host);
    o->map_count = parse_number("--idmap", colon + 1);
    if (o->map_count == 0 || o->map_host == 0) {
        errno = EINVAL;
        die("--idmap %s: the range must be unprivileged and not empty", text);
    }
}

/* --user UID:GID[:GROUP,GROUP...] */
static void parse_user(const char *text, struct options *o) {
    char copy[1024], *field, *rest;
    if (strlen(text) >= sizeof copy) { errno = EINVAL; die("--user %s: too long", text); }
    strcpy(copy, text);
    rest = copy;
    field = strsep(&rest, ":");
    o->uid = (uid_t)parse_number("--user", field);
    field = strsep(&rest, ":");
    if (!field) { errno = EINVAL; die("--user %s: expected UID:GID[:GROUPS]", text); }
    o->gid = (gid_t)parse_number("--user", field);
    while (rest && (field = strsep(&rest, ",")) != NULL) {
        if (o->n_groups == MAX_GROUPS) { errno = EINVAL; die("--user %s: over %d groups", text, MAX_GROUPS); }
        o->groups[o->n_groups++] = (gid_t)parse_number("--user", field);
    }
    o->has_user = 1;
}

static void parse(int argc, char **argv, struct options *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->workdir = "/";
    o->script_fd = -1;
    o->timings_fd = -1;
    o->netns_fd = -1;
    o->userns_fd = -1;
    for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        const char *flag = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(flag, "--rootless")) { o->rootless = 1; continue; }
        if (!strcmp(flag, "--no-network")) { o->no_network = 1; continue; }
        if (!strcmp(flag, "--host")) { o->host = 1; continue; }
        if (!value) { errno = EINVAL; die("%s needs a value", flag); }
        i++;
        if (!strcmp(flag, "--layer-root")) o->layer_root = value;
        else if (!strcmp(flag, "--lower")) o->lowerdirs = value;
        else if (!strcmp(flag, "--upper")) o->upper = value;
        else if (!strcmp(flag, "--work")) o->work = value;
        else if (!strcmp(flag, "--scratch")) o->scratch = value;
        else if (!strcmp(flag, "--workdir")) o->workdir = value;
        else if (!strcmp(flag, "--image")) o->image = value;
        else if (!strcmp(flag, "--seccomp")) o->seccomp = value;
        else if (!strcmp(flag, "--idmap")) parse_idmap(value, o);
        else if (!strcmp(flag, "--user")) parse_user(value, o);
        else if (!strcmp(flag, "--cgroup") || !strcmp(flag, "--in-cgroup")) {
            if (o->n_cgroups == MAX_CGROUPS || value[0] != '/') { errno = EINVAL; die("%s %s", flag, value); }
            int inherited = !strcmp(flag, "--in-cgroup");
            if (o->n_cgroups && inherited != o->in_cgroups) { errno = EINVAL; die("--cgroup with --in-cgroup"); }
            o->cgroups[o->n_cgroups++] = value;
            o->in_cgroups = inherited;
        }
        else if (!strcmp(flag, "--nproc")) o->nproc = parse_number(flag, value);
        else if (!strcmp(flag, "--fsize")) o->fsize = parse_number(flag, value);
        else if (!strcmp(flag, "--cpu")) o->cpu = parse_number(flag, value);
        else if (!strcmp(flag, "--nofile")) o->nofile = parse_number(flag, value);
        else if (!strcmp(flag, "--netns-fd")) o->netns_fd = parse_fd(flag, value);
        else if (!strcmp(flag, "--userns-fd")) o->userns_fd = parse_fd(flag, value);
        else if (!strcmp(flag, "--script-fd")) o->script_fd = parse_fd(flag, value);
        else if (!strcmp(flag, "--timings-fd")) o->timings_fd = parse_fd(flag, value);
        else { errno = EINVAL; die("unknown option %s", flag); }
    }
    if (!o->layer_root || !o->lowerdirs || !o->upper || !o->work || !o->scratch ||
        i + 1 >= argc || (o->image && o->host) || !o->rootless == !o->map_count ||
        (o->no_network && o->netns_fd >= 0) ||
        (o->rootless ? (o->netns_fd >= 0) != (o->userns_fd >= 0) : o->userns_fd >= 0)) {
        errno = EINVAL;
        die("usage: sprout-box (--idmap HOST:COUNT | --rootless) --layer-root D --lower L "
            "--upper U --work W --scratch S [--image DIR | --host] [--workdir P] "
            "[--cgroup DIR... | --in-cgroup DIR...] [--seccomp BPF] [--no-network | --netns-fd N] "
            "[--userns-fd N] [--script-fd N] [--timings-fd N] [--user UID:GID[:GROUPS]] "
            "-- COMMAND...\n"
            "       sprout-box --launcher [--cgroup DIR]... [--idmap HOST:COUNT]\n"
            "       sprout-box --write-seccomp BPF [--nested-userns]\n"
            "       sprout-box --hold-network [--rootless]\n"
            "       sprout-box --bind-udp ADDRESS PORT FD");
    }
    o->argv = argv + i + 1;
}

/* --bind-udp ADDRESS PORT FD: a UDP socket bound to ADDRESS:PORT in this process's network
 * namespace, sent over the unix socket FD. Run under nsenter, it makes the allow-list
 * resolver's listener inside a sandbox's namespace: a socket stays in the namespace it was
 * made in, whoever holds it, and setns would need root, which a rootless owner is not. */
static int bind_udp(const char *address, const char *port, const char *via) {
    struct sockaddr_in at;
    int channel = parse_fd("--bind-udp", via);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char byte = '.';
    if (fd < 0) die("socket");
    memset(&at, 0, sizeof at);
    at.sin_family = AF_INET;
    at.sin_port = htons((uint16_t)parse_number("--bind-udp", port));
    if (inet_pton(AF_INET, address, &at.sin_addr) != 1) { errno = EINVAL; die("--bind-udp %s", address); }
    if (bind(fd, (struct sockaddr *)&at, sizeof at) < 0) die("bind %s:%s", address, port);
    if (send_fds(channel, &byte, 1, &fd, 1) < 0) die("send the bound socket");
    return 0;
}

/* ---- the launcher: one process per sandbox, inside its cgroups ----------------------- */

/* --launcher [--cgroup DIR]...: joins the sandbox's cgroups once, then starts each call's
 * helper as a child of its own, so that every call is born inside them. Joining a
 * cgroup v1 hierarchy (a write to cgroup.procs) takes the kernel's cgroup threadgroup lock
 * for writing, which waits for an RCU grace period unless another join came just before
 * (measured here: 10-15 ms on about one call in ten); a fork inherits the cgroups and takes
 * that lock only for reading. (cgroup v2's CLONE_INTO_CGROUP would do it for one clone;
 * v1 has nothing like it.)
 *
 * Standard input, output and error are one end of a stream socket whose other end sprout
 * holds. Once inside, the launcher says "ready\n"; then each call is one frame: two uint32
 * (the body's length, the number of descriptors), sent with the descriptors (SCM_RIGHTS),
 * then the body, NUL-terminated strings: the number of arguments, the number of
 * environment entries, the arguments (as the helper's command line: the first is ignored),
 * the entries, and for each descriptor but the last the number it takes in the call (0, 1
 * and 2 among them).
 * The last descriptor is the call's own socket: the call's wait status comes back on it in
 * decimal with a newline, and a shutdown of sprout's end (a timeout) kills the call. A
 * frame of no arguments, no environment and that socket alone asks the launcher to drop the
 * sandbox's root it keeps (forget_view); "0" comes back at once, and no call it starts after
 * that enters the old root (the unmount runs beside what sprout does next). End of
 * file on standard input (sprout closed the sandbox, or died) ends the launcher, and with
 * it, through PR_SET_PDEATHSIG, every call still running. Inside the sandbox's memory
 * cgroup the launcher is one more process the OOM killer may pick: then the call in
 * flight ends as killed, as it would had the killer picked the command, and sprout starts
 * another launcher at the sandbox's next call. */

#define MAX_CALL_FDS 16
#define MAX_FRAME (4u << 20)

struct call {
    char *body;
    char **argv, **envp;
    int fds[MAX_CALL_FDS + 1];  /* the helper's descriptors, then the call's socket */
    int targets[MAX_CALL_FDS];
    int n_fds;                  /* the helper's descriptors (the socket is fds[n_fds]) */
    int forget;                 /* no call: sprout asks to drop the sandbox's root */
};

/* `size` bytes of `fd` into `buffer`: 1, or 0 at end of file, -1 on an error. */
static int read_exactly(int fd, char *buffer, size_t size) {
    while (size > 0) {
        ssize_t n = read(fd, buffer, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return (int)n;
        buffer += n;
        size -= (size_t)n;
    }
    return 1;
}

/* The strings of a frame's body, from `*at`; NULL when the body ends first. */
static char *next_string(char **at, const char *end) {
    char *found = *at;
    char *nul = found < end ? memchr(found, 0, (size_t)(end - found)) : NULL;
    if (!nul) return NULL;
    *at = nul + 1;
    return found;
}

static char **string_array(char **at, const char *end, unsigned long count) {
    char **array = calloc(count + 1, sizeof *array);
    if (!array) die("calloc");
    for (unsigned long i = 0; i < count; i++)
        if (!(array[i] = next_string(at, end))) { errno = EINVAL; die("a call's frame ends early"); }
    return array;
}

static void parse_call(struct call *call, size_t length) {
    char *at = call->body, *end = call->body + length, *count;
    unsigned long n_args, n_env;
    if (!(count = next_string(&at, end))) { errno = EINVAL; die("a call's frame is empty"); }
    n_args = parse_number("a call's arguments", count);
    if (!(count = next_string(&at, end))) { errno = EINVAL; die("a call's frame ends early"); }
    n_env = parse_number("a call's environment", count);
    if (n_args == 0 && n_env == 0 && call->n_fds == 0) {
        call->forget = 1;
        return;
    }
    if (n_args == 0 || n_args > 4096 || n_env > 65536) { errno = EINVAL; die("a call's frame"); }
    call->argv = string_array(&at, end, n_args);
    call->envp = string_array(&at, end, n_env);
    for (int i = 0; i < call->n_fds; i++) {
        if (!(count = next_string(&at, end))) { errno = EINVAL; die("a call's frame ends early"); }
        call->targets[i] = parse_fd_number(count);
    }
}

/* The next call's frame from `channel`: 1, or 0 at end of file. */
static int receive_call(int channel, struct call *call) {
    uint32_t header[2];
    union { char buffer[CMSG_SPACE(sizeof(int) * (MAX_CALL_FDS + 1))]; struct cmsghdr align; } control;
    struct iovec iov = {header, sizeof header};
    struct msghdr message;
    struct cmsghdr *part;
    ssize_t n;
    int got = 0;
    memset(&message, 0, sizeof message);
    memset(call, 0, sizeof *call);
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    do n = recvmsg(channel, &message, MSG_CMSG_CLOEXEC); while (n < 0 && errno == EINTR);
    if (n == 0) return 0;
    if (n < 0) die("receive a call");
    for (part = CMSG_FIRSTHDR(&message); part; part = CMSG_NXTHDR(&message, part))
        if (part->cmsg_level == SOL_SOCKET && part->cmsg_type == SCM_RIGHTS) {
            got = (int)((part->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            memcpy(call->fds, CMSG_DATA(part), sizeof(int) * (size_t)got);
        }
    if ((size_t)n < sizeof header &&
        read_exactly(channel, (char *)header + n, sizeof header - (size_t)n) != 1)
        die("receive a call's header");
    if (message.msg_flags & MSG_CTRUNC || got < 1 || (uint32_t)got != header[1] ||
        header[0] > MAX_FRAME) {
        errno = EINVAL;
        die("a call's frame: %u descriptors, %u bytes", header[1], header[0]);
    }
    call->n_fds = got - 1;
    if (!(call->body = malloc(header[0] + 1))) die("malloc");
    if (read_exactly(channel, call->body, header[0]) != 1) die("receive a call's body");
    parse_call(call, header[0]);
    return 1;
}

static void release_call(struct call *call) {
    for (int i = 0; i <= call->n_fds; i++)
        if (call->fds[i] >= 0) close(call->fds[i]);
    free(call->argv);
    free(call->envp);
    free(call->body);
}

/* The launcher's end of its view socket, which every call's process inherits: a call that
 * builds the sandbox's root sends its namespaces there (send_view), and every call its own
 * mount namespace (send_call_mounts). */
static int views_out = -1;

/* Closes every descriptor but those in `keep` (sorted, distinct). */
static void close_all_but(const int *keep, int n) {
    unsigned int from = 0;
    for (int i = 0; i < n; i++) {
        if ((unsigned int)keep[i] > from && syscall(SYS_close_range, from, keep[i] - 1, 0) < 0)
            _exit(SETUP_FAILED);
        from = (unsigned int)keep[i] + 1;
    }
    if (syscall(SYS_close_range, from, ~0U, 0) < 0) _exit(SETUP_FAILED);
}

/* Adds `fd` to the sorted set `keep` of `*n` descriptors. */
static void keep_fd(int *keep, int *n, int fd) {
    int i = *n;
    if (fd < 0) return;
    for (int j = 0; j < *n; j++)
        if (keep[j] == fd) return;
    while (i > 0 && keep[i - 1] > fd) {
        keep[i] = keep[i - 1];
        i--;
    }
    keep[i] = fd;
    (*n)++;
}

/* A call's wait status, as sprout reads it on the call's socket (jail/launcher.py). */
static void send_status(int socket_fd, int status) {
    char text[32];
    int n = snprintf(text, sizeof text, "%d\n", status);
    (void)send(socket_fd, text, (size_t)n, MSG_NOSIGNAL);
}

/* In the call's process (the launcher's child, no exec: the launcher is this program): each
 * of the call's descriptors at its number, the sandbox's view and the view socket above
 * them, nothing else of the launcher's, a fresh process's signal mask, the call's
 * environment; then the call. */
static void run_launched_call(struct call *call, int as_init) {
    struct options o;
    sigset_t none;
    int *held[] = {&view.user,        &view.mnt,      &view.uts,    &views_out,
                   &sandbox_users.fd, &launcher_pidfd, &dev_template};
    int n_held = (int)(sizeof held / sizeof *held);
    int above = views_out, moved[MAX_CALL_FDS], keep[MAX_CALL_FDS + 7], n_keep = 0, argc = 0;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) < 0) _exit(SETUP_FAILED);
    for (int i = 0; i < n_held; i++)
        if (*held[i] > above) above = *held[i];
    for (int i = 0; i < call->n_fds; i++) {
        if (call->fds[i] > above) above = call->fds[i];
        if (call->targets[i] > above) above = call->targets[i];
    }
    for (int i = 0; i < call->n_fds; i++)  /* first out of the way of every target */
        if ((moved[i] = fcntl(call->fds[i], F_DUPFD_CLOEXEC, above + 1)) < 0) _exit(SETUP_FAILED);
    for (int i = 0; i < n_held; i++) {
        if (*held[i] >= 0 && (*held[i] = fcntl(*held[i], F_DUPFD_CLOEXEC, above + 1)) < 0)
            _exit(SETUP_FAILED);
        keep_fd(keep, &n_keep, *held[i]);
    }
    for (int i = 0; i < call->n_fds; i++) {
        if (dup2(moved[i], call->targets[i]) < 0) _exit(SETUP_FAILED);
        keep_fd(keep, &n_keep, call->targets[i]);
    }
    close_all_but(keep, n_keep);
    environ = call->envp;
    while (call->argv[argc]) argc++;
    parse(argc, call->argv, &o);
    _exit(call_main(&o, views_out, as_init));
}

/* Drops the sandbox's root (its layers changed, or sprout wrote into its upper layer):
 * its overlay is unmounted once no call is inside. */
static void forget_view(void) {
    int *fds[] = {&view.user, &view.mnt, &view.uts};
    for (int i = 0; i < 3; i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
    view.key[0] = 0;
}

static void hold_call_mounts(const char *key, int fd);

/* What a call sends on the view socket: a root it built, which replaces the view kept (its
 * key and three namespaces), or its own mount namespace ("call PID" and one). */
static void receive_from_call(int views_in) {
    char key[KEY_LEN];
    int fds[3], n_fds = receive_fds(views_in, key, sizeof key, fds);
    if (n_fds < 0) return;
    if (n_fds != 3 && (n_fds != 1 || strncmp(key, "call ", 5))) {
        for (int i = 0; i < n_fds; i++) close(fds[i]);
        return;
    }
    if (n_fds == 1) {
        hold_call_mounts(key + 5, fds[0]);
        return;
    }
    forget_view();
    view.user = fds[0];
    view.mnt = fds[1];
    view.uts = fds[2];
    memcpy(view.key, key, strlen(key) + 1);
}

/* A call that could not start: why, on its output (the descriptor it gave as 2), and
 * exit status SETUP_FAILED. */
static void call_failed(const struct call *call, const char *what) {
    char text[256];
    int n = snprintf(text, sizeof text, "sprout-box: %s: %s\n", what, strerror(errno));
    for (int i = 0; i < call->n_fds; i++)
        if (call->targets[i] == STDERR_FILENO && write(call->fds[i], text, (size_t)n) < 0) break;
    send_status(call->fds[call->n_fds], SETUP_FAILED << 8);
}

/* The calls running, each its helper (a child of the launcher) and the call's socket;
 * a free entry's socket is -1. */
#define MAX_CALLS 256
static struct running {
    pid_t helper;
    int socket_fd;
    int killed;  /* sprout shut the socket (a timeout): the helper has had SIGKILL */
    int mounts;  /* the call's mount namespace (send_call_mounts), or -1 */
} running[MAX_CALLS];

/* The mount namespace of the call whose helper is `pid` (text), kept until its status is
 * sent; dropped at once when that call has ended already. */
static void hold_call_mounts(const char *pid, int fd) {
    for (int i = 0; i < MAX_CALLS; i++)
        if (running[i].socket_fd >= 0 && running[i].mounts < 0 &&
            running[i].helper == (pid_t)atol(pid)) {
            running[i].mounts = fd;
            return;
        }
    close(fd);
}

/* Starts the call's helper as the launcher's child, so inside the cgroups, and keeps the
 * call's socket to report its end on. As root (a launcher holding the sandbox's user
 * namespace), the helper is born PID 1 of new PID and IPC namespaces, the call's init
 * itself: no process between it and the launcher to fork, wait for and reap. Rootless, the
 * helper makes them inside its own user namespace, and forks their init (call_main). */
static void start_call(struct call *call) {
    int slot = 0, as_init = sandbox_users.fd >= 0;
    pid_t helper;
    while (slot < MAX_CALLS && running[slot].socket_fd >= 0) slot++;
    if (slot == MAX_CALLS) {
        errno = EAGAIN;
        call_failed(call, "start a call: too many running in this sandbox");
        return;
    }
    /* A fork (no thread of the launcher's runs beside it) whose child is PID 1: clone(2)
     * with SIGCHLD and no stack returns in the child as fork(2) does. */
    helper = as_init ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD, NULL,
                                      NULL, NULL, NULL)
                     : fork();
    if (helper < 0) {
        call_failed(call, "fork the call's helper");
        return;
    }
    if (helper == 0) run_launched_call(call, as_init);
    running[slot].helper = helper;
    running[slot].socket_fd = call->fds[call->n_fds];
    running[slot].killed = 0;
    running[slot].mounts = -1;
    call->fds[call->n_fds] = -1; /* kept: release_call leaves it open */
}

/* Every helper that has exited, reaped (its CPU time then counts as the launcher's
 * children's, and so as sprout's) and its wait status sent on its call's socket; then the
 * call's mounts go. */
static void reap_calls(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < MAX_CALLS; i++)
            if (running[i].socket_fd >= 0 && running[i].helper == pid) {
                send_status(running[i].socket_fd, status);
                close(running[i].socket_fd);
                running[i].socket_fd = -1;
                if (running[i].mounts >= 0) close(running[i].mounts);
                running[i].mounts = -1;
            }
}

/* Waits for the next thing to do: a call on standard input, a helper's exit (`events`),
 * or a call's socket shut (its helper is killed here, and reaped when it has gone).
 * 0 when the launcher is to end. */
static int serve_once(int events, int views_in) {
    struct pollfd watch[MAX_CALLS + 3] = {
        {STDIN_FILENO, POLLIN, 0}, {events, POLLIN, 0}, {views_in, POLLIN, 0}};
    int slots[MAX_CALLS], n = 3;
    struct signalfd_siginfo info;
    struct call call;
    for (int i = 0; i < MAX_CALLS; i++)
        if (running[i].socket_fd >= 0 && !running[i].killed) {
            watch[n] = (struct pollfd){running[i].socket_fd, POLLIN, 0};
            slots[n++ - 3] = i;
        }
    if (poll(watch, (nfds_t)n, -1) < 0) {
        if (errno == EINTR) return 1;
        die("poll");
    }
    if (watch[1].revents) {
        if (read(events, &info, sizeof info) < 0 && errno != EAGAIN) die("read signalfd");
        reap_calls();
    }
    if (watch[2].revents) receive_from_call(views_in); /* before a forget that follows it */
    for (int k = 3; k < n; k++)
        if (watch[k].revents) {
            kill(running[slots[k - 3]].helper, SIGKILL);
            running[slots[k - 3]].killed = 1;
        }
    if (!watch[0].revents) return 1;
    if (!receive_call(STDIN_FILENO, &call)) return 0;
    if (call.forget) {  /* said first: the unmount is the launcher's time, not sprout's */
        send_status(call.fds[0], 0);
        forget_view();
    } else {
        start_call(&call);
    }
    release_call(&call);
    return 1;
}

/* make_dev's /dev for sandbox root `root_id`, as a detached mount: made by a short-lived
 * child in a mount namespace of its own (on a tmpfs over its /tmp), so the launcher's stays
 * the host's. -1 when the child could not make it, or this kernel cannot clone a detached
 * mount; each root then makes its own /dev, and says what fails. */
static int make_dev_template(unsigned long root_id) {
    char said[8];
    int pair[2], fds[3], n, fd = -1, tree, null;
    pid_t child;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) die("socketpair");
    child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        null = open("/dev/null", O_WRONLY | O_CLOEXEC); /* its failures are no one's news */
        if (null < 0 || dup2(null, STDERR_FILENO) < 0) _exit(SETUP_FAILED);
        if (unshare(CLONE_NEWNS) < 0) die("unshare");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
        mount_or_die("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=700,size=16k");
        if (chdir("/tmp") < 0) die("chdir");
        make_dir("dev", 0755);
        make_dev(root_id);
        tree = open_tree(AT_FDCWD, "dev", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (tree < 0 || send_fds(pair[1], "dev", 4, &tree, 1) < 0) die("hand /dev over");
        _exit(0);
    }
    close(pair[1]);
    while (waitpid(child, NULL, 0) < 0)
        if (errno != EINTR) die("waitpid");
    n = receive_fds(pair[0], said, sizeof said, fds);
    if (n == 1) fd = fds[0];
    for (int i = 0; n > 1 && i < n; i++) close(fds[i]);
    close(pair[0]);
    errno = 0;
    if (fd < 0) return -1;
    tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
    if (tree < 0) {
        close(fd);
        errno = 0;
        return -1;
    }
    close(tree);
    return fd;
}

static int launcher(int argc, char **argv) {
    char path[PATH_LEN];
    sigset_t child_exits;
    struct options ids = {0};
    int events, views[2];
    for (int i = 2; i < argc; i += 2) {
        if (i + 1 < argc && !strcmp(argv[i], "--idmap")) {
            parse_idmap(argv[i + 1], &ids);
            continue;
        }
        if (strcmp(argv[i], "--cgroup") || i + 1 >= argc || argv[i + 1][0] != '/') {
            errno = EINVAL;
            die("usage: sprout-box --launcher [--cgroup DIR]... [--idmap HOST:COUNT]");
        }
        snprintf(path, sizeof path, "%s/cgroup.procs", argv[i + 1]);
        write_file(path, "0");
    }
    if (ids.map_count) {
        sandbox_users.fd = make_user_namespace(ids.map_host, ids.map_count);
        sandbox_users.host = ids.map_host;
        sandbox_users.count = ids.map_count;
        if ((launcher_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0)) < 0) die("pidfd_open");
        dev_template = make_dev_template(ids.map_host);
    }
    for (int i = 0; i < MAX_CALLS; i++) running[i].socket_fd = running[i].mounts = -1;
    sigemptyset(&child_exits);
    sigaddset(&child_exits, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &child_exits, NULL) < 0) die("block SIGCHLD");
    if ((events = signalfd(-1, &child_exits, SFD_CLOEXEC)) < 0) die("signalfd");
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, views) < 0) die("socketpair");
    views_out = views[1];
    if (write(STDOUT_FILENO, "ready\n", 6) != 6) die("say ready");
    while (serve_once(events, views[0])) {}
    return 0;
}

int main(int argc, char **argv) {
    struct options o;

    if (argc >= 3 && !strcmp(argv[1], "--write-seccomp")) {
#ifdef SPROUT_SECCOMP
        return write_seccomp(argv[2], argc > 3 && !strcmp(argv[3], "--nested-userns"));
#else
        errno = ENOSYS;
        die("--write-seccomp: this helper was built without libseccomp");
#endif
    }
    if (argc == 5 && !strcmp(argv[1], "--bind-udp")) return bind_udp(argv[2], argv[3], argv[4]);
    if (argc >= 2 && !strcmp(argv[1], "--hold-network")) {
        if (argc > 3 || (argc == 3 && strcmp(argv[2], "--rootless"))) {
            errno = EINVAL;
            die("usage: sprout-box --hold-network [--rootless]");
        }
        return hold_network(argc == 3);
    }
    if (argc >= 2 && !strcmp(argv[1], "--launcher")) return launcher(argc, argv);
    parse(argc, argv, &o);
    return call_main(&o, -1, 0);
}
