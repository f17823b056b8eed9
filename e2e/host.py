"""What the host shows: the mount table, loop devices and the pool's files, always scoped to the
test's temp dir (other work on this machine uses loop devices and mounts of its own)."""

import json
import os
import re
import subprocess
from pathlib import Path


def _unescape(field):
    # /proc/self/mountinfo escapes space, tab, newline and backslash as octal
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mounts(under: Path, pid="self"):
    """Mounts whose mount point is `under` or below it, in the mount namespace of process `pid`
    (this one's by default): dicts with path, fstype, source, dev and options (the mount's own,
    a list)."""
    found = []
    below = str(under).rstrip("/") + "/"
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            path = _unescape(fields[4])
            if path == str(under) or path.startswith(below):
                found.append({"path": path, "dev": fields[2], "fstype": rfields[0], "source": _unescape(rfields[1]),
                              "options": fields[5].split(",")})
    return found


def loops(backed_under: Path):
    """Loop devices whose backing file is `backed_under` or below it: {name: backing file}."""
    found = {}
    for sys_dev in Path("/sys/block").glob("loop*"):
        try:
            backing = (sys_dev / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue  # not bound
        backing = backing.removesuffix(" (deleted)")
        if backing == str(backed_under) or backing.startswith(str(backed_under) + "/"):
            found[sys_dev.name] = backing
    return found


def file_id(path: Path):
    """(major:minor of its file system, inode) of a file, as losetup shows a loop device's backing file."""
    st = os.stat(path)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", st.st_ino


def loops_backed_by(files):
    """Loop devices whose backing file is one of `files` (file_id()s): {name: backing file}. For
    loop devices attached inside a container, whose backing file's path is the container's."""
    out = subprocess.run(["losetup", "--list", "--json", "-O", "NAME,BACK-FILE,BACK-INO,BACK-MAJ:MIN"],
                         capture_output=True, text=True, check=True).stdout
    devices = json.loads(out)["loopdevices"] if out.strip() else []
    return {d["name"].removeprefix("/dev/"): d["back-file"] for d in devices
            if (d["back-maj:min"].strip(), d["back-ino"]) in files}


def loop_dev(name):
    """major:minor of a loop device, as in mountinfo."""
    return (Path("/sys/block") / name / "dev").read_text().strip()


def loop_of(image: Path):
    """The loop device bound to this pool image, or None."""
    for name, backing in loops(image.parent).items():
        if backing == str(image):
            return name
    return None


def release_everything_under(work: Path, pid=None):
    """Detaches every loop device backed by a file under work and unmounts everything mounted
    under it (deepest first), in the mount namespace of process `pid` when given (this one's
    otherwise). Returns what is still left, for the caller to report."""
    ns = ["nsenter", f"--mount=/proc/{pid}/ns/mnt", "--"] if pid else []
    for _ in range(3):
        for name in loops(work):
            # The device is named only after sysfs showed it is backed by a file of ours.
            subprocess.run(["losetup", "-d", f"/dev/{name}"], capture_output=True, check=False)
        for m in sorted(mounts(work, pid or "self"), key=lambda m: -len(m["path"])):
            if subprocess.run([*ns, "umount", m["path"]], capture_output=True, check=False).returncode != 0:
                subprocess.run([*ns, "umount", "-l", m["path"]], capture_output=True, check=False)
        if not mounts(work, pid or "self") and not loops(work):
            break
    return ([f"mount {m['path']}" for m in mounts(work, pid or "self")]
            + [f"loop {n} -> {b}" for n, b in loops(work).items()])


def pool_records(pool: Path):
    """The pool's image files and group snapshot records:
    {"volumes": [...ids], "snapshots": [...ids], "groups": [...ids]}."""
    records = {kind: sorted(p.stem for p in (pool / kind).glob("*.img")) if (pool / kind).is_dir() else []
               for kind in ("volumes", "snapshots")}
    groups = pool / "groups"
    records["groups"] = sorted(p.stem for p in groups.glob("*.json")) if groups.is_dir() else []
    return records


def fs_size(path: Path):
    st = os.statvfs(path)
    return st.f_blocks * st.f_frsize


CAP_SYS_RESOURCE = 24


def has_capability(bit):
    """Whether this process (and so the driver it starts) has the capability in its effective set."""
    with open("/proc/self/status") as f:
        eff = next(line for line in f if line.startswith("CapEff:")).split()[1]
    return bool(int(eff, 16) >> bit & 1)
