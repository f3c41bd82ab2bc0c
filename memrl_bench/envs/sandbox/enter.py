"""`ENTER`: the program the host's Python runs as the last step into the container before each command."""

# The last step into the container before the command (run by the host's Python, so that it
# needs no file inside): join the container's mount namespace and root, take a fresh session
# keyring (the host's is not inherited), then no_new_privs and the seccomp filter, then exec.
# For a check (`Sandbox.check`): in a mount namespace of the check's own, lay the host's system
# folders over the episode's, read only: an overlay with the host's folder above the episode's
# (whose new files stay visible), or where overlays cannot stack (a host whose root is itself an
# overlay) the host's folder alone; the loader's cache is the host's, its preload list empty; a
# top-level link (/bin -> usr/bin) the episode replaced by a folder shows the host's folder again.
# Which view was built is written to the check's descriptor.
# argv: container pid, filter (hex), the numbers of keyctl, open_tree and move_mount, the check's
# settings (JSON; "-" for a command), the command's argv.
ENTER = r"""
import ctypes, os, sys
pid, program, calls, check, argv = sys.argv[1], bytes.fromhex(sys.argv[2]), dict(zip(("keyctl", "open_tree", "move_mount"), map(int, sys.argv[3].split(",")))), sys.argv[4], sys.argv[5:]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
MS_RDONLY, MS_REMOUNT, MS_BIND, CLONE_NEWNS = 1, 32, 4096, 0x00020000
def require(result, call):
    if result < 0:
        print(f"sandbox: failing call: {call}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        sys.exit(125)
def trusted_view(clones, rules):
    view = "overlay"
    for path, fd in clones:
        source = f"/proc/self/fd/{fd}"
        if not os.path.exists(path):
            continue
        if os.path.isdir(source):
            if libc.mount(b"memrl-trusted", path.encode(), b"overlay", MS_RDONLY, f"lowerdir={source}:{path}".encode()) == 0:
                continue
            view = "bind"
        require(libc.syscall(calls["move_mount"], fd, b"", -100, path.encode(), 4), f"move_mount({path})")  # MOVE_MOUNT_F_EMPTY_PATH
        require(libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), f"mount -o remount,bind,ro {path}")
    for path in rules["masked"]:
        if os.path.lexists(path):
            require(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None), f"mount --bind /dev/null {path}")
    for path, target in rules["links"]:  # a link the episode replaced by a folder shows the host's folder again
        if not os.path.islink(path) and os.path.isdir(path):
            source = os.path.join("/", target).encode()
            require(libc.mount(source, path.encode(), None, MS_BIND, None), f"mount --bind /{target} {path}")
            require(libc.mount(None, path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), f"mount -o remount,bind,ro {path}")
    return view
namespace = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
if check == "-":
    root, cwd = (os.open(f"/proc/{pid}/{entry}", os.O_RDONLY) for entry in ("root", "cwd"))
    require(libc.setns(namespace, CLONE_NEWNS), "setns(CLONE_NEWNS)")
    os.fchdir(root)
    os.chroot(".")
    os.fchdir(cwd)
    for fd in (root, cwd):
        os.close(fd)
else:
    import json  # only here: a command starts faster without it
    check = json.loads(check)
    rules, out = check["rules"], check["fd"]
    clones = []
    for path in rules["trusted"]:
        fd = libc.syscall(calls["open_tree"], -100, path.encode(), 1)  # OPEN_TREE_CLONE: a detached copy of the host's folder
        require(fd, f"open_tree({path})")
        clones.append((path, fd))
    require(libc.setns(namespace, CLONE_NEWNS), "setns(CLONE_NEWNS)")
    require(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")  # the check's own copy of the container's mounts
    os.write(out, trusted_view(clones, rules).encode())
    for fd in [out] + [fd for _, fd in clones]:
        os.close(fd)
    os.chdir(check["workdir"])
os.close(namespace)
require(libc.syscall(calls["keyctl"], 1, None), "keyctl(KEYCTL_JOIN_SESSION_KEYRING)")
require(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
loaded = Program(len(program) // 8, program)
require(libc.prctl(22, 2, ctypes.addressof(loaded), 0, 0), "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)")
os.execv(argv[0], argv)
"""  # noqa: E501 (a program's or page's text, kept as written)
