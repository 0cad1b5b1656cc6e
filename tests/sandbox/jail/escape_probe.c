/*
 * Tries, from inside a sandbox, each system call a hostile agent would use to
 * leave it, and prints "NAME ERRNO" per attempt (0 when the call succeeded).
 *
 * Every attempt is harmless even where it succeeds: arguments are invalid past
 * the permission check, name nothing of the host, or write back a value that
 * is already set (the clock), so a broken jail shows up as a wrong errno, never
 * as damage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

static void report(const char *name, long result) {
    printf("%s %d\n", name, result < 0 ? errno : 0);
    errno = 0;
}

int main(int argc, char **argv) {
    const char *device_path = argc > 1 ? argv[1] : "/tmp/probe-disk";
    unsigned int major_id = argc > 2 ? (unsigned)atoi(argv[2]) : 8;
    unsigned int minor_id = argc > 3 ? (unsigned)atoi(argv[3]) : 0;
    struct timespec now;
    char handle_buf[sizeof(struct file_handle) + 128];
    struct file_handle *handle = (struct file_handle *)handle_buf;
    union bpf_attr bpf_attr;
    struct perf_event_attr perf;

    report("mknod_block", mknod(device_path, S_IFBLK | 0600, makedev(major_id, minor_id)));
    report("mount_tmpfs", mount("none", "/tmp", "tmpfs", 0, NULL));
    report("mount_cgroup2", mount("none", "/tmp", "cgroup2", 0, NULL));
    report("mount_sysfs", mount("none", "/tmp", "sysfs", 0, NULL));
    report("umount_proc_sys", umount2("/proc/sys", MNT_DETACH));
    report("umount_proc", umount2("/proc", MNT_DETACH));
    report("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
    report("open_tree", syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */));
    report("fsopen", syscall(SYS_fsopen, "tmpfs", 0));
    memset(handle_buf, 0, sizeof handle_buf);
    handle->handle_bytes = 128;
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, handle, O_RDONLY));
    report("init_module", syscall(SYS_init_module, NULL, 0, ""));
    report("finit_module", syscall(SYS_finit_module, -1, "", 0));
    report("delete_module", syscall(SYS_delete_module, "sprout_probe_none", 0));
    report("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
    memset(&bpf_attr, 0, sizeof bpf_attr);
    report("bpf", syscall(SYS_bpf, BPF_MAP_CREATE, &bpf_attr, sizeof bpf_attr));
    memset(&perf, 0, sizeof perf);
    perf.size = sizeof perf;
    perf.type = PERF_TYPE_SOFTWARE;
    perf.config = PERF_COUNT_SW_CPU_CLOCK;
    report("perf_event_open", syscall(SYS_perf_event_open, &perf, 0, -1, -1, 0));
    report("keyctl", syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
    report("add_key", syscall(SYS_add_key, "user", "sprout-probe", "x", 1, -2));
    report("userfaultfd", syscall(SYS_userfaultfd, 0));
    report("unshare_user", unshare(CLONE_NEWUSER));
    report("unshare_mount", unshare(CLONE_NEWNS));
    report("clone3", syscall(SYS_clone3, NULL, 0));
    report("setns", setns(0, CLONE_NEWNS));
    report("reboot_bad_magic", syscall(SYS_reboot, 0, 0, 0, NULL));
    report("swapon", syscall(SYS_swapon, "/sprout-probe-no-such-file", 0));
    report("syslog_read", syscall(SYS_syslog, 3 /* READ_ALL */, NULL, 0));
    report("acct", syscall(SYS_acct, "/sprout-probe-no-such-file"));
    clock_gettime(CLOCK_REALTIME, &now);
    report("clock_settime_same", clock_settime(CLOCK_REALTIME, &now));
    report("sethostname", sethostname("sprout", 6));
    report("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL));
    report("ptrace_init", ptrace(PTRACE_ATTACH, 1, NULL, NULL));
    report("chroot_escape_open_root", open("/proc/1/root/", O_RDONLY | O_DIRECTORY));
    report("write_core_pattern", open("/proc/sys/kernel/core_pattern", O_WRONLY));
    report("write_sysrq_trigger", open("/proc/sysrq-trigger", O_WRONLY));
    report("read_init_environ", open("/proc/1/environ", O_RDONLY));
    return 0;
}
